#!/usr/bin/env bash
# targets.sh TPUCC DIR [--update]: modules that import but use an op or an
# element type a target cannot run. For each DIR/NAME.hlo and each target T
# of interp, cpu and v3, `tpucc run NAME.hlo --target=T` (run inside DIR,
# arguments from a "// ARGS: ..." line) must exit 1 and print exactly
# DIR/NAME.T.expected on standard error: a located error naming the op or
# type and the target, never a crash or a result. --update rewrites the
# expected files (review the diff before committing it).
set -u
TPUCC=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
DIR=$2
UPDATE=${3:-}
cd "$DIR" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 n=0
for f in *.hlo; do
  b=${f%.hlo}
  args=$(sed -n 's|^// ARGS: *||p' "$f" | head -n 1)
  for t in interp cpu v3; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    "$TPUCC" run "$f" --target=$t $args >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -ne 1 ]; then
      echo "FAIL $f on $t: exit status $rc, expected 1"
      cat "$tmp/err"
      failures=$((failures + 1))
      continue
    fi
    if [ "$UPDATE" = "--update" ]; then
      cp "$tmp/err" "$b.$t.expected"
    elif ! cmp -s "$tmp/err" "$b.$t.expected"; then
      echo "FAIL $f on $t: diagnostics differ"
      diff "$b.$t.expected" "$tmp/err"
      failures=$((failures + 1))
    fi
  done
done
echo "$n runs, $failures failed"
[ $failures -eq 0 ] && [ $n -gt 0 ]
