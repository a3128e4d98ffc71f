#!/usr/bin/env bash
# tests/llvm/cli_cpu.sh TPUCC SRCDIR: the CLI's CPU flags end to end.
#  - tpucc compile --target=cpu -o aot_model.o --emit-header=aot_model.h on
#    samples/aot/model.hlo, linked with `cc` into the sample's driver
#    (samples/aot/main.c), which checks values worked out by hand;
#  - tpucc run --target=cpu --threads=1 and --threads=2 print the same text;
#  - --cpu-numerics=tpu on f32 dots prints what --target=v3 prints (when the
#    TPU backend is built), and differs from native where bf16 matters;
#  - malformed flag values are usage errors (exit 2);
#  - the cpu options as a spec (--target=cpu,threads=N,numerics=M).
set -u
tpucc="$1"
src="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# 1. ahead of time through the CLI, linked by the C compiler at test time.
if ! "$tpucc" compile "$src/samples/aot/model.hlo" --target=cpu -o "$tmp/aot_model.o" \
    --emit-header="$tmp/aot_model.h"; then
  bad "tpucc compile --target=cpu"
elif ! grep -q 'aot_model_run' "$tmp/aot_model.h" || ! grep -q 'AOT_MODEL_SCRATCH_BYTES' "$tmp/aot_model.h"; then
  bad "header lacks aot_model_run / AOT_MODEL_SCRATCH_BYTES"
elif ! cc -std=c11 -I"$tmp" "$src/samples/aot/main.c" "$tmp/aot_model.o" -lm -o "$tmp/drv"; then
  bad "cc could not build the driver against the object and header"
else
  out="$("$tmp/drv")" || bad "driver: values differ from the hand-derived ones"
  [ "$out" = "r = {8.5 0 2 0.25; 3.75 0 3 0}, sum = {10.75, 6.75}" ] || bad "driver printed '$out'"
fi
# --symbol renames the entry; an -o without a C name needs one.
"$tpucc" compile "$src/samples/aot/model.hlo" --target=cpu -o "$tmp/x.o" --symbol=my_net \
  --emit-header="$tmp/x.h" && grep -q 'my_net_run' "$tmp/x.h" || bad "--symbol"
"$tpucc" compile "$src/samples/aot/model.hlo" --target=cpu -o "$tmp/9.o" 2>/dev/null
[ $? -eq 2 ] || bad "-o 9.o without --symbol should be a usage error"
"$tpucc" compile "$src/samples/aot/model.hlo" --emit-header="$tmp/y.h" 2>/dev/null
[ $? -eq 2 ] || bad "--emit-header without --target=cpu should be a usage error"

# 2. threads: a dot, a row reduction and elementwise ops, large enough to
# be split. (No transcendentals: the emulator's exp is not libm's, so
# --cpu-numerics=tpu matches v3 on dots and arithmetic, not on exp.)
cat > "$tmp/mm.hlo" <<'HLO'
HloModule mm
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[96,200] parameter(0)
  w = f32[200,72] parameter(1)
  d = f32[96,72] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  r = f32[96] reduce(d, z), dimensions={1}, to_apply=add
  h = f32[96,72] multiply(d, d)
  zb = f32[96,72] broadcast(z), dimensions={}
  m = f32[96,72] maximum(d, zb)
  e = f32[96,72] subtract(m, h)
  ROOT t = (f32[96,72], f32[96], f32[96,72]) tuple(d, r, e)
}
HLO
run() { "$tpucc" run "$tmp/mm.hlo" --random-inputs --seed=7 --print-max-elements=0 "$@"; }
t1="$(run --target=cpu --threads=1)" || bad "--threads=1"
t2="$(run --target=cpu --threads=2)" || bad "--threads=2"
[ -n "$t1" ] && [ "$t1" = "$t2" ] || bad "--threads=1 and --threads=2 differ"
# strict numerics equals the reference evaluator's text
s2="$(run --target=cpu --threads=2 --cpu-numerics=strict)" || bad "--cpu-numerics=strict"
ri="$(run --target=interp)" || bad "interp"
[ "$s2" = "$ri" ] || bad "--cpu-numerics=strict differs from --target=interp"
# the flag overrides the environment variable
e1="$(TPUCC_CPU_NUMERICS=native run --target=cpu --cpu-numerics=strict)"
[ "$e1" = "$ri" ] || bad "--cpu-numerics does not override TPUCC_CPU_NUMERICS"

# 3. TPU numerics on dots equal the emulator bit for bit.
if "$tpucc" run --help | grep -q '^  v3 '; then
  tp="$(run --target=cpu --cpu-numerics=tpu --threads=2)" || bad "--cpu-numerics=tpu"
  v3="$(run --target=v3)" || bad "--target=v3"
  [ -n "$tp" ] && [ "$tp" = "$v3" ] || bad "--cpu-numerics=tpu differs from --target=v3"
  [ "$tp" != "$s2" ] || bad "tpu numerics equal strict f32 (bf16 rounding not applied?)"
else
  echo "note: built without the TPU backend; --target=v3 comparison skipped"
fi

# 4. malformed values
for f in --threads=0 --threads=x --cpu-numerics=fast; do
  "$tpucc" run "$tmp/mm.hlo" --random-inputs --target=cpu "$f" >/dev/null 2>&1
  [ $? -eq 2 ] || bad "$f should be a usage error"
done
# 5. --cpu-numerics=strict gives the evaluator's bits, NaN included: a dot
# whose products and sums meet NaNs of both signs (inf*0 makes -nan on x86,
# inputs hold +nan), read back through bitcast-convert.
tokens=(inf -nan 0 nan -inf 1 2 -nan 0 inf -1 nan)
pat() { local n=$1 off=$2 s="" i; for ((i = 0; i < n; i++)); do s+="${tokens[$(((i * 7 + off) % 12))]} "; done; echo "$s"; }
for mkn in "2 3 2" "64 64 64"; do
  set -- $mkn
  printf 'HloModule nan\nENTRY main {\n  a = f32[%d,%d] parameter(0)\n  b = f32[%d,%d] parameter(1)\n  d = f32[%d,%d] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  ROOT r = s32[%d,%d] bitcast-convert(d)\n}\n' \
    "$1" "$2" "$2" "$3" "$1" "$3" "$1" "$3" >"$tmp/nan.hlo"
  A="${1}x${2}xf32=$(pat $(($1 * $2)) 0)" B="${2}x${3}xf32=$(pat $(($2 * $3)) 5)"
  want="$("$tpucc" run "$tmp/nan.hlo" --target=interp --input="$A" --input="$B" --print-max-elements=0)"
  got="$("$tpucc" run "$tmp/nan.hlo" --target=cpu --cpu-numerics=strict --input="$A" --input="$B" --print-max-elements=0)"
  [ -n "$want" ] && [ "$got" = "$want" ] || bad "strict ${1}x${2}x${3} dot with NaNs: bits differ from interp"
done

# ... and through a row reduction and elementwise ops on NaNs of both signs.
cat > "$tmp/nanred.hlo" <<'HLO'
HloModule nanred
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[8,64] parameter(0)
  y = f32[8,64] parameter(1)
  m = f32[8,64] multiply(x, y)
  z = f32[] constant(0)
  r = f32[8] reduce(m, z), dimensions={1}, to_apply=add
  t = f32[8,64] subtract(y, m)
  br = s32[8] bitcast-convert(r)
  bt = s32[8,64] bitcast-convert(t)
  ROOT o = (s32[8], s32[8,64]) tuple(br, bt)
}
HLO
A="8x64xf32=$(pat 512 0)" B="8x64xf32=$(pat 512 3)"
want="$("$tpucc" run "$tmp/nanred.hlo" --target=interp --input="$A" --input="$B" --print-max-elements=0)"
got="$("$tpucc" run "$tmp/nanred.hlo" --target=cpu --cpu-numerics=strict --input="$A" --input="$B" --print-max-elements=0)"
[ -n "$want" ] && [ "$got" = "$want" ] || bad "strict reduce and elementwise ops with NaNs: bits differ from interp"

# 6. strict at -O0 (nothing folded before LLVM) gives the evaluator's bits
# on constants and signalling NaNs: a libm call on a constant is the host
# libm's, not LLVM's folding (tanh(-0.525620937) differed in the last bit);
# a NaN made by an invalid operation of constants has the host's sign
# (remainder(inf, 0.5) was +nan); floor, ceil and round-nearest-even keep a
# signalling NaN's bits (0x7F800001 was quieted).
cat > "$tmp/strict_const.hlo" <<'HLO'
HloModule strict_const
ENTRY main {
  c = f32[2] constant({-0.525620937, -1.3})
  t = f32[2] tanh(c)
  a = f32[2] atan2(c, t)
  x = f32[4] constant({inf, 1, 0, inf})
  y = f32[4] constant({0.5, 0.5, 0, inf})
  r = f32[4] remainder(x, y)
  d = f32[4] divide(y, x)
  s = f32[4] subtract(x, y)
  m = f32[4] multiply(d, x)
  q = s32[3] parameter(0)
  p = f32[3] bitcast-convert(q)
  f = f32[3] floor(p)
  e = f32[3] ceil(p)
  n = f32[3] round-nearest-even(p)
  all = f32[29] concatenate(t, a, r, d, s, m, f, e, n), dimensions={0}
  ROOT b = s32[29] bitcast-convert(all)
}
HLO
Q="3xs32=2139095041 -8388607 1069547520" # signalling NaNs of both signs, 1.5
want="$("$tpucc" run "$tmp/strict_const.hlo" -O0 --target=interp --input="$Q" --print-max-elements=0)"
got="$("$tpucc" run "$tmp/strict_const.hlo" -O0 --target=cpu --cpu-numerics=strict --input="$Q" --print-max-elements=0)"
[ -n "$want" ] && [ "$got" = "$want" ] || bad "strict -O0 libm of constants, NaNs of constants, rounding of signalling NaNs: '$got', interp '$want'"

# 7. TPU numerics at -O0 (at -O2 simplify drops the identity convert, a
# bug of the passes, not of this backend): convert bf16 -> bf16 quiets a signalling NaN (0xFF81 ->
# 0xFFC1), as the evaluator's TPU mode and v3 do (it kept 0xFF81).
printf 'HloModule cvt\nENTRY main {\n  p = bf16[2] parameter(0)\n  c = bf16[2] convert(p)\n  ROOT t = (bf16[2]) tuple(c)\n}\n' >"$tmp/cvt.hlo"
printf '\x81\xff\x80\x3f' >"$tmp/snan.bin"
printf '\xc1\xff\x80\x3f' >"$tmp/qnan.bin"
"$tpucc" run "$tmp/cvt.hlo" -O0 --target=cpu --cpu-numerics=tpu --input=2xbf16=@"$tmp/snan.bin" \
  --output=@"$tmp/cvt.bin" && cmp -s "$tmp/cvt.bin" "$tmp/qnan.bin" ||
  bad "tpu -O0 convert bf16 -> bf16 of a signalling NaN: $(od -An -tx2 "$tmp/cvt.bin" 2>&1)"

# 8. f16 arithmetic meeting NaNs of both signs and invalid operations
# (1 - nan gave -nan: LLVM turned x - c into x + -c). Strict numerics keep
# the evaluator's default semantics, NaN signs included; TPU numerics are
# the f32 sequences rounded to f16 with canonical NaNs (docs/numerics.md),
# so the cpu's numerics=tpu gives the emulator's bits.
cat > "$tmp/f16nan.hlo" <<'HLO'
HloModule f16nan
ENTRY main {
  p = f16[16] parameter(0)
  c = f16[16] constant({inf, -nan, 0, nan, -inf, 1, -nan, 0, inf, nan, -1, nan, -inf, -nan, 2, nan})
  s = f16[16] subtract(p, c)
  a = f16[16] add(c, p)
  m = f16[16] multiply(p, c)
  d = f16[16] divide(c, p)
  ROOT t = (f16[16], f16[16], f16[16], f16[16]) tuple(s, a, m, d)
}
HLO
f16run() {
  local o=$1
  shift
  "$tpucc" run "$tmp/f16nan.hlo" -O0 --input="16xf16=inf nan -nan 0 inf 1 nan -inf 0 -nan inf 1 -inf nan 3 -nan" \
    "$@" --output=@"$tmp/$o.1.bin" --output=@"$tmp/$o.2.bin" --output=@"$tmp/$o.3.bin" --output=@"$tmp/$o.4.bin" &&
    cat "$tmp/$o".[1-4].bin >"$tmp/$o.bin"
}
f16run want --target=interp && f16run got --target=cpu --cpu-numerics=strict &&
  cmp -s "$tmp/want.bin" "$tmp/got.bin" || bad "strict -O0 f16 arithmetic on NaNs: bits differ from interp"
f16run want --target=v3 && f16run got --target=cpu --cpu-numerics=tpu &&
  cmp -s "$tmp/want.bin" "$tmp/got.bin" || bad "tpu -O0 f16 arithmetic on NaNs: bits differ from the v3 emulator"

# 9. Called computations nested deeper than the cpu's 16 levels: a located
# error at the calling fusion (was "f0: calls nest too deeply", no place).
{
  echo "HloModule nest"
  echo "f0 {"; echo "  p = f32[4] parameter(0)"; echo "  ROOT r = f32[4] negate(p)"; echo "}"
  for i in $(seq 1 16); do
    echo "f$i {"; echo "  p = f32[4] parameter(0)"
    echo "  ROOT r = f32[4] fusion(p), kind=kLoop, calls=f$((i - 1))"; echo "}"
  done
  echo "ENTRY e {"; echo "  p = f32[4] parameter(0)"
  echo "  ROOT r = f32[4] fusion(p), kind=kLoop, calls=f16"; echo "}"
} >"$tmp/nest.hlo"
"$tpucc" run "$tmp/nest.hlo" --target=cpu --input=4xf32="1 2 3 4" 2>"$tmp/nest.err" >/dev/null
rc=$?
{ [ $rc -eq 1 ] && grep -q "nest.hlo:8:8: r.1 (fusion): computations nested deeper than 16 (calling f0)" "$tmp/nest.err"; } ||
  bad "cpu nesting over 16: exit $rc, $(cat "$tmp/nest.err")"
sed -i 's/calls=f16$/calls=f15/' "$tmp/nest.hlo"
[ "$("$tpucc" run "$tmp/nest.hlo" --target=cpu --input=4xf32="1 2 3 4")" = "4xf32=-1 -2 -3 -4" ] ||
  bad "cpu nesting of 16 levels does not run"

# 10. cpu options as a spec: --target=cpu,threads=N,numerics=M is what the
# flags ask; the flags append to the spec (the later key wins); a bad spec
# is a usage error. TPUCC_CPU_THREADS is the default --stats reports too
# (it reported one thread per CPU, ignoring the variable).
sp="$(run --target=cpu,threads=2,numerics=strict)" || bad "--target=cpu,threads=2,numerics=strict"
[ "$sp" = "$ri" ] || bad "--target=cpu,numerics=strict differs from --target=interp"
sp="$(run --target=cpu,numerics=native --cpu-numerics=strict)" || bad "spec with --cpu-numerics"
[ "$sp" = "$ri" ] || bad "--cpu-numerics=strict does not override the spec's numerics=native"
for t in cpu,threads=0 cpu,numerics=fast cpu,fast=1 cpu,threads; do
  "$tpucc" run "$tmp/mm.hlo" --random-inputs --target="$t" >/dev/null 2>"$tmp/spec.err"
  rc=$?
  { [ $rc -eq 2 ] && grep -q "error: --target $t: cpu: " "$tmp/spec.err"; } ||
    bad "--target=$t: exit $rc, $(cat "$tmp/spec.err")"
done
st="$(TPUCC_CPU_THREADS=7 run --target=cpu --stats 2>&1 >/dev/null)" || bad "--stats with TPUCC_CPU_THREADS"
echo "$st" | grep -q "^  threads *7$" || bad "--stats ignores TPUCC_CPU_THREADS=7: $st"
st="$(run --target=cpu,threads=3,numerics=strict --stats 2>&1 >/dev/null)" || bad "--stats with a spec"
echo "$st" | grep -q "^  threads *3$" && echo "$st" | grep -q "^  numerics *strict$" ||
  bad "--stats does not report the spec's options: $st"
# the kernels' vector width follows the host CPU the program is compiled for
lanes=8
grep -qw avx512f /proc/cpuinfo && lanes=16
echo "$st" | grep -q "^  host ISA          .*: f32 GEMM and convolution micro-kernels on $lanes-lane vectors" ||
  bad "--stats does not name the kernels' ISA ($lanes lanes on this host): $st"

[ $fail -eq 0 ] && echo "cli_cpu: all checks passed"
exit $fail
