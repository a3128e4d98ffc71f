#!/bin/sh
# run_replicas.sh TPUCC DOCFILES: `tpucc run` of a module written for 8
# replicas on the TPU boards (one replica per core), against the evaluator:
# the same stacked results, byte for byte; and the replica counts a board
# cannot run are clear errors. Exit 0 when every check passes.
set -u
TPUCC=$1 D=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1"; cat "$T/out" 2>/dev/null; fail=1; }
"$TPUCC" run "$D/allreduce8.hlo" --target=interp --input="4xf32=1 2 3 4" >"$T/ref" 2>&1 || bad "interp"
grep -qx '8x4xf32=\[8 16 24 32\]\[8 16 24 32\]\[8 16 24 32\]\[8 16 24 32\]\[8 16 24 32\]\[8 16 24 32\]\[8 16 24 32\]\[8 16 24 32\]' "$T/ref" ||
  bad "the evaluator's 8 replicas sum to 8 16 24 32"
for t in v3-8 v2-8; do
  if "$TPUCC" run "$D/allreduce8.hlo" --target=$t --input="4xf32=1 2 3 4" >"$T/out" 2>&1 &&
    cmp -s "$T/out" "$T/ref"; then ok "all-reduce over 8 replicas on $t as on interp"; else bad "$t"; fi
done
# stacked inputs: replica r gets row r; a non-commutative order is visible
printf '1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32' >"$T/x.txt"
in="8x4xf32=$(cat "$T/x.txt")"
"$TPUCC" run "$D/allreduce8.hlo" --target=interp --input="$in" >"$T/ref2" 2>&1 || bad "interp, stacked"
if "$TPUCC" run "$D/allreduce8.hlo" --target=v3-8 --input="$in" >"$T/out" 2>&1 && cmp -s "$T/out" "$T/ref2"; then
  ok "stacked inputs on v3-8 as on interp"
else bad "stacked inputs on v3-8"; fi
if "$TPUCC" run "$D/allreduce8.hlo" --target=v3-8 --replicas=4 --input="4xf32=1 2 3 4" >"$T/out" 2>&1; then
  bad "4 replicas of an 8-replica module on v3-8 ran"
else grep -q "replica" "$T/out" && ok "4 replicas on v3-8: $(head -c 120 "$T/out")" || bad "no message"; fi
if "$TPUCC" run "$D/allreduce8.hlo" --target=v3 --input="4xf32=1 2 3 4" >"$T/out" 2>&1; then
  bad "8 replicas on one core ran"
else grep -q "asks for 8 replicas" "$T/out" && ok "8 replicas on v3 refused" || bad "no message"; fi
exit $fail
