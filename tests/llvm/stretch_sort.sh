#!/bin/sh
# stretch_sort.sh TPUCC DIR: XLA's sort and top-k modules of the stretch
# corpus (DIR: hlo-stretch) on the cpu against interp with the same random
# inputs (--reference compares every result; the cpu's sort is the
# evaluator's merge sort, so the default strict numerics match bit for bit).
set -u
failures=0
for m in hlo_parser_test__SortKeyStable hlo_parser_test__SortKeyValue hlo_parser_test__TopK; do
  for seed in 1 2 3; do
    if ! "$1" run "$2/$m.hlo" --target=cpu --reference=interp --random-inputs --seed=$seed \
        --output= > /dev/null; then
      echo "FAIL $m (seed $seed)"
      failures=$((failures + 1))
    fi
  done
done
echo "9 runs, $failures failed"
[ $failures -eq 0 ]
