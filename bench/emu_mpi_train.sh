#!/usr/bin/env bash
# bench/emu_mpi_train.sh [TPUCC] [STEPS] [REPS]: host seconds per training
# step of samples/train/fashion_mlp.tg on an emulated v3-32 pod
# (--replicas=32, batch 128: 4 examples per core, its default Adam), in one
# process and under `mpirun -np R` for R = 2, 4 (the cores split across
# the ranks, docs/distributed.md, "Pods across processes"), STEPS steps
# (default 4) per run, best of REPS (default 2) runs by training time.
# Each rank runs TPURT_HOST_THREADS=1 host thread under mpirun (the
# default, one per CPU, in one process). TPUCC_MPI_TIMES gives each rank's
# share of its time in the cores' exchanges (waiting for slower ranks
# included; the table shows the largest). Needs Fashion-MNIST in
# /usr/share/datasets/fashion-mnist. Prints a markdown table
# (docs/performance.md, "Emulated pods across MPI ranks") and the host.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
T="${1:-$root/build/tools/tpucc}"
STEPS="${2:-4}"
REPS="${3:-2}"
w="$(mktemp -d)"
trap 'rm -rf "$w"' EXIT
run=("$T" train "$root/samples/train/fashion_mlp.tg" --target=v3-32 --replicas=32 --epochs=1
  --steps-per-epoch="$STEPS" --test-examples=128 --quiet)
mpi=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -x TPUCC_MPI_TIMES -x TPURT_HOST_THREADS)
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tpucc train fashion_mlp.tg --target=v3-32 --replicas=32, $STEPS steps, best of $REPS"
echo
echo "| ranks | training s | host s per step | MPI share (largest rank) | exchanges per rank | test accuracy |"
echo "|---|---|---|---|---|---|"
for r in 1 2 4; do
  best="" share="-" calls="-"
  for _ in $(seq "$REPS"); do
    if [ "$r" = 1 ]; then
      "${run[@]}" >"$w/out" 2>"$w/err"
    else
      TPUCC_MPI_TIMES=1 TPURT_HOST_THREADS=1 "${mpi[@]}" -np "$r" "${run[@]}" >"$w/out" 2>"$w/err"
    fi
    t=$(grep -o '[0-9.]* s training' "$w/out" | cut -d' ' -f1)
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then
      best=$t
      cp "$w/out" "$w/bout"
      cp "$w/err" "$w/best"
    fi
  done
  if [ "$r" != 1 ]; then
    share=$(grep -o '([0-9]*%)' "$w/best" | tr -d '()%' | sort -n | tail -1)%
    calls=$(grep -o 'in [0-9]* MPI exchanges' "$w/best" | head -1 | cut -d' ' -f2)
  fi
  acc=$(grep -o '^test accuracy [0-9.]*' "$w/bout" | cut -d' ' -f3)
  printf '| %s | %s | %.2f | %s | %s | %s |\n' "$([ "$r" = 1 ] && echo "1 (no mpirun)" || echo "$r")" \
    "$best" "$(echo "$best / $STEPS" | bc -l)" "$share" "$calls" "$acc"
done
