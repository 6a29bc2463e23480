"""``rheo optimum``: the tree-level optimum of one method's trees on a toy LM pair (docs/theory.md
section 7.2), beside the exact tokens per step of each verifier the family admits."""

from __future__ import annotations

import json

from .args import (EXIT_DONE, add_list, add_method_arguments, add_progress, add_toy_instance_arguments,
                   method_from_args, positive_int, print_toy_header, progress_bar, set_exit_statuses,
                   toy_pair_from_args)
from .certify import DEFAULT_MAX_BRANCHES, size_enumeration

__all__ = ["register", "run"]



#: Longest exact tau printed as it is on the console (the full fraction is in --json).
MAX_SHOWN_CHARS = 60


def register(sub) -> None:
    from ..lp_optimum import MAX_LP_CONSTRAINTS, MAX_LP_VARIABLES

    c = sub.add_parser("optimum", help="tree-level optimum: the best tokens per step any lossless verifier "
                       "reaches on a method's trees",
                       description="Solve the linear programme of docs/theory.md section 7.2 over couplings of the "
                       "method's concrete trees with the step output (HiGHS), re-check it in exact rationals, and "
                       "certify each verifier's exact tokens per step beside it. The optimum is an upper bound on "
                       "every lossless verifier, attained or not. On trees of a fixed shape (static, chain, "
                       "multichain) it also prints the best per-node verifier's bound (docs/theory.md section 7.4): "
                       "what no verifier deciding node by node can pass, even knowing the whole pair.")

    set_exit_statuses(c, EXIT_DONE)
    add_toy_instance_arguments(c)
    add_method_arguments(c, size="toy")
    add_list(c, "--verifiers", None, "NAME,...", "verifiers to certify beside the optimum (default: every verifier "
             "the method's family admits that applies to its trees)", default=None)
    add_progress(c)
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.add_argument("--max-branches", type=positive_int, default=DEFAULT_MAX_BRANCHES, metavar="B",
                   help=f"stop with an error after B construction branches (default {DEFAULT_MAX_BRANCHES})")
    c.add_argument("--max-variables", type=positive_int, default=MAX_LP_VARIABLES, metavar="N",
                   help=f"refuse an LP of more than N variables (default {MAX_LP_VARIABLES})")
    c.add_argument("--max-constraints", type=positive_int, default=MAX_LP_CONSTRAINTS, metavar="M",
                   help=f"refuse an LP of more than M equality constraints (default {MAX_LP_CONSTRAINTS})")
    c.set_defaults(func=run)


def run(args) -> int:
    from ..verify import tree_verifier

    method = method_from_args(args, size="toy")
    exact = not args.use_float
    names = args.verifiers
    if names is not None:
        for name in names:
            tree_verifier(name)  # NOTE: an unknown name is one line and exit 2 before any work
    pair = toy_pair_from_args(args, method, exact)
    size_enumeration(args, pair, method, "the enumeration of the method's trees")
    todo = list(names or method.admitted_verifiers())
    with progress_bar(args, 1 + len(todo), "optimum", "step") as bar:
        return _solve(args, pair, method, names, todo, bar)


def _solve(args, pair, method, names, todo, bar) -> int:
    from ..errors import VerifierError
    from ..exact import certify
    from ..laws import format_number
    from ..lp_optimum import tree_optimum

    exact = not args.use_float
    opt = tree_optimum(pair, method, max_branches=args.max_branches, max_variables=args.max_variables,
                       max_constraints=args.max_constraints)
    bar.update(1)
    rows, skipped = {}, {}
    for name in todo:
        bar.update(1)
        try:
            m = method.fit(verifier=name)
        except VerifierError as e:
            if names is not None:  # NOTE: asked for explicitly: an error; by default: listed as not applicable
                raise
            skipped[name] = str(e)
            continue
        cert = certify(pair, m, max_branches=args.max_branches)
        ratio = cert.tokens_per_step / opt.value
        rows[name] = {
            "tokens_per_step": format_number(cert.tokens_per_step),
            "tokens_per_step_float": float(cert.tokens_per_step),
            "lossless": bool(cert.lossless),
            "fraction_of_optimum": format_number(ratio) if opt.exact else float(ratio),
            "fraction_of_optimum_float": float(ratio),
        }
    node = _per_node(pair, method, opt)
    if args.json:
        d = opt.to_dict()
        d["verifiers"] = rows
        d["per_node_bound"] = node
        d["not_applicable"] = skipped
        d["instance"] = args.instance
        d["preset"] = args.preset
        print(json.dumps(d))
        return 0
    fmt = format_number
    print_toy_header(args, pair, method)
    print(f"LP              : {opt.variables} variables, {opt.constraints} constraints, {opt.trees} concrete trees "
          f"from {opt.classes} classes")
    opt_text = fmt(opt.value) + (f"  (~{float(opt.value):.6f})" if opt.exact else "")
    print(f"optimum         : {opt_text}  upper bound on every lossless verifier, "
          f"{'exact' if opt.exact else 'float'}")
    print(f"re-check        : {opt.recheck}")
    for name, r in rows.items():
        note = "" if r["lossless"] else "  LOSSY: not bounded by the optimum"
        tau = r["tokens_per_step"]
        if len(tau) > MAX_SHOWN_CHARS:  # NOTE: a lossy verifier's exact tau can run to hundreds of digits
            tau = f"<{len(tau)}-character fraction: --json>"
        print(f"  {name:<12}  tau {tau}  (~{r['tokens_per_step_float']:.6f}, "
              f"{100 * r['fraction_of_optimum_float']:.2f}% of the optimum){note}")
    for name, why in skipped.items():
        print(f"  {name:<12}  not applicable: {why}")
    if "upper" in node:
        print(f"per-node best   : <= {node['upper_float']:.6f}  ({100 * node['fraction_of_optimum_float']:.2f}% of the "
              "optimum): no verifier deciding node by node passes it (docs/theory.md section 7.4)")
    elif node.get("not_computed"):
        print(f"per-node best   : not computed: {node['not_computed']}")
    print(f"time            : {opt.seconds:.3f} s (optimum)")
    return 0


def _per_node(pair, method, opt) -> dict:
    """The best per-node verifier's bound (docs/theory.md section 7.4) on fixed-shape trees."""
    from ..errors import TreeError
    from ..laws import format_number
    from ..node_bound import NODE_BOUND_FAMILIES, per_node_bound

    if method.family not in NODE_BOUND_FAMILIES:
        return {}
    try:
        b = per_node_bound(pair, method)
    except TreeError as e:  # NOTE: too large a node: the optimum is still reported, the bound is not
        return {"not_computed": str(e)}
    return {"upper": format_number(b.upper), "upper_float": float(b.upper), "value_float": b.value,
            "fraction_of_optimum_float": float(b.upper / opt.value) if opt.exact else float(b.upper) / float(opt.value)}
