#!/usr/bin/env bash
# GPU check for the decoder: runs the tests that need CUDA, then `rheo bench --device cuda`, and
# prints a short table last. Self-contained: needs a CUDA GPU, Python with PyTorch and this
# project's dependencies (numpy, scipy, pytest, hypothesis, safetensors); no network, no
# downloads (the built-in model pair ships in rheotheory/data). Finishes within 10 minutes.
#
# Usage (from anywhere):  bash benchmarks/gpu_check.sh
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
OUT=${OUT:-$(mktemp -d)}
TEST_TIMEOUT=300   # seconds for the CUDA tests
BENCH_TIMEOUT=240  # seconds for the benchmark

echo "== environment"
$PY - <<'PY' || { echo "gpu_check: PyTorch with CUDA is required"; exit 2; }
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda)
if not torch.cuda.is_available():
    raise SystemExit("no CUDA device visible")
print("device", torch.cuda.get_device_name(0))
PY

echo "== CUDA tests (tests/test_decode_cuda.py)"
timeout "$TEST_TIMEOUT" $PY -m pytest -q -rs -p no:cacheprovider tests/test_decode_cuda.py tests/test_decode_models.py \
    tests/test_decode_rules.py 2>&1 | tail -n 15
TEST_RC=${PIPESTATUS[0]}

echo "== benchmark (rheo bench --device cuda)"
timeout "$BENCH_TIMEOUT" $PY -m rheotheory.cli bench --device cuda --temperatures 0,1 --max-new-tokens 100 \
    --json > "$OUT/bench.json" 2> "$OUT/bench.err"
BENCH_RC=$?
[ "$BENCH_RC" -ne 0 ] && tail -n 5 "$OUT/bench.err"

echo
echo "== summary"
echo "cuda tests exit code: $TEST_RC (0 = passed)"
echo "bench exit code     : $BENCH_RC"
if [ -s "$OUT/bench.json" ]; then
    $PY - "$OUT/bench.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
print(f"{'method':<15} {'T':>4} {'tok/step':>9} {'95% CI':>15} {'steps':>6} {'tok/s':>8} {'speed-up':>9}")
for r in rows:
    lo, hi = (float("nan") if v is None else v for v in r["tokens_per_step_ci95"])
    print(f"{r['name']:<15} {r['temperature']:>4g} {r['tokens_per_step']:>9.3f} {f'[{lo:.3f}, {hi:.3f}]':>15} "
          f"{r['steps']:>6d} {r['tokens_per_second']:>8.1f} {r['speedup']:>8.2f}x")
PY
fi
[ "$TEST_RC" -eq 0 ] && [ "$BENCH_RC" -eq 0 ]
