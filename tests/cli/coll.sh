#!/bin/sh
# coll.sh TPUCC DIR: `tpucc run --replicas` on interp with the modules of
# DIR (tests/cli/coll/): the issue's all-reduce of 1 2 3 4 over 8 replicas
# (8 16 24 32), stacked per-replica inputs, and the errors of a replicated
# run (a count other than the module's, partitions, a group naming a
# missing replica or leaving one out, a result shape for another count,
# replicas that diverge, an input stacked for another count, a .tpub,
# which runs one replica). Compares
# what each prints (stdout and stderr, then "rc=STATUS") with
# DIR/expected.txt.
set -u
tpucc=$1 dir=$2
case $tpucc in /*) ;; *) tpucc=$PWD/$tpucc ;; esac
cd "$dir" || exit 1
run() {
  echo "== $*"
  "$tpucc" run --target=interp "$@" 2>&1
  echo "rc=$?"
}
got=$(
  run issue16.hlo --input="4xf32=1 2 3 4"
  run issue16.hlo --input="8x4xf32=1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1 1 1 1 1 2 2 2 2 3 3 3 3 4 4 4 4"
  run issue16.hlo --input="4xf32=1 2 3 4" --replicas=4
  run issue16.hlo --input="4xf32=1 2 3 4" --replicas=16
  run issue16.hlo --input="4x4xf32=0" --replicas=8
  run partitions.hlo --input="4xf32=1 2 3 4"
  run group3.hlo --input="4xf32=1 2 3 4" --replicas=2
  run group3.hlo --input="4xf32=1 2 3 4" --replicas=4
  run group3.hlo --input="3x4xf32=1 2 3 4 10 20 30 40 100 200 300 400" --replicas=3
  run gather_n.hlo --input="2xf32=1 2" --replicas=2
  run gather_n.hlo --input="4x2xf32=1 2 3 4 5 6 7 8" --replicas=4
  run diverge.hlo --input="2xf32=1 2" --replicas=2
  run program.tpub --replicas=2
)
if [ "$got" != "$(cat expected.txt)" ]; then
  echo "$got" | diff -u expected.txt -
  exit 1
fi
