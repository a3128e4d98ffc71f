#!/bin/sh
# coll_errors.sh TPUCC DIR TARGET...: the errors of a replicated run, on
# every TARGET, before anything runs: a replica count the target cannot
# run (more than it has, or other than the module's replica_count), a
# group naming a missing replica, a collective-permute with a duplicated
# source, and an input stacked for another replica count. Each fails
# before running with a located message (the module's FILE:LINE:COL; the
# input's number for the input) holding the expected words, and the same
# exit status on every target. On the TPU targets also u32 arithmetic on
# replica-id and a -start/-done pair, which every target runs with
# interp's values
# (docs/cli.md: 2 for a malformed module or input, 1 for a module the run
# cannot run). Exit 0 when all do.
set -u
tpucc=$1 dir=$2
shift 2
fail=0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# expect TARGET RC WHERE WORDS ARGS...: `tpucc run ARGS --target=TARGET`
# exits RC and prints WHERE (a location) and WORDS
expect() {
  et=$1 want=$2 where=$3 words=$4
  shift 4
  "$tpucc" run --target="$et" "$@" >"$T/out" 2>&1
  rc=$?
  if [ $rc -eq "$want" ] && grep -qF -e "$where" "$T/out" && grep -qF -e "$words" "$T/out"; then
    echo "PASS $et: $words"
  else
    echo "FAIL $et: $* (rc=$rc; want $want, $where ... $words):"
    cat "$T/out"
    fail=1
  fi
}
for t in "$@"; do
  expect "$t" 1 "count16.hlo:3:7:" "module asks for 16 replicas (replica_count)" \
    "$dir/count16.hlo" --replicas=4 --input="4xf32=1 2 3 4"
  expect "$t" 1 "count_huge.hlo:3:7:" "module asks for 100000 replicas (replica_count); target $t runs" \
    "$dir/count_huge.hlo" --input="4xf32=1 2 3 4"
  expect "$t" 1 "missing.hlo:5:8:" "replica_groups names replica 9; the run has 4 replicas" \
    "$dir/missing.hlo" --replicas=4 --input="4xf32=1 2 3 4"
  expect "$t" 2 "dup_source.hlo:5:8:" "source_target_pairs lists replica 0 as a source twice" \
    "$dir/dup_source.hlo" --replicas=4 --input="4xf32=1 2 3 4"
  expect "$t" 2 "--input 1" "expected 4xf32 (or 4 of them stacked, one per replica), given 3x4xf32" \
    "$dir/missing.hlo" --replicas=4 --input="3x4xf32=1 2 3 4 1 2 3 4 1 2 3 4"
  case $t in
  v*) # on two cores, as interp
    for f in id_arith permute_start; do
      "$tpucc" run --target=interp "$dir/$f.hlo" --input="4xf32=1 2 3 4" >"$T/want" 2>&1
      if "$tpucc" run --target="$t,ncores=2" "$dir/$f.hlo" --input="4xf32=1 2 3 4" \
          >"$T/out" 2>&1 && cmp -s "$T/want" "$T/out"; then
        echo "PASS $t runs $f as interp does"
      else
        echo "FAIL $t: $f:"; cat "$T/out"; fail=1
      fi
    done ;;
  *) # the same modules run elsewhere
    for f in id_arith permute_start; do
      if "$tpucc" run --target="$t" "$dir/$f.hlo" --input="4xf32=1 2 3 4" >"$T/out" 2>&1; then
        echo "PASS $t runs $f"
      else
        echo "FAIL $t: $f:"; cat "$T/out"; fail=1
      fi
    done ;;
  esac
done
exit $fail
