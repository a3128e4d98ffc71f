#!/usr/bin/env bash
# bench/run.sh [BUILD_DIR [SIZE [RUNS [MODE]]]]: the emulator-speed benchmark
# exactly as docs/performance.md reports it, on one thread
# (OPENBLAS_NUM_THREADS=1). MODE:
#   (none), auto     the emulator's own kernel choice against OpenBLAS's own
#                    (OPENBLAS_CORETYPE unset: some machines pin it to Haswell)
#   avx2-haswell     the AVX2 comparison: the emulator's avx2 kernel against
#                    OpenBLAS's AVX2 kernels (OPENBLAS_CORETYPE=Haswell), as an
#                    AVX2-only host would run both
#   avx512-cooperlake
#                    the AVX-512 comparison: the emulator's avx512 kernel
#                    against OpenBLAS's AVX-512 kernels (OPENBLAS_CORETYPE=
#                    Cooperlake), for hosts whose OpenBLAS does not detect its
#                    CPU (0.3.21 falls back to SSE3 Prescott on Sapphire Rapids
#                    guests: the openblas core line says which one ran)
#   portable, avx2, avx512
#                    that emulator kernel against OpenBLAS's own choice
#   bash bench/run.sh build 2048 9 avx2-haswell
# The first lines record the host: CPU model, family/model, vector ISA flags,
# CPU count and load average, so figures from different hosts and days can be
# told apart.
set -euo pipefail
build="${1:-build}"
size="${2:-2048}"
runs="${3:-5}"
mode="${4:-auto}"
bin="$build/bench/emu_matmul"
if [ ! -x "$bin" ]; then
  echo "run.sh: $bin not built (needs OpenBLAS; ninja -C $build bench/emu_matmul)" >&2
  exit 1
fi
export OPENBLAS_NUM_THREADS=1
case "$mode" in
  avx2-haswell) export OPENBLAS_CORETYPE=Haswell; kernel=avx2 ;;
  avx512-cooperlake) export OPENBLAS_CORETYPE=Cooperlake; kernel=avx512 ;;
  auto|portable|avx2|avx512) unset OPENBLAS_CORETYPE; kernel="$mode" ;;
  *) echo "run.sh: unknown mode '$mode' (auto, avx2-haswell, avx512-cooperlake, portable, avx2, avx512)" >&2; exit 2 ;;
esac
cpu_field() { sed -n "s/^$1[[:space:]]*: *//p" /proc/cpuinfo | head -1; }
isa=$(cpu_field flags | tr ' ' '\n' | grep -E '^(sse4_2|avx|avx2|fma|f16c|avx512.*|avx_vnni|amx.*)$' |
  tr '\n' ' ')
echo "host: $(cpu_field 'model name') (family $(cpu_field 'cpu family') model $(cpu_field model)), $(nproc) cpus"
echo "isa: ${isa% }"
echo "mode: $mode (load average $(cut -d' ' -f1-3 /proc/loadavg))"
exec "$bin" "$size" "$runs" "$kernel"
