#!/usr/bin/env bash
# cli.sh TPUCC GOLDEN_DIR WORK: the pass tooling of the tpucc command.
set -u
TPUCC=$1
G=$2
W=$3
rm -rf "$W"
mkdir -p "$W"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# --list-passes: every pipeline pass with its level, on opt, compile and run.
for cmd in opt compile run; do
  out=$("$TPUCC" $cmd --list-passes) || fail "$cmd --list-passes exited $?"
  for p in simplify constfold cse dce fusion multi-output-fusion layout; do
    grep -q "^  $p " <<<"$out" || fail "$cmd --list-passes lacks $p"
  done
done
grep -q "fusion *-O2" <<<"$("$TPUCC" opt --list-passes)" || fail "fusion is not listed at -O2"

# --dump-dir: the input and one file per pass, numbered in pipeline order.
"$TPUCC" opt "$G/fusion_reduce.hlo" -O2 --dump-dir="$W/d" >/dev/null || fail "dump run failed"
ls "$W/d" >"$W/list"
head -n 1 "$W/list" | grep -qx "fusion_reduce.0000.after_input.hlo" || fail "first dump: $(head -n 1 "$W/list")"
grep -qx "fusion_reduce.0006.after_fusion.hlo" "$W/list" || fail "no 0006.after_fusion dump: $(cat "$W/list")"
[ "$(wc -l <"$W/list")" -eq 10 ] || fail "expected 10 dumps (input + 9 passes), got $(wc -l <"$W/list")"
grep -q "kind=kInput" "$W/d/fusion_reduce.0006.after_fusion.hlo" || fail "fusion dump has no kInput fusion"
grep -q "fusion(" "$W/d/fusion_reduce.0005.after_dce.hlo" && fail "dump before fusion already fused"
# every dump reads back and runs
for f in "$W"/d/*.hlo; do
  "$TPUCC" run "$f" --target=interp -O0 --random-inputs --output= || fail "dump $(basename "$f") does not run"
done

# --dump-after=REGEX filters by pass name.
"$TPUCC" opt "$G/fusion_reduce.hlo" --dump-dir="$W/e" --dump-after='^(fusion|layout)$' >/dev/null ||
  fail "dump-after run failed"
[ "$(ls "$W/e" | tr '\n' ' ')" = "fusion_reduce.0006.after_fusion.hlo fusion_reduce.0009.after_layout.hlo " ] ||
  fail "dump-after gave: $(ls "$W/e" | tr '\n' ' ')"
"$TPUCC" opt "$G/fusion_reduce.hlo" --dump-dir="$W/f" --dump-after='(' >/dev/null 2>"$W/err"
[ $? -eq 1 ] || fail "bad regex: wrong exit status"
grep -q "invalid regular expression" "$W/err" || fail "bad regex message: $(cat "$W/err")"

# An unwritable dump directory is an error naming it.
"$TPUCC" opt "$G/dce.hlo" --dump-dir=/proc/tpucc-no-such-dir >/dev/null 2>"$W/err"
[ $? -eq 1 ] || fail "unwritable dump dir: wrong exit status"
grep -q "cannot create /proc/tpucc-no-such-dir" "$W/err" || fail "dump dir message: $(cat "$W/err")"

# --time-passes: one line per pass and a total.
"$TPUCC" opt "$G/fusion_loop.hlo" --time-passes >/dev/null 2>"$W/t"
for p in simplify constfold cse fusion layout total; do
  grep -Eq "^  $p +[0-9.]+ ms" "$W/t" || fail "--time-passes lacks $p: $(cat "$W/t")"
done

# --passes: unknown names are usage errors naming the pass.
"$TPUCC" opt "$G/dce.hlo" --passes=dce,frobnicate >/dev/null 2>"$W/err"
[ $? -eq 2 ] || fail "unknown pass: wrong exit status"
grep -q "unknown pass 'frobnicate'" "$W/err" || fail "unknown pass message: $(cat "$W/err")"
"$TPUCC" opt "$G/dce.hlo" -O7 >/dev/null 2>"$W/err" && fail "-O7 accepted"

# Unreadable or malformed input is a usage error with a located message.
"$TPUCC" opt "$W/missing.hlo" >/dev/null 2>"$W/err"
[ $? -eq 2 ] || fail "missing file: wrong exit status"
grep -q "missing.hlo" "$W/err" || fail "missing file message: $(cat "$W/err")"
printf 'HloModule bad\nENTRY main {\n  x = f32[2] parameter(0)\n  ROOT y = f32[2] frob(x)\n}\n' >"$W/bad.hlo"
"$TPUCC" opt "$W/bad.hlo" --passes=fusion >/dev/null 2>"$W/err"
[ $? -eq 2 ] || fail "malformed file: wrong exit status"
grep -q "bad.hlo:4:" "$W/err" || fail "malformed file message: $(cat "$W/err")"

# -O levels on compile: -O0 leaves the module alone, -O1 lays out, -O2 fuses.
"$TPUCC" compile "$G/fusion_loop.hlo" -O0 >"$W/o0" || fail "compile -O0"
"$TPUCC" compile "$G/fusion_loop.hlo" -O1 >"$W/o1" || fail "compile -O1"
"$TPUCC" compile "$G/fusion_loop.hlo" >"$W/o2" || fail "compile (default -O2)"
grep -q "T(8,128)" "$W/o0" && fail "-O0 assigned layouts"
grep -q "fusion(" "$W/o1" && fail "-O1 fused"
grep -q "T(8,128)" "$W/o1" || fail "-O1 did not assign layouts"
grep -q "kind=kLoop" "$W/o2" || fail "-O2 did not fuse"

# -O levels on run: identical results on the interp target; --explain says why.
for f in "$G"/*.hlo; do
  "$TPUCC" run "$f" --target=interp --random-inputs -O0 >"$W/r0" 2>&1 || fail "run -O0 $(basename "$f")"
  "$TPUCC" run "$f" --target=interp --random-inputs -O2 >"$W/r2" 2>&1 || fail "run -O2 $(basename "$f")"
  cmp -s "$W/r0" "$W/r2" || fail "$(basename "$f"): -O0 and -O2 results differ"
done
"$TPUCC" run "$G/fusion_loop.hlo" --target=interp --random-inputs --explain --output= --output= --output= 2>"$W/x" ||
  fail "run --explain failed"
grep -q "not fused: producer %e has 2 users and is not cheap" "$W/x" || fail "explain: $(cat "$W/x")"

echo "$failures failures"
[ "$failures" -eq 0 ]
