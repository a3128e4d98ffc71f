#!/usr/bin/env bash
# bench/train.sh [TPUCC] [mlp|cnn]: one epoch of samples/train/fashion_mlp.tg
# (or fashion_cnn.tg) on the cpu target against PyTorch's same model, batch
# and optimizer (bench/train_torch.py), on 1 and on 2 threads, side by side
# in one run (docs/performance.md, "Training"). Prints a markdown table: images/s of
# wall time, and of process CPU time (every thread: the figure a loaded
# machine disturbs least). Needs Fashion-MNIST and /usr/bin/python3 with
# torch (Debian's python3-torch). `bench/train.sh [TPUCC] ksteps` runs
# bench/train_ksteps.sh instead: --steps-per-execution=K against K = 1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
T="${1:-$root/build/tools/tpucc}"
M="${2:-mlp}"
case "$M" in mlp|cnn) ;; ksteps) exec "$root/bench/train_ksteps.sh" "$T" ;;
  *) echo "usage: bench/train.sh [TPUCC] [mlp|cnn|ksteps]" >&2; exit 2 ;; esac
w="$(mktemp -d)"
trap 'rm -rf "$w"' EXIT
n=$((60000 / 128 * 128))
echo "| threads | tpucc images/s | PyTorch images/s | tpucc images/CPU-s | PyTorch images/CPU-s | tpucc test acc. | PyTorch test acc. |"
echo "|---|---|---|---|---|---|---|"
for th in 1 2; do
  "$T" train "$root/samples/train/fashion_$M.tg" --epochs=1 --batch=128 --threads=$th --quiet \
    --metrics-json="$w/m$th.json" > "$w/o$th" 2>&1 || { cat "$w/o$th"; exit 1; }
  /usr/bin/python3 "$root/bench/train_torch.py" $th 1 "$M" > "$w/t$th.json"
  /usr/bin/python3 - "$w/m$th.json" "$w/t$th.json" $th $n <<'PY'
import json, sys
m, t, th, n = json.load(open(sys.argv[1])), json.loads(open(sys.argv[2]).read()), sys.argv[3], int(sys.argv[4])
e = m["epochs"][0]
print("| %s | %.0f | %.0f | %.0f | %.0f | %.4f | %.4f |" % (
    th, m["images_per_second"], t["images_per_second"], n / e["cpu_seconds"], n / t["cpu_seconds"],
    m["test_accuracy"], t["test_accuracy"]))
PY
done
