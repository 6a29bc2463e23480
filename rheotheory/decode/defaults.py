"""Defaults of the real-model commands that ``rheo --help`` shows, importable without torch.

The modules that use them (:mod:`rheotheory.decode.evaluation.bench`) re-export them; only the command
line reads them from here, so that building its help loads no model code.
"""

__all__ = ["MIN_BENCH_STEPS", "DEFAULT_BENCH_METHODS"]

#: Fewest speculative steps a row should have by default: enough that the 95% interval of tokens
#: per step (about +-0.1 at s = 0.8 over 250 steps) separates methods that differ by a few tenths.
MIN_BENCH_STEPS = 200

#: Methods `rheo bench` compares by default (preset names; the first is the speed-up baseline).
DEFAULT_BENCH_METHODS = ("autoregressive", "chain", "static-iid", "eagle", "rheo-tuned")
