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
# TPUCC_BENCH_BASELINE_REV=REV: a release tpucc of that commit (git archive
# into BUILD_DIR-base-REV, built once) runs beside this one in the compile
# group, as its anchor (TPUCC_BENCH_BASELINE=PATH names a built one instead).
if [ -n "${TPUCC_BENCH_BASELINE_REV:-}" ] && [ -z "${TPUCC_BENCH_BASELINE:-}" ]; then
  rev="$(git -C "$root" rev-parse --short "$TPUCC_BENCH_BASELINE_REV")"
  base="$(cd "$(dirname "$build")" && pwd)/$(basename "$build")-base-$rev"
  if [ ! -x "$base/build/tools/tpucc" ]; then
    rm -rf "$base" && mkdir -p "$base/src"
    git -C "$root" archive "$rev" | tar -x -C "$base/src"
    meson setup "$base/build" "$base/src" --buildtype=release >/dev/null
    echo "building baseline $rev: $base/build/tools/tpucc"
    ninja -C "$base/build" -j"$(nproc)" tools/tpucc >/dev/null
  fi
  export TPUCC_BENCH_BASELINE="$base/build/tools/tpucc"
fi
py=python3
command -v python3 >/dev/null 2>&1 || { echo "suite.sh: python3 is needed" >&2; exit 1; }
exec "$py" "$root/bench/suite.py" "$build" "$out"
