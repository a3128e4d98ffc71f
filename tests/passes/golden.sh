#!/usr/bin/env bash
# golden.sh TPUCC DIR [--update]: the pass goldens. Each DIR/NAME.hlo names
# its passes on a line "// PASSES: a,b,c"; `tpucc opt NAME.hlo --passes=...
# --explain` must print exactly DIR/NAME.expected on standard output and
# DIR/NAME.explain on standard error. --update rewrites the expected files
# (review the diff before committing it).
set -u
TPUCC=$1
DIR=$2
UPDATE=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 n=0
for f in "$DIR"/*.hlo; do
  n=$((n + 1))
  b=${f%.hlo}
  passes=$(sed -n 's|^// PASSES: *||p' "$f" | head -n 1)
  if [ -z "$passes" ]; then
    echo "FAIL $(basename "$f"): no '// PASSES:' line"
    failures=$((failures + 1))
    continue
  fi
  "$TPUCC" opt "$f" --passes="$passes" --explain >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL $(basename "$f"): tpucc opt exited $rc"
    cat "$tmp/err"
    failures=$((failures + 1))
    continue
  fi
  if [ "$UPDATE" = "--update" ]; then
    cp "$tmp/out" "$b.expected"
    cp "$tmp/err" "$b.explain"
    continue
  fi
  for k in expected:out explain:err; do
    ext=${k%%:*} got=$tmp/${k##*:}
    if [ ! -f "$b.$ext" ]; then
      echo "FAIL $(basename "$f"): missing $(basename "$b.$ext")"
      failures=$((failures + 1))
    elif ! diff -u "$b.$ext" "$got" >"$tmp/diff"; then
      echo "FAIL $(basename "$f"): output differs from $(basename "$b.$ext"):"
      cat "$tmp/diff"
      failures=$((failures + 1))
    fi
  done
done
[ "$n" -gt 0 ] || { echo "no goldens in $DIR"; exit 1; }
echo "$n goldens, $failures failures"
[ "$failures" -eq 0 ]
