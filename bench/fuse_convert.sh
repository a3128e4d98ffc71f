#!/usr/bin/env bash
# bench/fuse_convert.sh [TPUCC [BASE]]: modelled v3 cycles of the converts
# to and from bf16 that the TPU backend fuses into its MXU kernels, side by
# side with the same models compiled by BASE (another tpucc, e.g. one built
# from a commit before the fusion; left out: only TPUCC's column):
# - bench/mlp_master.tg: the MLP 784-1024-1024-10 at batch 256 with f32
#   inputs and master weights cast to bf16 for each matmul (prologues);
# - bench/conv_bias_relu.hlo: a 3x3 convolution 64 -> 64 on 8x56x56 bf16
#   with bias, ReLU and the cast to bf16 (a convolution epilogue), and
#   bench/conv1x1_bias_relu.hlo the same after a 1x1 convolution 64 -> 256;
# - samples/cnn.tg: the CNN sample (two convolutions with bias and ReLU,
#   of 8 and 16 output features: the first keeps its separate pass).
# Emulated cycles are deterministic: the host does not enter them. Run by
# hand (docs/performance.md, "Mixed precision" and "Convolution epilogues").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
T="${1:-$root/build/tools/tpucc}"
B="${2:-}"
[ -x "$T" ] || { echo "bench/fuse_convert.sh: build $T first" >&2; exit 2; }
[ -z "$B" ] || [ -x "$B" ] || { echo "bench/fuse_convert.sh: no tpucc at $B" >&2; exit 2; }
cycles() {
  "$1" run "$2" --target=v3 --random-inputs --output= --stats 2>&1 |
    awk '$1 == "cycles" { print $2 }'
}
echo "# host: $(lscpu | sed -n 's/^Model name: *//p'); the figures are emulated v3 cycles"
echo "| model | fused (this tree) | base |"
echo "|---|---|---|"
for m in bench/mlp_master.tg bench/mlp_bf16.tg bench/conv_bias_relu.hlo bench/conv1x1_bias_relu.hlo \
  samples/cnn.tg; do
  after=$(cycles "$T" "$root/$m")
  before=-
  [ -z "$B" ] || before=$(cycles "$B" "$root/$m")
  echo "| $m | $after | $before |"
done
