#!/bin/sh
# replicas.sh TPUCC DIR TARGET: runs every DIR/*.hlo on TARGET with input
# 4xf32=1 2 3 4 from inside DIR and compares what it prints (stdout and
# stderr, then "rc=STATUS") with DIR/TARGET.expected, with the default
# replica count (the module's replica_count on interp and cpu, 1 elsewhere): a
# module asking for more replicas than the target runs, or a collective
# naming a replica the run does not have, is a located error
# (ir_check_runnable_replicas).
set -u
tpucc=$1 dir=$2 target=$3
case $tpucc in /*) ;; *) tpucc=$PWD/$tpucc ;; esac
cd "$dir" || exit 1
got=$(for f in *.hlo; do
  echo "== $f"
  "$tpucc" run --target="$target" "$f" --input="4xf32=1 2 3 4" 2>&1
  echo "rc=$?"
done)
if [ "$got" != "$(cat "$target.expected")" ]; then
  echo "$got" | diff -u "$target.expected" -
  exit 1
fi
