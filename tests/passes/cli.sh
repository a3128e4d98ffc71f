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
  for p in simplify constfold cse transpose-folding dce fusion multi-output-fusion layout; do
    grep -q "^  $p " <<<"$out" || fail "$cmd --list-passes lacks $p"
  done
done
grep -q "fusion *-O2" <<<"$("$TPUCC" opt --list-passes)" || fail "fusion is not listed at -O2"

# --dump-dir: the input and one file per pass, numbered in pipeline order.
"$TPUCC" opt "$G/fusion_reduce.hlo" -O2 --dump-dir="$W/d" >/dev/null || fail "dump run failed"
ls "$W/d" >"$W/list"
head -n 1 "$W/list" | grep -qx "fusion_reduce.0000.after_input.hlo" || fail "first dump: $(head -n 1 "$W/list")"
grep -qx "fusion_reduce.0005.after_transpose-folding.hlo" "$W/list" || fail "no 0005.after_transpose-folding dump: $(cat "$W/list")"
grep -qx "fusion_reduce.0008.after_fusion.hlo" "$W/list" || fail "no 0008.after_fusion dump: $(cat "$W/list")"
[ "$(wc -l <"$W/list")" -eq 12 ] || fail "expected 12 dumps (input + 11 passes), got $(wc -l <"$W/list")"
grep -q "kind=kInput" "$W/d/fusion_reduce.0008.after_fusion.hlo" || fail "fusion dump has no kInput fusion"
grep -q "fusion(" "$W/d/fusion_reduce.0006.after_dce.hlo" && fail "dump before fusion already fused"
# every dump reads back and runs
for f in "$W"/d/*.hlo; do
  "$TPUCC" run "$f" --target=interp -O0 --random-inputs --output= || fail "dump $(basename "$f") does not run"
done

# --dump-after=REGEX filters by pass name.
"$TPUCC" opt "$G/fusion_reduce.hlo" --dump-dir="$W/e" --dump-after='^(fusion|layout)$' >/dev/null ||
  fail "dump-after run failed"
[ "$(ls "$W/e" | tr '\n' ' ')" = "fusion_reduce.0008.after_fusion.hlo fusion_reduce.0011.after_layout.hlo " ] ||
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

# transpose-folding on the backends: the folded dots give bitwise the values
# of the module without the pass. cpu --cpu-numerics=strict must equal the
# interp (the oracle's numerics); v3 with the pass must equal v3 without it
# and cpu --cpu-numerics=tpu (the v3 bits), and stay near the oracle.
# tf_big.hlo has MXU-sized operands (K = 130, N = 200: partial tiles).
nofold=simplify,constfold,cse,simplify,dce,fusion,multi-output-fusion,dce,layout
targets=$("$TPUCC" run --help 2>&1)
has_target() { grep -q "^  $1 " <<<"$targets"; }
cat >"$W/tf_big.hlo" <<'EOF'
HloModule transpose_fold_big

ENTRY main {
  a = f32[136,130] parameter(0)
  b = f32[200,130] parameter(1)
  bt = f32[130,200] transpose(b), dimensions={1,0}
  d = f32[136,200] dot(a, bt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  x = bf16[136,130] parameter(2)
  xt = bf16[130,136] transpose(x), dimensions={1,0}
  e = f32[136,200] dot(xt, b), lhs_contracting_dims={0}, rhs_contracting_dims={1}
  q = bf16[2,3,20,64] parameter(3)
  k = bf16[2,3,140,64] parameter(4)
  kt = bf16[2,3,64,140] transpose(k), dimensions={0,1,3,2}
  s = f32[2,3,20,140] dot(q, kt), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  ROOT r = (f32[136,200], f32[136,200], f32[2,3,20,140]) tuple(d, e, s)
}
EOF
[ "$("$TPUCC" opt "$W/tf_big.hlo" --explain 2>&1 >/dev/null | grep -c '^transpose-folding: .*: folded')" -eq 3 ] ||
  fail "tf_big.hlo: expected 3 folds"
for f in "$G"/transpose_fold*.hlo "$W/tf_big.hlo"; do
  b=$(basename "$f")
  tf_run() { "$TPUCC" run "$f" --random-inputs --print-max-elements=0 "$@"; }
  tf_run --target=interp >"$W/ti" 2>&1 || fail "$b: interp run"
  if has_target cpu; then
    tf_run --target=cpu --cpu-numerics=strict >"$W/tc" 2>&1 || fail "$b: cpu run"
    cmp -s "$W/ti" "$W/tc" || fail "$b: cpu (strict numerics) differs from interp"
  fi
  if has_target v3; then
    tf_run --target=v3 --reference=interp --atol=0.05 --rtol=0.02 >"$W/tv" 2>&1 ||
      fail "$b: v3 run or comparison with interp: $(tail -n 2 "$W/tv")"
    tf_run --target=v3 --passes="$nofold" >"$W/tv0" 2>&1 || fail "$b: v3 run without the pass"
    cmp -s "$W/tv" "$W/tv0" || fail "$b: v3 differs with and without transpose-folding"
    if has_target cpu; then
      tf_run --target=cpu --cpu-numerics=tpu >"$W/tct" 2>&1 || fail "$b: cpu (tpu numerics) run"
      cmp -s "$W/tv" "$W/tct" || fail "$b: v3 differs from cpu --cpu-numerics=tpu"
    fi
  fi
done

# The TPU backend's named steps (tpu-lower, tpu-buffers, tpu-emit): timed
# after the passes and dumped beside them, numbered on after the last pass.
if has_target v3; then
  cat >"$W/steps.hlo" <<'EOF'
HloModule steps

ENTRY main {
  a = f32[8,16] parameter(0)
  b = f32[16,4] parameter(1)
  ROOT d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
EOF
  for p in tpu-lower tpu-buffers tpu-emit; do
    grep -q "^  $p " <<<"$("$TPUCC" compile --list-passes)" || fail "--list-passes lacks the step $p"
  done
  "$TPUCC" compile "$W/steps.hlo" -o "$W/steps.tpub" --time-passes 2>"$W/st" || fail "steps: compile"
  for p in layout total tpu-lower tpu-buffers tpu-emit 'total \(tpu\)'; do
    grep -Eq "^  $p +[0-9.]+ ms" "$W/st" || fail "--time-passes lacks $p: $(cat "$W/st")"
  done
  [ "$(grep -Eo '^  (layout|tpu-lower|tpu-buffers|tpu-emit) ' "$W/st" | tr -d ' ' | tr '\n' ,)" = \
    "layout,tpu-lower,tpu-buffers,tpu-emit," ] || fail "step times out of order: $(cat "$W/st")"
  "$TPUCC" compile "$W/steps.hlo" -o "$W/steps_d.tpub" --dump-dir="$W/sd" --explain 2>/dev/null ||
    fail "steps: compile with dumps"
  cmp -s "$W/steps.tpub" "$W/steps_d.tpub" || fail "dumps changed the program"
  ls "$W/sd" >"$W/slist"
  [ "$(grep -c . "$W/slist")" -eq 15 ] || fail "expected 15 dumps (input, 11 passes, 3 steps): $(cat "$W/slist")"
  for s in 0012.after_tpu-lower 0013.after_tpu-buffers 0014.after_tpu-emit; do
    grep -qx "steps.$s.txt" "$W/slist" || fail "no dump steps.$s.txt: $(cat "$W/slist")"
  done
  L=$W/sd/steps.0012.after_tpu-lower.txt
  B=$W/sd/steps.0013.after_tpu-buffers.txt
  E=$W/sd/steps.0014.after_tpu-emit.txt
  # tpu-lower: the op with its code and FLOPs, then the matmul's tile plan
  grep -Eq '^d \(dot\): code \[0, [0-9]+\), 1024 flops, .*steps.hlo:6$' "$L" || fail "tpu-lower: no op line: $(cat "$L")"
  grep -q '^  plan: matmul 1x\[8,16\]x\[16,4\]: 1 row block(s) of 8 ' "$L" || fail "tpu-lower: no tile plan: $(cat "$L")"
  # tpu-buffers: the parameters first, held to the end, then the result
  grep -Eq '^  0x0000000000 +512  \[0, end\) +parameter a; ' "$B" || fail "tpu-buffers: parameter a: $(cat "$B")"
  grep -Eq '^  0x0000000200 +512  \[0, end\) +parameter b; ' "$B" || fail "tpu-buffers: parameter b: $(cat "$B")"
  grep -Eq '^  0x[0-9a-f]{10} +512  \[[0-9]+, end\) +result.0; d -> \(held\)$' "$B" || fail "tpu-buffers: result: $(cat "$B")"
  # tpu-emit: the signature, and an instruction mix of as many words as the code
  grep -Eq '^  result.0 +f32\[8,4\] 128 bytes at 0x[0-9a-f]+$' "$E" || fail "tpu-emit: result: $(cat "$E")"
  words=$(sed -n 's/^code \([0-9]*\) words;.*/\1/p' "$E")
  mix=$(sed -n '/^instructions by opcode:/,$p' "$E" | awk 'NR > 1 { n += $2 } END { print n }')
  [ -n "$words" ] && [ "$words" = "$mix" ] || fail "tpu-emit: $words code words, opcode mix sums to $mix"
  # --dump-after selects steps too; the numbering follows the passes run.
  "$TPUCC" compile "$W/steps.hlo" -o "$W/steps_e.tpub" --passes=dce --dump-dir="$W/se" \
    --dump-after='^tpu-buffers$' || fail "steps: dump-after"
  [ "$(ls "$W/se" | tr '\n' ' ')" = "steps.0003.after_tpu-buffers.txt " ] ||
    fail "steps dump-after gave: $(ls "$W/se" | tr '\n' ' ')"
  # run on a TPU target compiles through the same steps.
  "$TPUCC" run "$W/steps.hlo" --target=v3 --random-inputs --output= --time-passes 2>"$W/rt" >/dev/null ||
    fail "steps: run"
  grep -Eq '^  tpu-emit +[0-9.]+ ms' "$W/rt" || fail "run --time-passes lacks tpu-emit: $(cat "$W/rt")"
  # an unwritable dump directory is an error naming it, and no program is written
  "$TPUCC" compile "$W/steps.hlo" -O0 -o "$W/steps_f.tpub" --dump-dir=/proc/tpucc-no-such-dir 2>"$W/err"
  [ $? -eq 1 ] || fail "steps: unwritable dump dir: wrong exit status"
  grep -q "cannot create /proc/tpucc-no-such-dir" "$W/err" || fail "steps: dump dir message: $(cat "$W/err")"
  [ -e "$W/steps_f.tpub" ] && fail "steps: a program was written despite the dump error"
fi

echo "$failures failures"
[ "$failures" -eq 0 ]
