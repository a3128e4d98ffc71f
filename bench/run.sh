#!/usr/bin/env bash
# bench/run.sh [BUILD_DIR [SIZE [RUNS [IMPL]]]]: the emulator-speed benchmark
# exactly as docs/performance.md reports it. OpenBLAS picks its kernel at
# load time from OPENBLAS_CORETYPE, so that is unset here (some machines pin
# it to Haswell), and one thread is used for a single-thread comparison.
#   bash bench/run.sh build            # 2048^3, median of 5 runs
set -euo pipefail
build="${1:-build}"
shift || true
bin="$build/bench/emu_matmul"
if [ ! -x "$bin" ]; then
  echo "run.sh: $bin not built (needs OpenBLAS; ninja -C $build bench/emu_matmul)" >&2
  exit 1
fi
unset OPENBLAS_CORETYPE
export OPENBLAS_NUM_THREADS=1
isa=$(grep -m1 -o -w -E 'avx512f|avx2' /proc/cpuinfo | sort -r | head -1)
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1) (${isa:-no avx2}), $(nproc) cpus"
exec "$bin" "${@:-2048}"
