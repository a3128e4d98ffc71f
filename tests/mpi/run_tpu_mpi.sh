#!/bin/sh
# run_tpu_mpi.sh TPUCC MPIRUN: `mpirun -np R tpucc run` on a TPU board and
# pod, the cores split across R ranks: the results written by rank 0 are
# the one-process run's, byte for byte, and so are the --stats lines of
# every core (cycles, instructions, HBM bytes) and ICI link, and the
# events of --trace (every core's and link's)
# (all-reduce as a ring and as a
# parameter server on a v3-8 and on a v3-32 pod, and every collective the
# TPU lowers on a v3-8 (tpu/colls8.hlo), with 2 and 4 ranks); rank counts that do not divide the cores and ranks
# started with other flags are clear errors. Exit 0 when every check
# passes; every mpirun is bounded by `timeout`.
set -u
TPUCC=$1 MPIRUN=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1"; cat "$T/err" 2>/dev/null | head -20; fail=1; }
# Under LeakSanitizer the ranks run with leak checking off: OpenMPI's
# dlopen'd components leak at finalize (tests/mpi/run_mpi.py says more).
mr() {
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    timeout 60 "$MPIRUN" --allow-run-as-root --oversubscribe --mca btl self,vader "$@"
}
module() { # module N COUNT: an all-reduce over the N replicas of f32[COUNT]
  printf 'HloModule ar, replica_count=%s\nsum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[%s] parameter(0)\n  ROOT r = f32[%s] all-reduce(p), replica_groups={}, to_apply=sum\n}\n' "$1" "$2" "$2"
}
module 8 1000 >"$T/ar8.hlo"
module 32 1000 >"$T/ar32.hlo"
cp "$(dirname "$0")/tpu/colls8.hlo" "$T/colls8.hlo"
for c in "v3-8 ring ar8" "v3-8 ps ar8" "v3-32 ps ar32" "v3-32 ring ar32" "v3-8 ring colls8"; do
  set -- $c
  t=$1 alg=$2 f=$3
  "$TPUCC" run "$T/$f.hlo" --target=$t --all-reduce=$alg --random-inputs --output=@"$T/one.npy" \
    --stats >"$T/out1" 2>"$T/stats1" || { bad "$t $alg in one process"; continue; }
  grep -q "^  31 " "$T/stats1" || [ $t = v3-8 ] || bad "$t: no stats line for core 31"
  for np in 2 4; do
    rm -f "$T/mpi.npy"
    if mr -np $np "$TPUCC" run "$T/$f.hlo" --target=$t --all-reduce=$alg --random-inputs \
      --output=@"$T/mpi.npy" --stats >"$T/out" 2>"$T/err" && cmp -s "$T/one.npy" "$T/mpi.npy" &&
      cmp -s "$T/out1" "$T/out" && cmp -s "$T/stats1" "$T/err"; then
      ok "$t $f ($alg) across $np ranks as in one process"
    else bad "$t $alg across $np ranks"; fi
  done
done
# colls8's values are the evaluator's, bit for bit
"$TPUCC" run "$T/colls8.hlo" --target=v3-8 --random-inputs >"$T/c8tpu" 2>"$T/err" &&
  "$TPUCC" run "$T/colls8.hlo" --target=interp --random-inputs >"$T/c8int" 2>"$T/err" &&
  cmp -s "$T/c8tpu" "$T/c8int" && ok "colls8 on v3-8 as on interp" || bad "colls8 on v3-8 against interp"
# printed results come once, from rank 0
sed 's/1000/4/g' "$T/ar8.hlo" >"$T/ar8s.hlo"
"$TPUCC" run "$T/ar8s.hlo" --target=v3-8 --input="4xf32=1 2 3 4" >"$T/one" 2>"$T/err" || bad "printed, one process"
if mr -np 2 "$TPUCC" run "$T/ar8s.hlo" --target=v3-8 --input="4xf32=1 2 3 4" >"$T/out" 2>"$T/err" &&
  cmp -s "$T/one" "$T/out" && grep -qx '8x4xf32=\[8 16 24 32\]\[8 16 24 32\]\[8 16 24 32\]\[8 16 24 32\]\[8 16 24 32\]\[8 16 24 32\]\[8 16 24 32\]\[8 16 24 32\]' "$T/out"; then
  ok "printed once, by rank 0"
else bad "printed results across 2 ranks"; cat "$T/out"; fi
# --trace: one file from rank 0 with every core's events and the ICI
# links' (pid 9, a span per transfer and link), the same events as in one
# process (which writes them as the threads run them; the ranks core by
# core), compared as sorted lines without the separating commas
events() { sed 's/,$//' "$1" | LC_ALL=C sort; }
"$TPUCC" run "$T/ar8s.hlo" --target=v3-8 --input="4xf32=1 2 3 4" --trace="$T/t1.json" >/dev/null 2>"$T/err" ||
  bad "--trace, one process"
for np in 2 4; do
  if mr -np $np "$TPUCC" run "$T/ar8s.hlo" --target=v3-8 --input="4xf32=1 2 3 4" --trace="$T/t.json" \
    >/dev/null 2>"$T/err" && [ "$(events "$T/t1.json" | wc -l)" -gt 800 ] &&
    events "$T/t1.json" >"$T/e1" && events "$T/t.json" >"$T/e" && cmp -s "$T/e1" "$T/e" &&
    grep -q '"pid":8,' "$T/t.json" && grep -q '"name":"ICI links"' "$T/t.json" &&
    [ "$(grep -c '"ph":"X","pid":9,' "$T/t.json")" -gt 8 ]; then
    ok "--trace across $np ranks: the one-process trace's events, every core's and link's"
  else bad "--trace across $np ranks"; fi
done
if mr -np 3 "$TPUCC" run "$T/ar8s.hlo" --target=v3-8 --input="4xf32=1 2 3 4" >"$T/out" 2>"$T/err"; then
  bad "8 cores across 3 ranks ran"
elif grep -q "8 cores do not split evenly across 3 ranks" "$T/err"; then ok "3 ranks for 8 cores refused"
else bad "3 ranks: no message"; fi
if mr -np 1 "$TPUCC" run "$T/ar8s.hlo" --target=v3-8 --input="4xf32=1 2 3 4" : \
  -np 1 "$TPUCC" run "$T/ar8s.hlo" --target=v3-8 --all-reduce=ps --input="4xf32=1 2 3 4" >"$T/out" 2>"$T/err"; then
  bad "ranks with other flags ran"
elif grep -q "rank 1 runs other work than rank 0" "$T/err"; then ok "ranks with other flags refused, rank 1 named"
else bad "other flags: no message"; fi
exit $fail
