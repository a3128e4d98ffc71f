#!/bin/sh
# cli.sh TPUCC SRCDIR ROOT: `tpucc run --report/--trace/--roofline/--stats`
# on the add of tests/report and on the samples (v3 and v2), checked by
# check.py (structure) and against the hand-derived add kernel's shape.
set -u
tpucc=$1 dir=$2 root=$3
command -v python3 >/dev/null 2>&1 || { echo "python3 missing: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
run() { # name target file
  n=$1 t=$2 f=$3
  if ! "$tpucc" run "$f" --target="$t" --random-inputs --print-max-elements=1 \
      --report="$tmp/$n.csv" --trace="$tmp/$n.json" --roofline="$tmp/$n.svg" \
      --stats >"$tmp/$n.out" 2>"$tmp/$n.err"; then
    echo "FAIL: $n: tpucc run"; cat "$tmp/$n.err"; fails=$((fails + 1)); return
  fi
  if ! python3 "$dir/check.py" "$tmp/$n.csv" "$tmp/$n.json" "$tmp/$n.svg"; then
    echo "FAIL: $n"; fails=$((fails + 1))
  fi
  grep -q "array active" "$tmp/$n.err" || { echo "FAIL: $n: --stats has no breakdown"; fails=$((fails + 1)); }
}
run add v3 "$dir/add.tg"
run mlp_v3 v3 "$root/samples/mlp.tg"
run mlp_v2 v2 "$root/samples/mlp.tg"
run cnn v3 "$root/samples/cnn.tg"
run transformer v3 "$root/samples/transformer.tg"
# The add, derived by hand from docs/isa.md (v3: a 4 KiB transfer holds
# HBM 9 cycles and signals 9 + 64 = 73 cycles after it starts). The
# backend emits (T = front-end cycle):
#   T0 dmald x: HBM [0,9), signal 73       T1, T2 sli
#   T3 dmald y: queue free 9, HBM [9,18), signal 82
#   T4 wait vector, sem1: starts 73 (stall_dma 69)      T5 sli
#   T6 vld v0: starts 74                   T7 wait vector, sem3: 82 (stall_dma 7)
#   T8 vld v1: starts 83, ready 87         T9 vaddf: 87 (stall_dependency 3), ready 89
#   T10 vst: 89 (stall_dependency 1)       T11 signal vector: 90, token 91
#   T12 wait dma0: 91 (stall_sync 73)      T13, T14 sli
#   T15 dmast: 92, HBM [92,101), done 92 + 73 = 165
#   T16 halt: end max(17, 165) = 165
# so the add's row: first 0, end 165, exclusive 165, stalls dma 76,
# dependency 4, other 73, 1024 element ops, 8192 bytes read, 4096 written.
awk -F, '$2 == "add" { ok = ($4 ~ /add.tg:3:/ && $6 == 0 && $7 == 165 && $9 == 165 &&
    $12 == 76 && $13 == 4 && $14 == 73 && $19 == 1024 && $20 == 8192 && $21 == 4096) }
    END { exit !ok }' "$tmp/add.csv" ||
  { echo "FAIL: the add's row differs from the hand derivation"; cat "$tmp/add.csv"; fails=$((fails + 1)); }
# The mlp's dots carry their useful MACs: 32x784x256 + 32x256x128 + 32x128x10.
awk -F, 'NR > 1 { s += $17 } END { exit !(s == 32*784*256 + 32*256*128 + 32*128*10) }' \
  "$tmp/mlp_v3.csv" || { echo "FAIL: mlp useful MACs"; fails=$((fails + 1)); }
# --report=- prints a table ending with the total.
"$tpucc" run "$dir/add.tg" --random-inputs --output= --report=- >"$tmp/t.out" 2>&1 &&
  grep -q '^total .* 100.0%' "$tmp/t.out" || { echo "FAIL: table"; cat "$tmp/t.out"; fails=$((fails + 1)); }
# A .tpub program keeps its op table.
"$tpucc" compile "$root/samples/mlp.tg" --emit=tpub -o "$tmp/m.tpub" &&
  "$tpucc" run "$tmp/m.tpub" --random-inputs --output= --output= --report="$tmp/f.csv" >/dev/null 2>&1 &&
  grep -q 'mlp.tg' "$tmp/f.csv" || { echo "FAIL: .tpub report"; fails=$((fails + 1)); }
# dump-module lists the op table: the first dense layer of mlp.tg (its dot,
# bias, relu and the next layer's bf16 cast as one kOutput fusion, located
# at the cast) with its 2 x 32 x 784 x 256 FLOPs, and code ranges covering
# every code word.
"$tpucc" dump-module "$tmp/m.tpub" >"$tmp/d.txt" 2>&1 &&
  grep -q '^; op [0-9]*: .* (fusion) .*mlp.tg:18:[0-9]*, 12845056 flops' "$tmp/d.txt" &&
  awk '/^; section code/ { n = $5 } /^; op / { for (i = 1; i <= NF; i++) if ($i == "code") w += $(i - 1) }
       END { exit !(n > 0 && w == n) }' "$tmp/d.txt" ||
  { echo "FAIL: dump-module op table"; grep '^; ' "$tmp/d.txt" | head -30; fails=$((fails + 1)); }
# A hand-written program (no op table) is one op, "(program)", whose
# useful MACs are the array's: 256 x 256 x 256 for the 256^3 kernel.
"$tpucc" asm "$root/tests/runtime/kernels/matmul256.s" -o "$tmp/k.tpub" &&
  "$tpucc" run "$tmp/k.tpub" --random-inputs --output= --report="$tmp/k.csv" \
    --trace="$tmp/k.json" --roofline="$tmp/k.svg" >/dev/null 2>&1 &&
  python3 "$dir/check.py" "$tmp/k.csv" "$tmp/k.json" "$tmp/k.svg" >/dev/null &&
  awk -F, '$2 == "(program)" { ok = ($17 == 16777216) } END { exit !ok }' "$tmp/k.csv" ||
  { echo "FAIL: report of an assembled program"; fails=$((fails + 1)); }
# --stats and --stats-json keep all their figures next to the per-op
# reports (once they were dropped: --stats shrank, --stats-json was never
# written), and the JSON's cycles equal the report's total.
"$tpucc" run "$root/samples/mlp.tg" --random-inputs --output= --output= --stats \
    --stats-json="$tmp/s.json" --report="$tmp/s.csv" >/dev/null 2>"$tmp/s.err" &&
  grep -q 'MXU useful' "$tmp/s.err" && grep -q 'precision  *bf16' "$tmp/s.err" &&
  python3 - "$tmp/s.json" "$tmp/s.csv" <<'PY' || { echo "FAIL: --stats-json with --report"; cat "$tmp/s.err"; fails=$((fails + 1)); }
import csv, json, sys
j = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
assert j["cycles"] == sum(int(r["exclusive_cycles"]) for r in rows), (j["cycles"], rows[:1])
assert j["flops"] == 2 * (32*784*256 + 32*256*128 + 32*128*10), j["flops"]
for k in ("seconds", "mxu_useful_fraction", "hbm_bytes", "compile_seconds", "host_seconds"):
    assert k in j, k
PY
# A .tpub writes --stats-json too: FLOPs from its op table, and no
# compile-time keys (it was compiled elsewhere).
"$tpucc" run "$tmp/m.tpub" --random-inputs --output= --output= --stats \
    --stats-json="$tmp/f.json" >/dev/null 2>"$tmp/f.err" &&
  grep -q 'MXU useful' "$tmp/f.err" &&
  python3 - "$tmp/f.json" <<'PY' || { echo "FAIL: .tpub --stats-json"; cat "$tmp/f.err"; fails=$((fails + 1)); }
import json, sys
j = json.load(open(sys.argv[1]))
assert j["flops"] == 2 * (32*784*256 + 32*256*128 + 32*128*10), j["flops"]
assert "compile_seconds" not in j and "precision" not in j, j
assert j["cycles"] > 0 and j["hbm_bytes"] > 0, j
PY
# Compile-time flags on a compiled program are a usage error.
"$tpucc" run "$tmp/m.tpub" --random-inputs --output= --output= --precision=high >/dev/null 2>"$tmp/p.err"
[ $? -eq 2 ] && grep -q 'already compiled' "$tmp/p.err" ||
  { echo "FAIL: --precision on a .tpub"; cat "$tmp/p.err"; fails=$((fails + 1)); }
# An unwritable path is an error, not a crash.
"$tpucc" run "$dir/add.tg" --random-inputs --output= --report=/nonexistent/x.csv >/dev/null 2>"$tmp/e" &&
  { echo "FAIL: unwritable report accepted"; fails=$((fails + 1)); }
grep -q 'cannot write' "$tmp/e" || { echo "FAIL: no message for an unwritable report"; cat "$tmp/e"; fails=$((fails + 1)); }
[ $fails -eq 0 ] && echo "report cli: ok"
exit $((fails != 0))
