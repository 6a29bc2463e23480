"""What strict certification costs an honest builder: seconds of ``certify`` plain and strict, for
every registered family and preset, on the built-in example pair at the toy tree size.

    python3 benchmarks/strict_cost.py                       # prints the table
    python3 benchmarks/strict_cost.py --out benchmarks/results/strict_cost.json

Strict mode (docs/theory.md section 5.3) builds every construction branch three times (the
enumeration, a rebuild in reverse order under other global random states, a rebuild after
unrelated builds), checks every sampled token against the draws, and verifies every branch on
its own besides the classes. Each figure is the median of ``--repeats`` runs of one process on
one thread; run it on a quiet machine (the JSON records the load seen during the run).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def specs() -> list[str]:
    """Every registered family and preset, by name."""
    from rheotheory.methods import FAMILIES, PRESETS

    return list(FAMILIES) + [p for p in PRESETS if p not in FAMILIES]


def time_one(spec: str, size, strict: bool, repeats: int) -> tuple[float, object]:
    from rheotheory.exact import certify
    from rheotheory.methods import resolve
    from rheotheory.pairs import example_pair

    m = resolve(spec, size=size)
    secs, cert = [], None
    for _ in range(repeats):
        pair = example_pair()
        t0 = time.perf_counter()
        cert = certify(pair, m, strict=strict)
        secs.append(time.perf_counter() - t0)
    return statistics.median(secs), cert


def render_md(path: Path) -> str:
    """The guide's table of a results file of this script (docs/guide/own-method.md)."""
    d = json.loads(Path(path).read_text())
    rows = [f"| `{r['spec']}` | {r['branches']:,} | {r['classes']:,} | {r['plain_s']:.3f} | {r['strict_s']:.3f} "
            f"| {r['ratio']:.1f}x |" for r in d["rows"]]
    plain, strict = sum(r["plain_s"] for r in d["rows"]), sum(r["strict_s"] for r in d["rows"])
    rows.append(f"| all | | | {plain:.2f} | {strict:.2f} | {strict / plain:.1f}x |")
    load = d["load"]
    return (f"`python benchmarks/strict_cost.py --size {d['size']} --repeats {d['repeats']}`: `rheo certify` of the "
            f"built-in example pair, median of {d['repeats']} runs per cell, one thread; load "
            f"{load['mean_other_runnable']:.2f} other runnable threads on average"
            f"{' (loaded)' if load['loaded'] else ''}.\n\n"
            "| method | branches | classes | plain s | strict s | strict / plain |\n"
            "| --- | ---: | ---: | ---: | ---: | ---: |\n" + "\n".join(rows) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="toy", help="tree size: a TREE_SIZES row or K,D,N (default toy)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per cell, the median is kept (default 3)")
    ap.add_argument("--only", default=None, help="comma-separated specs (default: every family and preset)")
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    args = ap.parse_args(argv)
    size = tuple(int(x) for x in args.size.split(",")) if "," in args.size else args.size
    from rheotheory.loadcheck import LoadMonitor

    rows = []
    with LoadMonitor() as load:
        for spec in (args.only.split(",") if args.only else specs()):
            plain, cert = time_one(spec, size, False, args.repeats)
            strict, scert = time_one(spec, size, True, args.repeats)
            assert scert.z_law == cert.z_law  # NOTE: strict mode checks, it never changes a certificate
            rows.append({"spec": spec, "method": cert.method.describe(), "classes": cert.classes,
                         "branches": cert.branches, "plain_s": round(plain, 4), "strict_s": round(strict, 4),
                         "ratio": round(strict / plain, 2) if plain > 0 else None,
                         "lossless": bool(cert.lossless)})
            r = rows[-1]
            print(f"{spec:16s} {r['branches']:7d} branches {r['classes']:6d} classes  plain {plain:8.3f} s  "
                  f"strict {strict:8.3f} s  x{r['ratio']}", flush=True)
    total_p = sum(r["plain_s"] for r in rows)
    total_s = sum(r["strict_s"] for r in rows)
    print(f"{'all':16s} plain {total_p:.2f} s, strict {total_s:.2f} s (x{total_s / total_p:.2f}); "
          f"load: {load.report().describe()}")
    if args.out:
        from rheotheory.provenance import write_provenance

        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"size": args.size, "repeats": args.repeats, "rows": rows,
                                   "load": load.report().to_dict()}, indent=1) + "\n")
        write_provenance(out, seed=0, note=f"median of {args.repeats} runs per cell; {load.report().describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
