#!/bin/sh
# tpurt_run.sh TPURT_RUN KERNEL_DIR: tpurt-run is deterministic, the systolic
# proof mode prints the same results and cycles, a faster HBM makes the
# DMA-bound part faster, and errors exit with the documented statuses.
set -eu
run=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$run" "$dir/matmul256.s" --random=7 > "$tmp/a"
"$run" "$dir/matmul256.s" --random=7 > "$tmp/b"
cmp "$tmp/a" "$tmp/b"
"$run" "$dir/matmul256.s" --random=7 --systolic > "$tmp/c"
grep '^result\|^cycles' "$tmp/a" > "$tmp/a2"
grep '^result\|^cycles' "$tmp/c" > "$tmp/c2"
cmp "$tmp/a2" "$tmp/c2"
grep -q '^mxu macs 16777216,' "$tmp/a"
slow=$(sed -n 's/^cycles \([0-9]*\).*/\1/p' "$tmp/a")
fast=$("$run" "$dir/matmul256.s" --random=7 --target=v3,hbm_bw=900GB/s | sed -n 's/^cycles \([0-9]*\).*/\1/p')
[ "$fast" -lt "$slow" ] || { echo "faster HBM did not help: $fast >= $slow"; exit 1; }
"$run" "$dir/rowsum.s" --trace="$tmp/t.json" > /dev/null
grep -q '"name":"vrlsum v1, v0","ph":"X"' "$tmp/t.json"
# A runaway program: exit status 1 and the cycle-limit message.
printf 'top: jmp top\n' > "$tmp/loop.s"
set +e
"$run" "$tmp/loop.s" --cycle-limit=5000 > /dev/null 2> "$tmp/err"; st=$?
set -e
[ "$st" -eq 1 ] || { echo "runaway: status $st"; exit 1; }
grep -q 'cycle limit of 5000 reached' "$tmp/err"
# A bad target: status 2.
set +e
"$run" "$dir/rowsum.s" --target=v9 > /dev/null 2>&1; st=$?
set -e
[ "$st" -eq 2 ] || { echo "bad target: status $st"; exit 1; }
# Numbers are numbers: junk or 0 for --cycle-limit, junk for --random and
# a directory given as the program are usage errors (status 2), not a
# silent default.
for bad in --cycle-limit=abc --cycle-limit=0 --cycle-limit=5x --random=seven; do
  set +e
  "$run" "$dir/rowsum.s" "$bad" > /dev/null 2> "$tmp/err"; st=$?
  set -e
  [ "$st" -eq 2 ] || { echo "$bad: status $st"; exit 1; }
  grep -q "is not a number" "$tmp/err" || { echo "$bad:"; cat "$tmp/err"; exit 1; }
done
mkdir "$tmp/d.tpub"
set +e
"$run" "$tmp/d.tpub" > /dev/null 2> "$tmp/err"; st=$?
set -e
[ "$st" -eq 2 ] && grep -q "is a directory" "$tmp/err" || { echo "directory: status $st"; cat "$tmp/err"; exit 1; }
echo ok
