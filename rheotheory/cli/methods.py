"""``rheo methods``: the registered tree families, the named presets and the default tree sizes."""

from __future__ import annotations

from .args import set_exit_statuses, EXIT_DONE

import json

__all__ = ["register", "run"]


def register(sub) -> None:
    m = sub.add_parser("methods", help="list the method families, the presets and the default tree sizes",
                       description="Every preset is a full method spec shared by every command (--preset NAME); "
                       "explicit flags override single fields. Tree sizes a preset leaves open come from the "
                       "command family's row of the size table.")
    set_exit_statuses(m, EXIT_DONE)
    m.add_argument("--json", action="store_true", help="print one JSON object")
    m.set_defaults(func=run)


def run(args) -> int:
    from ..methods import FAMILIES, TREE_SIZES, field_options, presets_table

    families = [{"name": name, "summary": cls.summary, "verifiers": list(cls.admitted_verifiers()),
                 "fields": {k: meta.get("help", "") for k, meta in field_options(cls).items()}}
                for name, cls in FAMILIES.items()]
    presets = presets_table()
    if args.json:
        print(json.dumps({"presets": presets, "families": families,
                          "tree_sizes": {k: dict(zip(("top_k", "depth", "budget"), v)) for k, v in TREE_SIZES.items()}}))
        return 0
    print("presets (every command: --preset NAME; flags override single fields)")
    for p in presets:
        fields = " ".join(f"{k}={v}" for k, v in p["fields"].items())
        print(f"  {p['name']:<15} {p['family']:<15} {fields}")
        print(f"  {'':<15} {p['summary']}")
    print("\nfamilies")
    for f in families:
        print(f"  {f['name']:<15} {f['summary']}")
        print(f"  {'':<15} fields: {', '.join(f['fields'])}; verifiers: {', '.join(f['verifiers'])}")
    print("\ndefault tree size (K, D, N) per command family")
    rows = {"toy": "certify, counterexample, mc", "sweep": "sweep", "builtin": "decode, bench (built-in pair)",
            "smollm2": "decode, bench --model smollm2 (chosen by --budget auto on a 2-core CPU)",
            "model": "decode, bench (other models)"}
    for k, (K, D, N) in TREE_SIZES.items():
        print(f"  {k:<8} K={K} D={D} N={N}   {rows.get(k, '')}")
    return 0
