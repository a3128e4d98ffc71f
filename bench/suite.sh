#!/usr/bin/env bash
# bench/suite.sh [BUILD_DIR [OUT.json]]: builds tpucc (release) and runs the
# whole benchmark suite (bench/suite.py): emulator speed against OpenBLAS,
# modelled TPU v2/v3 utilisation beside published figures, the CPU backend
# against OpenBLAS / a triad / numpy (PyTorch when installed), and compile
# time of generated graphs and of ResNet-50 as one graph (TPUCC_BENCH_ONLY=
# compile runs only that group). Prints a markdown table, writes OUT.json (default
# BUILD_DIR/bench-results.json) and OUT.md. About 2 minutes on 2 cores from a
# fresh build tree (docs/performance.md).
#   bash bench/suite.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-bench}"
out="${2:-$build/bench-results.json}"
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$root" --buildtype=release >/dev/null
fi
targets="tools/tpucc"
for t in emu_matmul cpu_matmul cpu_elementwise cpu_mlp cpu_conv; do
  if ninja -C "$build" -t targets all 2>/dev/null | grep -q "^bench/$t:"; then
    targets="$targets bench/$t"
  fi
done
echo "building: $targets"
# shellcheck disable=SC2086
ninja -C "$build" -j"$(nproc)" $targets >/dev/null
py=python3
command -v python3 >/dev/null 2>&1 || { echo "suite.sh: python3 is needed" >&2; exit 1; }
exec "$py" "$root/bench/suite.py" "$build" "$out"
