#!/usr/bin/env bash
# bench/allreduce.sh [BUILD] [MAX_BOARD_BYTES] [MAX_POD_BYTES]: all-reduce of
# f32 over every core of a v3-8 board and of a v3-128 pod on the emulated
# interconnect (bench/emu_allreduce: compiled by the TPU backend, every
# result checked), ring, direct exchange and parameter server, against the ring bound
# 2(N-1)/N x bytes / ici_bw + 2(N-1) x ici_latency; then host seconds of
# one emulated run on 1 and 2 host threads (docs/performance.md,
# "All-reduce"). Run by hand, never by the suite. Sizes go up to
# MAX_BOARD_BYTES on v3-8 (default 64 MiB) and MAX_POD_BYTES on v3-128
# (default 4 MiB): every core holds about five copies of the value, so
# 256 MiB on 8 cores needs about 10 GiB of host memory, and a pod run
# emulates 128 cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
B="${1:-$root/build}"
MB="${2:-67108864}"
MP="${3:-4194304}"
E="$B/bench/emu_allreduce"
[ -x "$E" ] || { echo "bench/allreduce.sh: build $E first (ninja -C $B bench/emu_allreduce)" >&2; exit 2; }
echo "# host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; flags: $(grep -o -w 'avx512f\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "| target | bytes | algorithm | cycles | us | bus GB/s | bound us | bound/time | busiest link | host s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
row() { # target bytes algorithm threads
  "$E" "$1" "$2" "$3" "$4" | awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $3, $4, $6, $7, $8, $9, $10, $11, $12}'
}
for s in 4096 65536 1048576 4194304 16777216 67108864 268435456; do
  [ "$s" -le "$MB" ] || continue
  row v3-8 "$s" ring 2
  row v3-8 "$s" direct 2
  row v3-8 "$s" ps 2
done
for s in 4096 65536 1048576 4194304 16777216; do
  [ "$s" -le "$MP" ] || continue
  row v3-128 "$s" ring 2
  row v3-128 "$s" direct 2
  [ "$s" -le 1048576 ] && row v3-128 "$s" ps 2
done
echo
echo "| target | bytes | algorithm | host threads | cycles | host s |"
echo "|---|---|---|---|---|---|"
for th in 1 2; do
  "$E" v3-8 16777216 ring $th | awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s |\n", $1, $3, $4, $5, $6, $12}'
  "$E" v3-128 1048576 ring $th | awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s |\n", $1, $3, $4, $5, $6, $12}'
done
