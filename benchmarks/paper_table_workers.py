"""The paper grid's speed-up with worker processes: the same small SmolLM2 grid decoded with
``--workers 1`` and with ``--workers W``, wall-clock seconds of each and their ratio.

    python3 benchmarks/paper_table_workers.py                 # W = 2, prints the table
    python3 benchmarks/paper_table_workers.py --out benchmarks/results/paper_table_workers.json

Each run starts from an empty folder (the models load once per worker, inside the timed run, as a
real run pays it) and must give the same rows, CPU seconds aside (checked). Run it on a quiet
machine: the JSON records the load seen.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: The grid: two sets, two prompts each, T = 1, the paper's methods and size (24 decodes, 20 made).
GRID = ["--sets", "sharegpt,humaneval", "--prompts", "2", "--temperatures", "1"]


def rows(path: Path) -> list:
    with open(path, newline="") as f:
        return sorted(tuple((k, v) for k, v in r.items() if k != "cpu_seconds") for r in csv.DictReader(f))


def timed(workers: int, out: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "simulations" / "smollm2_paper_table.py"), *GRID, "--workers",
                    str(workers), "--out", str(out)], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def render_md(path: Path) -> str:
    """The guide's line of a results file of this script (docs/guide/smollm2.md)."""
    d = json.loads(Path(path).read_text())
    w = d["workers"]
    load = d["load"]
    return (f"`python benchmarks/paper_table_workers.py --workers {w}` ({d['decodes']} decodes, "
            f"`{' '.join(d['grid'])}`): `--workers 1` {d['seconds_1']:.0f} s, `--workers {w}` "
            f"{d[f'seconds_{w}']:.0f} s of wall clock, a speed-up of **{d['speed_up']:.2f}x**; the same rows "
            f"either way: {'yes' if d['same_rows'] else '**no**'}; load {load['mean_other_runnable']:.2f} other "
            f"runnable threads on average{' (loaded)' if load['loaded'] else ''}.\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2, help="workers of the second run (default 2)")
    ap.add_argument("--out", default=None, help="write the result as JSON here")
    args = ap.parse_args(argv)
    from rheotheory.loadcheck import LoadMonitor

    with tempfile.TemporaryDirectory() as tmp, LoadMonitor() as load:
        one = timed(1, Path(tmp) / "one")
        many = timed(args.workers, Path(tmp) / "many")
        same = rows(Path(tmp) / "one" / "runs.csv") == rows(Path(tmp) / "many" / "runs.csv")
        decodes = len(rows(Path(tmp) / "one" / "runs.csv"))
    result = {"grid": GRID, "decodes": decodes, "workers": args.workers, "seconds_1": round(one, 1),
              f"seconds_{args.workers}": round(many, 1), "speed_up": round(one / many, 2), "same_rows": same,
              "load": load.report().to_dict()}
    print(f"{decodes} decodes: --workers 1 {one:.1f} s, --workers {args.workers} {many:.1f} s, speed-up "
          f"{one / many:.2f}x, same rows: {same}; {load.report().describe()}")
    if args.out:
        from rheotheory.provenance import write_provenance

        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
        write_provenance(out, seed=0, note=load.report().describe())
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
