#!/usr/bin/env bash
# stretch_control.sh TPUCC DIR: the control-flow modules of XLA's
# hlo-stretch corpus (call, while, both conditional forms, map, a
# computation called from two call sites) run on cpu and v3 with random
# inputs and agree with interp (--reference, the CLI's tolerance).
set -u
TPUCC=$1
DIR=$2
failures=0 n=0
for m in hlo_parser_test__Call hlo_parser_test__WhileWithScalarS32Result \
         hlo_parser_test__IndexedConditional hlo_parser_test__PredicatedConditional \
         hlo_to_mhlo__if_conditional hlo_parser_test__Map \
         hlo_gumgraph_test__CalledComputationMultipleCallsites; do
  for t in cpu v3; do
    n=$((n + 1))
    if ! out=$("$TPUCC" run "$DIR/$m.hlo" --target=$t --random-inputs --reference=interp 2>&1); then
      echo "FAIL $m on $t:"
      echo "$out"
      failures=$((failures + 1))
    fi
  done
done
echo "$n runs, $failures failed"
[ $failures -eq 0 ]
