#!/usr/bin/env bash
# bench/emu_mpi.sh [TPUCC] [COUNT] [REPS]: emulation wall time of an
# all-reduce (parameter server) of f32[COUNT] (default 65536) over the 32
# cores of a v3-32 pod, in one process and under `mpirun -np R` for R = 1,
# 2, 4 (the cores split across the ranks, docs/distributed.md), best of
# REPS (default 3) runs each by wall time, with the CPU time of every
# process of that run (the figure a loaded machine disturbs least); and the share of each run's time that ranks
# spent in MPI exchanges (TPUCC_MPI_TIMES: compile + run seconds, seconds
# in exchanges; the table shows the largest share over the ranks, which
# includes waiting for the slowest rank). Under `mpirun -np 1` the run is
# the one-process emulation (nothing is shared) with its time measured. Prints a markdown table
# (docs/performance.md, "Emulated pods across MPI ranks") and the host.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
T="${1:-$root/build/tools/tpucc}"
N="${2:-65536}"
REPS="${3:-3}"
w="$(mktemp -d)"
trap 'rm -rf "$w"' EXIT
printf 'HloModule ar, replica_count=32\nsum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[%s] parameter(0)\n  ROOT r = f32[%s] all-reduce(p), replica_groups={}, to_apply=sum\n}\n' \
  "$N" "$N" >"$w/ar.hlo"
run=("$T" run "$w/ar.hlo" --target=v3-32 --all-reduce=ps --random-inputs --output=@"$w/y.npy" --stats)
mpi=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader)
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "all-reduce (parameter server) of f32[$N] over the 32 cores of a v3-32, best of $REPS"
echo
echo "| ranks | wall s | CPU s (every rank) | compile + run s (slowest rank) | pod cycles | pod Mcycles/s (compile + run) | MPI share (largest rank) | exchanges per rank |"
echo "|---|---|---|---|---|---|---|---|"
for r in 0 1 2 4; do
  best="" share="-" calls="-" cr="-" rate="-"
  for _ in $(seq "$REPS"); do
    if [ "$r" = 0 ]; then
      /usr/bin/time -f "%e %U %S" -o "$w/time" "${run[@]}" >/dev/null 2>"$w/err"
    else
      TPUCC_MPI_TIMES=1 /usr/bin/time -f "%e %U %S" -o "$w/time" "${mpi[@]}" -np "$r" "${run[@]}" \
        >/dev/null 2>"$w/err"
    fi
    read -r dt us ss <"$w/time"
    if [ -z "$best" ] || [ "$(echo "$dt < $best" | bc -l)" = 1 ]; then
      best=$dt
      cpu=$(echo "$us + $ss" | bc -l)
      cp "$w/err" "$w/best"
    fi
  done
  cycles=$(awk '$1 ~ /^[0-9]+$/ && NF == 7 { if ($2 > m) m = $2 } END { print m + 0 }' "$w/best")
  if [ "$r" != 0 ]; then
    share=$(grep -o '([0-9]*%)' "$w/best" | tr -d '()%' | sort -n | tail -1)%
    calls=$(grep -o 'in [0-9]* MPI exchanges' "$w/best" | head -1 | cut -d' ' -f2)
    cr=$(grep -o 'compile and run [0-9.]* s' "$w/best" | cut -d' ' -f4 | sort -n | tail -1)
    rate=$(printf '%.2f' "$(echo "$cycles / $cr / 1000000" | bc -l)")
  fi
  printf '| %s | %.2f | %.2f | %s | %s | %s | %s | %s |\n' \
    "$([ "$r" = 0 ] && echo "1 (no mpirun)" || echo "$r")" "$best" "$cpu" "$cr" "$cycles" "$rate" \
    "$share" "$calls"
done
