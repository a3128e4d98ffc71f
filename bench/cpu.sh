#!/usr/bin/env bash
# bench/cpu.sh [BUILD_DIR [RUNS [torch]]]: the CPU-backend benchmarks exactly
# as docs/performance.md ("CPU backend") reports them, each against its
# anchor in the same process. OpenBLAS picks its kernel at load time from
# OPENBLAS_CORETYPE, so that is unset here (some machines pin it to Haswell,
# halving OpenBLAS); OpenBLAS threads are set by the benchmark itself.
# After cpu_mlp and cpu_conv, bench/cpu_torch.py measures the same MLP and
# convolution in PyTorch (Debian python3-torch, /usr/bin/python3) on the
# same thread count and prints torch/tpucc ratios (OMP_NUM_THREADS and
# OPENBLAS_NUM_THREADS set too: torch.set_num_threads does not bound the
# threads of Debian's OpenBLAS, which torch's Linear calls). A third argument `torch`
# runs only those three.
#   bash bench/cpu.sh build-g 7
#   bash bench/cpu.sh build-g 7 torch
set -euo pipefail
build="${1:-build}"
runs="${2:-7}"
only="${3:-}"
here="$(cd "$(dirname "$0")" && pwd)"
unset OPENBLAS_CORETYPE
isa=$(grep -m1 -o -w -E 'avx512f|avx2' /proc/cpuinfo | sort -r | head -1)
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1) (${isa:-no avx2}), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
trap 'echo "load at the end: $(cut -d" " -f1-3 /proc/loadavg)"' EXIT
# The "tpucc cpu X ms [CPU time Y ms]" figures of a cpu_mlp / cpu_conv line.
ms() { sed -n 's/.*tpucc cpu \([0-9.]*\) ms.*/\1/p' <<<"$1"; }
cms() { sed -n 's/.*tpucc cpu [0-9.]* ms \[CPU time \([0-9.]*\) ms\].*/\1/p' <<<"$1"; }
for t in 1 2; do
  if [ "$only" != torch ]; then
    for n in 1024 2048; do
      "$build/bench/cpu_matmul" "$n" "$runs" "$t"
    done
    "$build/bench/cpu_elementwise" 16 "$runs" "$t"
  fi
  mlp="" conv=""
  if [ -x "$build/bench/cpu_mlp" ]; then mlp="$("$build/bench/cpu_mlp" "$runs" "$t")"; echo "$mlp"; fi
  if [ -x "$build/bench/cpu_conv" ]; then conv="$("$build/bench/cpu_conv" "$runs" "$t")"; echo "$conv"; fi
  if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    if [ -n "$mlp" ] && [ -n "$conv" ]; then
      OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t /usr/bin/python3 "$here/cpu_torch.py" "$runs" "$t" "$(ms "$mlp")" "$(ms "$conv")" "$(cms "$mlp")" "$(cms "$conv")"
    else
      OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t /usr/bin/python3 "$here/cpu_torch.py" "$runs" "$t"
    fi
  else
    echo "PyTorch anchors skipped: /usr/bin/python3 cannot import torch"
  fi
done
