#!/usr/bin/env bash
# bench/train_board.sh [TPUCC] [STEPS]: the training step of the MLP and CNN
# samples on one v3 core with the global batch of 256 and on a v3-8 board
# as 8 data-parallel replicas of 32 (docs/performance.md, "Data-parallel
# training on a board"); for reference, one core with one replica's batch
# of 32 (the compute each board core does besides the all-reduce). Prints
# a markdown table: the modelled time per step (the slowest core's
# cycles), the MXU utilisation (multiply-adds over what every core's MXUs
# could do in its cycles), the board's speed-up and weak-scaling efficiency
# (one core at 32 over the board at 32 per core), and the host's wall and
# CPU seconds per step (the emulator). Needs Fashion-MNIST and
# /usr/bin/python3.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
T="${1:-$root/build/tools/tpucc}"
STEPS="${2:-3}"
w="$(mktemp -d)"
trap 'rm -rf "$w"' EXIT
echo "| model | run | batch per core | modelled ms/step | MXU util. | speed-up over 1 core | weak-scaling eff. | host s/step (wall) | host CPU s/step |"
echo "|---|---|---|---|---|---|---|---|---|"
for m in mlp cnn; do
  for cfg in "v3 1 256" "v3 1 32" "v3-8 8 256"; do
    set -- $cfg
    "$T" train "$root/samples/train/fashion_$m.tg" --target=$1 --replicas=$2 --batch=$3 --epochs=1 \
      --steps-per-epoch="$STEPS" --test-examples=256 --quiet --metrics-json="$w/$m-$1-$3.json" \
      > "$w/out" 2>&1 || { cat "$w/out"; exit 1; }
  done
  /usr/bin/python3 - "$w" "$m" "$STEPS" <<'PY'
import json, sys
w, m, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(name):
    return json.load(open("%s/%s-%s.json" % (w, m, name)))["epochs"][0]
one, small, board = load("v3-256"), load("v3-32"), load("v3-8-256")
rows = [("1 core (v3)", 256, one), ("1 core (v3), one replica's batch", 32, small),
        ("8 cores (v3-8)", 32, board)]
for run, per_core, e in rows:
    t = e["device_seconds"] / steps
    speed = "%.2f" % (one["device_seconds"] / e["device_seconds"]) if e is board else ""
    weak = "%.2f" % (small["device_seconds"] / e["device_seconds"]) if e is board else ""
    print("| %s | %s | %d | %.3f | %.1f%% | %s | %s | %.2f | %.2f |" % (
        m, run, per_core, t * 1e3, 100 * e["mxu_utilization"], speed, weak, e["seconds"] / steps,
        e["cpu_seconds"] / steps))
PY
done
