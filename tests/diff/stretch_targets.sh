#!/usr/bin/env bash
# stretch_targets.sh TPUCC DIR NAME...: each DIR/NAME.hlo (XLA test modules
# of hlo-stretch/) runs on interp, cpu and v3 with the same random inputs
# (seeds 1 to 3) and every target prints exactly what interp prints.
set -u
TPUCC=$1
DIR=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 n=0
for name in "$@"; do
  for seed in 1 2 3; do
    if ! "$TPUCC" run "$DIR/$name.hlo" --target=interp --random-inputs --seed=$seed >"$tmp/ref" 2>&1; then
      echo "FAIL $name seed $seed: interp:"
      cat "$tmp/ref"
      failures=$((failures + 1))
      continue
    fi
    for t in cpu v3; do
      n=$((n + 1))
      "$TPUCC" run "$DIR/$name.hlo" --target=$t --random-inputs --seed=$seed >"$tmp/out" 2>&1
      if ! cmp -s "$tmp/ref" "$tmp/out"; then
        echo "FAIL $name seed $seed on $t: differs from interp"
        diff "$tmp/ref" "$tmp/out" | head -5
        failures=$((failures + 1))
      fi
    done
  done
done
echo "$n runs, $failures failed"
[ "$failures" -eq 0 ]
