"""Named presets: one meaning per name in every command (docs/theory.md section 2).

A preset fixes a family and its fields except, usually, the tree size (K, D, N), which each
command takes from its row of :data:`~rheotheory.methods.registry.TREE_SIZES`; explicit flags
override single fields. ``rheo methods`` lists them.
"""

from __future__ import annotations

from .registry import preset

__all__ = ["DEFAULT_PRESET"]

#: The preset a command uses when none is given.
DEFAULT_PRESET = "rheo"

preset("autoregressive", "autoregressive", "plain sampling from the target, one token per step (the baseline)")
preset("eagle", "eagle", "EAGLE-2/3 dynamic tree: K deterministic children per expansion, one-hot verification",
       verifier="onehot")
preset("rheo", "rheo",
       "RheoSampling as the paper reports it: m = 1 deterministic head slot, one sampled slot scored by the "
       "next-ranked token's draft probability (`next`: it competes with the token a rank-(m+1) slot would "
       "hold), OT verification; certified lossless with every verifier",
       head=1, proxy="next", verifier="ot")
preset("rheo-tuned", "rheo",
       "RheoSampling as the sweeps and the built-in pair measured it best: m = 1, the sampled slot scored by "
       "the draft's tail mass (`tail`; V = 32k sweep at T >= 1: 4.40 vs 3.97 tokens per step for `next`, "
       "K,D,N = 4,4,16, low mismatch), OT verification (tail is lossy with sequential), and the EAGLE tree at "
       "T = 0, where a greedy target accepts only its arg-max",
       head=1, proxy="tail", verifier="ot", greedy="eagle")
preset("static-iid", "static", "static sampled tree of N nodes (greedy shape), i.i.d. children, RRS verification",
       sampling="iid", verifier="rrs")
preset("static-wor", "static",
       "static sampled tree of N nodes (greedy shape), children without replacement, RRS-without-replacement "
       "verification", sampling="wor", verifier="rrs-wor")
preset("chain", "chain", "standard speculative sampling: one sampled chain of D tokens, sequential verification",
       verifier="sequential")
preset("rheo-adaptive", "adaptive",
       "adaptive RheoSampling, one tree per temperature band at the same node budget (docs/theory.md section "
       "2.7): the EAGLE tree for T < 0.5; rheo-tuned's tree (head 1, tail proxy, OT) for 0.5 <= T < 1; from T = 1 "
       "on, every slot sampled without replacement (head 0, tail proxy) and Traversal Verification",
       head="predicted", proxy="tail", greedy="eagle", eagle_below="0.5", below="rheo", sampled_from="1",
       verifier="ot-wor")
preset("rheo-sampled", "adaptive",
       "every slot sampled without replacement from the draft (head 0, tail proxy) and Traversal Verification, "
       "at every temperature: the tree rheo-adaptive runs from T = 1 on (docs/theory.md section 2.7)",
       head=0, proxy="tail", greedy="same", eagle_below="off", below="same", sampled_from="off",
       verifier="traversal")
preset("rheo-online", "online",
       "online RheoSampling (docs/theory.md section 2.8): each step runs one of eagle, rheo-tuned, static-wor and "
       "rheo-sampled at the same node budget, chosen by Thompson sampling from the tokens earlier steps accepted; "
       "the first step runs rheo-adaptive's choice",
       arms="eagle,rheo-tuned,static-wor,rheo-sampled", rule="thompson")
