#!/bin/sh
# cli_tpu.sh TPUCC DIR: the TPU backend through the CLI: compile to .tpub
# and assembly, run the .tpub, --stats / --stats-json keys, --precision,
# --memory-report, override targets, and the located error of an
# unsupported op. Exit 0 when every check passes.
set -u
TPUCC=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() { # check DESCRIPTION COMMAND...
  d=$1
  shift
  if "$@" >"$T/out" 2>"$T/err"; then echo "PASS $d"; else
    echo "FAIL $d"; cat "$T/out" "$T/err"; fail=1
  fi
}
cat >"$T/mm.hlo" <<'H'
HloModule mm
ENTRY e {
  %x = f32[33,130] parameter(0)
  %y = f32[130,20] parameter(1)
  ROOT %d = f32[33,20] dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
H
cat >"$T/sin.hlo" <<'H'
HloModule s
ENTRY e {
  %x = s32[4] parameter(0)
  ROOT %s = s32[4] power(%x, %x)
}
H
check "compile to .tpub" "$TPUCC" compile "$T/mm.hlo" --target=v2 -o "$T/mm.tpub"
check "the .tpub is a verified program" "$TPUCC" dump-module "$T/mm.tpub"
check "run the .tpub" "$TPUCC" run "$T/mm.tpub" --random-inputs --output=@"$T/a.npy"
check "same result as compiling and running" "$TPUCC" run "$T/mm.hlo" --target=v2 \
  --random-inputs --expected-output=@"$T/a.npy" --atol=0 --rtol=0
check "emit assembly" "$TPUCC" compile "$T/mm.hlo" --emit=asm -o "$T/mm.s"
check "assembly mentions the MXU" grep -q "mpush" "$T/mm.s"
check "assembly assembles" "$TPUCC" asm "$T/mm.s" -o "$T/mm2.tpub"
check "stats" sh -c "'$TPUCC' run '$T/mm.hlo' --random-inputs --stats --output= 2>'$T/stats'"
check "stats name the precision" grep -q "bf16 (1 pass" "$T/stats"
check "stats show MXU utilisation" grep -q "MXU useful" "$T/stats"
# the emulator's MXU fast path for this host's CPU (/proc/cpuinfo's flags)
if grep -qw avx512f /proc/cpuinfo; then kern=avx512
elif grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then kern=avx2
else kern=portable; fi
[ "$(uname -m)" = x86_64 ] || kern=portable
check "stats name the host's MXU kernel ($kern)" grep -q "^  host MXU kernel   $kern (" "$T/stats"
check "stats json" "$TPUCC" run "$T/mm.hlo" --random-inputs --stats-json="$T/s.json" --output=
for k in cycles seconds flops mxu_busy_fraction mxu_useful_fraction hbm_bytes compile_seconds host_seconds mxu_host_kernel; do
  check "stats json key $k" grep -q "\"$k\": " "$T/s.json"
done
check "highest precision close to the evaluator" "$TPUCC" run "$T/mm.hlo" --random-inputs \
  --precision=highest --reference=interp --atol=1e-4 --rtol=1e-4 --output=
check "highest precision named" sh -c "'$TPUCC' run '$T/mm.hlo' --random-inputs --precision=highest --stats --output= 2>&1 | grep -q bf16x6"
check "override target" "$TPUCC" run "$T/mm.hlo" --target=v3,mxu=64x64,vmem=8MiB --random-inputs \
  --reference=interp --atol=0.05 --rtol=0.05 --output=
check "memory report" sh -c "'$TPUCC' compile '$T/mm.hlo' --memory-report -o '$T/m.tpub' 2>&1 | grep -q 'HBM peak'"
cat >"$T/big.hlo" <<'H'
HloModule big
ENTRY e {
  %x = f32[1024,1024] parameter(0)
  ROOT %y = f32[1024,1024] add(%x, %x)
}
H
if "$TPUCC" compile "$T/big.hlo" --target=v3,hbm=4MiB -o "$T/big.tpub" >"$T/out" 2>"$T/err"; then
  echo "FAIL a model larger than HBM compiled"; fail=1
elif grep -q "error: tpu: .*HBM exhausted: a buffer of [0-9]* bytes does not fit" "$T/err"; then
  echo "PASS a model larger than HBM is a compile error saying what did not fit"
else echo "FAIL HBM message"; cat "$T/err"; fail=1; fi
if "$TPUCC" run "$T/sin.hlo" --random-inputs >"$T/out" 2>"$T/err"; then
  echo "FAIL unsupported op accepted"; fail=1
elif grep -q "sin.hlo:4:.*error: tpu: power" "$T/err"; then echo "PASS unsupported op is a located error"
else echo "FAIL unsupported op message"; cat "$T/err"; fail=1; fi
# Fused attention (-O2: passes/fusion.c's kCustom fusion, backend/tpu/
# attention.c): Q's tile is the MXU's transposed weight load (mwtt), the
# scores never go through HBM (HBM traffic about that of Q, K, V and the
# result), and the values equal the unfused program's (-O1) bit for bit.
cat >"$T/attn.tg" <<'G'
graph main(q: f32[2,4,130,64], k: f32[2,4,130,64], v: f32[2,4,130,64]) -> f32[2,4,130,64] {
  return scaled_dot_product_attention(q, k, v);
}
G
check "attention compiles to one kernel with mwtt" sh -c \
  "'$TPUCC' compile '$T/attn.tg' --target=v3 --emit=asm -o - | grep -q mwtt"
check "attention unfused at -O1" "$TPUCC" run "$T/attn.tg" --target=v3 -O1 --random-inputs \
  --output=@"$T/attn.npy"
check "attention fused equals unfused bit for bit" "$TPUCC" run "$T/attn.tg" --target=v3 \
  --random-inputs --expected-output=@"$T/attn.npy" --atol=0 --rtol=0
# Q, K, V and the result are 4 x 266240 bytes; the f32 scores alone
# would be 540800 bytes more each way.
"$TPUCC" run "$T/attn.tg" --target=v3 --random-inputs --output= --stats-json="$T/attn.json" \
  >/dev/null 2>&1
hbm=$(sed -n 's/.*"hbm_bytes": *\([0-9]*\).*/\1/p' "$T/attn.json")
check "attention scores stay in VMEM (HBM $hbm bytes)" test "${hbm:-0}" -gt 0 -a "${hbm:-0}" -lt 1300000
# A ResNet 3x3 convolution (batch 8, 56x56, 64->64, bf16) is modelled
# at 141,915 cycles on v3; the matmul's cross-block prefetch once applied
# to the patch-gathered A panels of convolutions too and took it to 232,477
# (bench/suite.py's ResNet-50 rows). Deterministic: a ceiling, not a timing.
cat >"$T/c3.tg" <<'G'
graph main(x: bf16[8,56,56,64], k: bf16[3,3,64,64]) -> f32[8,56,56,64] {
  return conv2d(x, k, strides=1, padding=1, preferred_type=f32);
}
G
"$TPUCC" run "$T/c3.tg" --target=v3 --random-inputs --output= --stats-json="$T/c3.json" >/dev/null 2>&1
cyc=$(sed -n 's/.*"cycles": *\([0-9]*\).*/\1/p' "$T/c3.json")
check "3x3 convolution within its modelled cycles ($cyc <= 150000)" test "${cyc:-0}" -gt 0 -a "${cyc:-999999}" -le 150000
# A weight stored [N, K] (contracting dim last) is loaded into the MXU
# with the transposed weight load: the same modelled cycles as the same
# dot with the weight stored [K, N] (5,038 on v3), where a transpose
# staged in HBM took it to 6,747. Deterministic: an equality, not a timing.
cat >"$T/wkn.hlo" <<'G'
HloModule wkn
ENTRY main {
  a = f32[512,256] parameter(0)
  b = f32[256,384] parameter(1)
  ROOT d = f32[512,384] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
G
sed -e 's/f32\[256,384\] parameter/f32[384,256] parameter/' -e 's/rhs_contracting_dims={0}/rhs_contracting_dims={1}/' \
  "$T/wkn.hlo" >"$T/wnk.hlo"
for w in wkn wnk; do
  "$TPUCC" run "$T/$w.hlo" --target=v3 --random-inputs --output= --stats-json="$T/$w.json" >/dev/null 2>&1
done
ckn=$(sed -n 's/.*"cycles": *\([0-9]*\).*/\1/p' "$T/wkn.json")
cnk=$(sed -n 's/.*"cycles": *\([0-9]*\).*/\1/p' "$T/wnk.json")
check "weight stored [N,K] as fast as [K,N] ($cnk, $ckn cycles)" test "${ckn:-0}" -gt 0 -a "${cnk:-1}" = "${ckn:-0}"
# --explain: the lowering's tiling decisions after the passes' lines, one
# "tiling: OP: why" line each (run and compile), refusals included.
ex() { # ex FILE PATTERN ARGS...: tpucc ARGS --explain prints a line matching PATTERN
  f=$1 pat=$2
  shift 2
  "$TPUCC" "$@" --explain >/dev/null 2>"$T/ex.err" && grep -q "$pat" "$T/ex.err"
}
check "explain: weight [N,K] loaded transposed" \
  ex "$T/wnk.hlo" '^tiling: d: .*B stored \[N,K\], loaded transposed (mwtt)' run "$T/wnk.hlo" \
  --random-inputs --output=
check "explain: dot operands as they lie" \
  ex "$T/wnk.hlo" '^tiling: d: dot, one bf16 pass: lhs read as it lies.*rhs read as it lies (\[batch, N, K\])' \
  run "$T/wnk.hlo" --random-inputs --output=
check "explain: K streamed in chunks when VMEM is small" \
  ex "$T/wkn.hlo" '^tiling: d: matmul 1x\[512,256\]x\[256,384\]: .*streamed in chunks' run "$T/wkn.hlo" \
  --target='v2,vmem=192KiB' --random-inputs --output=
check "explain: compile shows the convolution's patch view" \
  ex "$T/c3.tg" 'convolution as 1 matmul(s) \[25088, 576\] x \[576, 64\].*patches gathered into VMEM by DMA' \
  compile "$T/c3.tg" --emit=tpub -o "$T/c3.tpub"
check "explain: HIGHEST splits into six passes" \
  ex "$T/wkn.hlo" '^tiling: d: dot at HIGHEST: 6 bf16 passes' run "$T/wkn.hlo" --precision=highest \
  --random-inputs --output=
check "explain: no lines without --explain" sh -c "\"$TPUCC\" run \"$T/wnk.hlo\" --random-inputs --output= 2>&1 | grep -c tiling: | grep -qx 0"
# Projections feeding the fused attention store bf16 (lower_bf16_store:
# the kernel reads bf16 Q, K, V straight into its MXU tiles) and its result
# feeds a dot (stored bf16 too): the same bits as the unfused -O1 program.
cat >"$T/proj.tg" <<'G'
graph main(x: f32[2,130,128], wq: f32[128,128], wk: f32[128,128], wv: f32[128,128],
           wo: f32[128,128]) -> f32[2,130,128] {
  let q = transpose(reshape(x @ wq, [2, 130, 2, 64]), perm=[0, 2, 1, 3]);
  let k = transpose(reshape(x @ wk, [2, 130, 2, 64]), perm=[0, 2, 1, 3]);
  let v = transpose(reshape(x @ wv, [2, 130, 2, 64]), perm=[0, 2, 1, 3]);
  let o = reshape(transpose(scaled_dot_product_attention(q, k, v), perm=[0, 2, 1, 3]), [2, 130, 128]);
  return x + o @ wo;
}
G
check "projected attention unfused at -O1" "$TPUCC" run "$T/proj.tg" --target=v3 -O1 --random-inputs \
  --output=@"$T/proj.npy"
check "projected attention fused, bf16 Q/K/V/O, equals unfused bit for bit" "$TPUCC" run \
  "$T/proj.tg" --target=v3 --random-inputs --expected-output=@"$T/proj.npy" --atol=0 --rtol=0
# A bitcast-convert of a computed value as the result (its operand computed
# in registers, no buffer to alias), from .hlo and from .tg: the
# evaluator's bits on v3.
cat >"$T/bc.hlo" <<'H'
HloModule m
ENTRY e {
  p0 = f32[4] parameter(0)
  n = f32[4] negate(p0)
  ROOT r = s32[4] bitcast-convert(n)
}
H
printf 'graph main(x: f32[4]) -> s32[4] {\n  return bitcast_convert(-x, s32);\n}\n' >"$T/bc.tg"
for f in bc.hlo bc.tg; do
  check "bitcast-convert root of a computed value ($f) on v3" "$TPUCC" run "$T/$f" \
    --input=4xf32="1 -2 3 -4" --expected-output=4xs32="-1082130432 1073741824 -1069547520 1082130432" \
    --atol=0 --rtol=0
done
# --max-cycles: a program that loops stops at the limit, exit 1, with the
# limit and the cycle reached in the message (a .tpub and a module); a
# usage error off TPU targets and for N < 1; documented in --help.
cat >"$T/loop.s" <<'S'
.target v3
.hbm 1024
.param x f32[4] @0
.result y f32[4] @512
top:
        jmp top
S
fails_with() { # fails_with STATUS PATTERN COMMAND...: exit STATUS, stderr matches PATTERN
  want=$1 pat=$2
  shift 2
  "$@" >"$T/o" 2>"$T/e"
  got=$?
  [ "$got" = "$want" ] && grep -q -- "$pat" "$T/e" || { echo "exit $got:"; cat "$T/e"; return 1; }
}
check "assemble a loop" "$TPUCC" asm "$T/loop.s" -o "$T/loop.tpub"
check "--max-cycles stops a loop" fails_with 1 'stopped at its cycle limit: .* at cycle 100001: cycle limit of 100000 reached' \
  "$TPUCC" run "$T/loop.tpub" --random-inputs --max-cycles=100000
check "--max-cycles on a module" fails_with 1 'at cycle [0-9]*: cycle limit of 5 reached' \
  "$TPUCC" run "$T/bc.hlo" --random-inputs --max-cycles=5
check "--max-cycles large enough runs" "$TPUCC" run "$T/bc.hlo" --random-inputs --max-cycles=100000
check "--max-cycles off TPU targets" fails_with 2 "max-cycles applies to TPU targets" \
  "$TPUCC" run "$T/bc.hlo" --random-inputs --max-cycles=5 --target=interp
check "--max-cycles=0" fails_with 2 "max-cycles: '0' is not an integer" \
  "$TPUCC" run "$T/bc.hlo" --random-inputs --max-cycles=0
check "--max-cycles in --help" sh -c "'$TPUCC' run --help | grep -q -- '--max-cycles=N'"
# A .tpub on a target that is not a TPU: a usage error naming the TPU targets.
check "a .tpub on interp" fails_with 2 "mm.tpub is a compiled TPU program: it runs only on a TPU target (v2, v3" \
  "$TPUCC" run "$T/mm.tpub" --random-inputs --target=interp
check "a directory named .tpub" fails_with 2 "d.tpub: is a directory" sh -c "mkdir -p '$T/d.tpub' && '$TPUCC' run '$T/d.tpub' --random-inputs"
# A .tpub signature holds 12 dimensions (the IR's limit): a rank-12
# parameter and result compile, round-trip through the file and run; the
# parser refuses rank 13 with a located error.
cat >"$T/rank12.hlo" <<'S'
HloModule r12
ENTRY e {
  p = f32[1,2,1,1,1,1,1,1,1,1,1,3] parameter(0)
  ROOT n = f32[1,2,1,1,1,1,1,1,1,1,1,3] negate(p)
}
S
check "a rank-12 parameter compiled for v3" "$TPUCC" compile "$T/rank12.hlo" --target=v3 -o "$T/rank12.tpub"
check "the rank-12 .tpub runs" "$TPUCC" run "$T/rank12.tpub" --random-inputs --output=@"$T/r12.npy"
check "as the evaluator" "$TPUCC" run "$T/rank12.hlo" --target=interp --random-inputs \
  --expected-output=@"$T/r12.npy" --atol=0 --rtol=0
cat >"$T/rank13.hlo" <<'S'
HloModule r13
ENTRY e {
  ROOT p = f32[1,1,1,1,1,1,1,1,1,1,1,1,2] parameter(0)
}
S
check "a rank-13 parameter is a located error" fails_with 2 "rank13.hlo:3:12: error: rank 13 exceeds the maximum of 12" \
  "$TPUCC" compile "$T/rank13.hlo" --target=v3 -o "$T/rank13.tpub"
check "no partial .tpub left" test ! -e "$T/rank13.tpub"
# constfold folds in the compile target's numerics: a constant-only sine
# has the vector unit's bits (vmath_sinf) at -O2 as at -O0 on v3, and the
# default evaluator's on interp at both levels.
cat >"$T/cfold.hlo" <<'S'
HloModule cfold
ENTRY e {
  c = f32[3] constant({0.103200056, 0.115700267, 1})
  ROOT s = f32[3] sine(c)
}
S
for lvl in -O0 -O2; do
  check "constant sine on v3 at $lvl: the TPU's bits" sh -c "'$TPUCC' run '$T/cfold.hlo' --target=v3 $lvl | grep -qx '3xf32=0.103016965 0.1154423 0.84147096'"
  check "constant sine on interp at $lvl: the evaluator's bits" sh -c "'$TPUCC' run '$T/cfold.hlo' --target=interp $lvl | grep -qx '3xf32=0.10301697 0.115442306 0.84147096'"
done
# convert bf16 -> bf16 rounds, so a signalling NaN (0xFF81) leaves quiet
# (0xFFC1) on v3 as in the evaluator, also when the value stays in
# registers (converted on to f32), at -O0 and at -O2 (simplify keeps it).
cat >"$T/snan.hlo" <<'S'
HloModule snan
ENTRY e {
  p = bf16[2] parameter(0)
  c = bf16[2] convert(p)
  w = f32[2] convert(c)
  ROOT r = s32[2] bitcast-convert(w)
}
S
printf '\201\377\200\077' >"$T/snan.bin"
for t in v3 interp; do
  for lvl in -O0 -O2; do
    check "convert bf16 -> bf16 quiets a signalling NaN on $t at $lvl" sh -c "'$TPUCC' run '$T/snan.hlo' --target=$t $lvl --input=2xbf16=@'$T/snan.bin' | grep -qx '2xs32=-4128768 1065353216'"
  done
done
cat >"$T/ar.hlo" <<'H'
HloModule ar, replica_count=8
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[1000] parameter(0)
  ROOT r = f32[1000] all-reduce(x), replica_groups={}, to_apply=add
}
H
check "explain: all-reduce of 4000 bytes over 8 cores: the cost model picks the direct exchange" \
  ex "$T/ar.hlo" '^tiling: r: all-reduce over 8 replicas in groups of up to 8: direct exchange (each chunk straight to its owner and back) (the cost model.s choice: ring [0-9]*, direct [0-9]* cycles), 4000 bytes, chunks of up to 500 bytes' \
  compile "$T/ar.hlo" --target=v3-8 --emit=tpub -o "$T/ar.tpub"
check "explain: --all-reduce=ring forces the ring" \
  ex "$T/ar.hlo" '^tiling: r: all-reduce over 8 replicas in groups of up to 8: ring reduce-scatter then all-gather, 4000 bytes, chunks of up to 500 bytes' \
  compile "$T/ar.hlo" --target=v3-8 --all-reduce=ring --emit=tpub -o "$T/ar.tpub"
check "explain: --all-reduce=ps selects the parameter server" \
  ex "$T/ar.hlo" '^tiling: r: all-reduce over 8 replicas in groups of up to 8: parameter server' \
  compile "$T/ar.hlo" --target=v3-8 --all-reduce=ps --emit=tpub -o "$T/ar.tpub"
sed 's/replica_groups={}/replica_groups={{0,2,4,6},{1,3,5,7}}/' "$T/ar.hlo" >"$T/ar_groups.hlo"
check "--all-reduce=direct refuses listed groups, located" fails_with 2 \
  "ar_groups.hlo:9:8: error: tpu: all-reduce: direct exchange runs over one group of every replica in order" \
  "$TPUCC" compile "$T/ar_groups.hlo" --target=v3-8 --all-reduce=direct --emit=tpub -o "$T/ar.tpub"
check "--rank-outputs refuses --stats-json (the whole run's)" fails_with 2 \
  "--rank-outputs: --stats-json describes the whole run" \
  "$TPUCC" run "$T/ar.hlo" --target=v3-8 --random-inputs --rank-outputs --stats-json="$T/r.json"
check "--all-reduce takes auto, ring, direct or ps" fails_with 2 "--all-reduce: 'tree' is not auto, ring, direct or ps" \
  "$TPUCC" compile "$T/ar.hlo" --target=v3-8 --all-reduce=tree --emit=tpub -o "$T/ar.tpub"
check "a module for 8 replicas compiles for v3-8,ncores=4 only when it says 4" fails_with 2 \
  'module asks for 8 replicas (replica_count); target v3-8,ncores=4 runs 4' \
  "$TPUCC" compile "$T/ar.hlo" --target=v3-8,ncores=4 --emit=tpub -o "$T/ar.tpub"
sed 's/replica_count=8/replica_count=4/' "$T/ar.hlo" >"$T/ar4.hlo"
check "a module for 4 replicas does not compile for the 8 cores of v3-8" fails_with 2 \
  'module asks for 4 replicas (replica_count); target v3-8 runs 8 cores, one replica each (override ncores=4)' \
  "$TPUCC" compile "$T/ar4.hlo" --target=v3-8 --emit=tpub -o "$T/ar.tpub"
check "a module for 4 replicas compiles for v3-8,ncores=4" \
  "$TPUCC" compile "$T/ar4.hlo" --target=v3-8,ncores=4 --emit=tpub -o "$T/ar.tpub"
check "a module for 8 replicas does not compile for one core" fails_with 2 \
  'module asks for 8 replicas (replica_count); target v3 runs 1' \
  "$TPUCC" compile "$T/ar.hlo" --target=v3 --emit=tpub -o "$T/ar.tpub"
sed -e 's/x = f32\[1000\]/x = f32[16]/' \
  -e 's/ROOT r = .*/ROOT r = f32[4] reduce-scatter(x), replica_groups={{0,2,4,6},{1,3,5,7}}, dimensions={0}, to_apply=add/' \
  "$T/ar.hlo" >"$T/rs.hlo"
check "a reduce-scatter over listed halves is a located error on v3-8" fails_with 2 \
  'rs.hlo:9:8: error: tpu: reduce-scatter: the TPU backend runs it over every replica in order' \
  "$TPUCC" compile "$T/rs.hlo" --target=v3-8 --emit=tpub -o "$T/rs.tpub"
exit $fail
