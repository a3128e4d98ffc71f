#!/bin/sh
# replicas.sh TPUCC DIR TARGET: runs every DIR/*.hlo on TARGET with input
# 4xf32=1 2 3 4 from inside DIR and compares what it prints (stdout and
# stderr, then "rc=STATUS") with DIR/TARGET.expected. Targets run one
# replica: a module asking for more, or a collective naming a replica other
# than 0, is a located error (ir_check_runnable).
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
