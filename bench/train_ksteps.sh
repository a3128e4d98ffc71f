#!/usr/bin/env bash
# bench/train_ksteps.sh [TPUCC]: what --steps-per-execution=K changes
# (docs/performance.md, "Training", "Steps per execution"), run by
# `bench/train.sh [TPUCC] ksteps`:
#   - cpu: samples/train/fashion_mlp.tg, batch 128, 384 steps (a multiple of
#     every K, so no remainder group) with K = 1, 8 and 32 on 1 and 2
#     threads: host wall seconds and process CPU seconds per step;
#   - v3: the same model, 16 steps, K = 1 and 8: the modelled device
#     seconds per step and the host's seconds per step (the emulator's).
# Every run must log the same losses as K = 1 (checked). Prints the host's
# CPU model, ISA and load, then markdown tables. Needs Fashion-MNIST.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
T="${1:-$root/build/tools/tpucc}"
MLP="$root/samples/train/fashion_mlp.tg"
w="$(mktemp -d)"
trap 'rm -rf "$w"' EXIT
isa=$(grep -o -w 'avx512f\|avx2\|avx\|sse4_2' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "host: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs ($isa), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# run NAME STEPS K ARGS...: trains into $w/NAME.json and $w/NAME.loss
run() {
  local name=$1 steps=$2 k=$3
  shift 3
  "$T" train "$MLP" --epochs=1 --batch=128 --steps-per-epoch=$steps --test-examples=128 --quiet \
    --steps-per-execution=$k --metrics-json="$w/$name.json" --loss-log="$w/$name.loss" "$@" \
    > "$w/$name.out" 2>&1 || { cat "$w/$name.out"; exit 1; }
  [ "$k" = 1 ] || cmp -s "$w/${name%_k*}_k1.loss" "$w/$name.loss" ||
    { echo "$name: the losses differ from K=1's" >&2; exit 1; }
}

# row NAME STEPS: "| s/step | CPU-s/step | device s/step |" from the metrics
row() {
  /usr/bin/python3 - "$w/$1.json" "$2" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["epochs"][0]
n = int(sys.argv[2])
print("%.2f ms | %.2f ms | %s" % (1e3 * e["seconds"] / n, 1e3 * e["cpu_seconds"] / n,
      "%.1f us" % (1e6 * e["device_seconds"] / n) if e["device_seconds"] else "-"))
PY
}

echo "| target | threads | K | host s per step | host CPU-s per step | modelled device s per step |"
echo "|---|---|---|---|---|---|"
for th in 1 2; do
  for k in 1 8 32; do
    run cpu${th}_k$k 384 $k --threads=$th
    echo "| cpu | $th | $k | $(row cpu${th}_k$k 384) |"
  done
done
for k in 1 8; do
  run v3_k$k 16 $k --target=v3
  echo "| v3 | - | $k | $(row v3_k$k 16) |"
done
