#!/usr/bin/env bash
# bench/cpu.sh [BUILD_DIR [RUNS]]: the CPU-backend benchmarks exactly as
# docs/performance.md ("CPU backend") reports them, each against its anchor
# in the same process. OpenBLAS picks its kernel at load time from
# OPENBLAS_CORETYPE, so that is unset here (some machines pin it to Haswell,
# halving OpenBLAS); OpenBLAS threads are set by the benchmark itself.
#   bash bench/cpu.sh build-g 7
set -euo pipefail
build="${1:-build}"
runs="${2:-7}"
unset OPENBLAS_CORETYPE
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
for t in 1 2; do
  for n in 1024 2048; do
    "$build/bench/cpu_matmul" "$n" "$runs" "$t"
  done
  "$build/bench/cpu_elementwise" 16 "$runs" "$t"
  if [ -x "$build/bench/cpu_mlp" ]; then "$build/bench/cpu_mlp" "$runs" "$t"; fi
  if [ -x "$build/bench/cpu_conv" ]; then "$build/bench/cpu_conv" "$runs" "$t"; fi
done
