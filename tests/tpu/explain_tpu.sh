#!/bin/sh
# explain_tpu.sh TPUCC DIR: --explain names the condition an attention
# pattern failed, at the fusion pass and at the kernel, and the one a row
# kernel failed (DIR holds the modules: attention.hlo is softmax(Q K^T) V
# on f32[2,16,32], rows_ok.hlo x - rowsum(x) on f32[64,256]; the others
# change one thing; dot_bf16_epilogue.hlo is a bf16 layer whose biased,
# rectified f32 dot is cast to bf16; prologue_*.hlo feed dots through
# converts). Exit 0 when every check passes.
set -u
TPUCC=$1 D=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
# says MODULE TEXT: compiling MODULE for v3 with --explain prints TEXT.
says() {
  if "$TPUCC" compile "$D/$1" --target=v3 --explain -o "$T/p.tpub" >"$T/out" 2>&1 &&
    grep -qF -- "$2" "$T/out"; then
    echo "PASS $1: $2"
  else
    echo "FAIL $1: no '$2' in"; cat "$T/out"; fail=1
  fi
}
says attention.hlo "attention kernel: 2 problems of 16 queries x 16 keys (D 32, Dv 32)"
says attention_highest.hlo \
  "attention kernel not used: a dot asks for more than one MXU pass (f32 operands at a precision above DEFAULT)"
says attention_exp_escapes.hlo "fusion: o: attention not fused: the exp has users outside the softmax"
says rows_ok.hlo "row kernel: 64 rows of 256 elements"
says rows_param_init.hlo "row kernel not used for %fusion: %s.1: a reduce that is not an f32 row reduction of a full value over the row space from a constant"
# the mixed-precision layer cast(relu(dot + b), bf16): the convert joins the
# matmul's epilogue (one bf16 store), and its bits are the evaluator's
says dot_bf16_epilogue.hlo "the epilogue runs on the result tiles in VMEM before their one store"
if "$TPUCC" run "$D/dot_bf16_epilogue.hlo" --target=v3 --random-inputs --reference=interp --atol=0 \
  --rtol=0 --output= >"$T/out" 2>&1; then
  echo "PASS dot_bf16_epilogue.hlo: the evaluator's bits"
else
  echo "FAIL dot_bf16_epilogue.hlo against interp"; cat "$T/out"; fail=1
fi
# MXU prologues: a convert between f32 and bf16 read only by one-pass dots
# is not materialised (the lhs, the rhs, both under a bias/relu/cast
# epilogue, bf16 -> f32); refusals name the condition (another user, a
# dot of six passes, a convolution, three dots, a type the MXU does not
# take). Their bits against the evaluator in TPU numerics: tpu_fuse_convert.
FUSED="fused as the MXU prologue of its dots: not materialised, the matmul reads the"
says prologue_lhs.hlo "cx: convert f32 -> bf16 $FUSED f32 buffer and rounds its tiles to bf16 in VMEM"
says prologue_lhs.hlo "A f32, converted to bf16 in VMEM; B stored [K,N]"
says prologue_rhs.hlo "cw: convert f32 -> bf16 $FUSED f32 buffer"
says prologue_rhs.hlo "A bf16; B stored [K,N], f32 converted to bf16 in VMEM"
says prologue_both.hlo "cx: convert f32 -> bf16 $FUSED f32 buffer"
says prologue_both.hlo "cw: convert f32 -> bf16 $FUSED f32 buffer"
says prologue_both.hlo "A f32, converted to bf16 in VMEM; B stored [K,N], f32 converted to bf16 in VMEM; the epilogue runs on the result tiles in VMEM before their one store"
says prologue_upcast.hlo "cw: convert bf16 -> f32 $FUSED bf16 buffer as it lies (bf16 -> f32 -> bf16 is exact)"
says prologue_shared.hlo "cx: convert not fused as an MXU prologue: 'n' (negate) also uses it, so it is materialised"
says prologue_highest.hlo "cx: convert not fused as an MXU prologue: dot 'd' takes 6 bf16 passes (precision above DEFAULT): they split the converted value, not its operand, into bf16 parts"
says prologue_conv.hlo "cx: convert not fused as an MXU prologue: convolution 'c' gathers its patches from a bf16 buffer by DMA (it converts nothing in VMEM)"
says prologue_three.hlo "cw: convert not fused as an MXU prologue: 3 dots read it: one conversion through HBM (6 bytes per element, then 2 per dot) costs less than 3 f32 reads (4 bytes each)"
says prologue_s32.hlo "cx: convert not fused as an MXU prologue: a convert from f32 to s32: the MXU rounds f32 tiles to bf16 and reads bf16 as it lies, it takes no other type"
# convolution epilogues: bias, ReLU and the cast to bf16 on the result
# tiles of a strided, padded convolution; refused for an output that is
# not [batch, spatial..., feature] and for 8 output features (bits:
# tpu_fuse_convert)
says conv_epilogue.hlo "convolution with epilogue as 1 matmul [288, 72] x [72, 24] (K = 9 window positions x 8 features): patches gathered into VMEM by DMA, the epilogue applied to the result tiles before their one store"
says conv_epilogue.hlo "A gathered into VMEM by DMA (no patch matrix); B stored [K,N]; the epilogue runs on the result tiles in VMEM before their one store"
says conv_epilogue_nchw.hlo "epilogue not applied in the convolution's matmul: its output layout is not [batch, spatial..., feature] (the matmul's rows are scattered into it by a copy)"
says conv_epilogue_nchw.hlo "the convolution is lowered alone and the epilogue runs as a separate pass over its f32 result"
says conv_epilogue_narrow.hlo "epilogue not applied in the convolution's matmul: 8 output features fill 8 of each result tile's 128 lanes (fewer than 16): a separate pass over the flat result runs on fewer tiles"
# the refused patterns still run (op by op)
for m in attention_highest attention_exp_escapes rows_param_init; do
  if "$TPUCC" run "$D/$m.hlo" --target=v3 --random-inputs >"$T/out" 2>&1; then
    echo "PASS $m runs on v3"
  else
    echo "FAIL $m on v3"; cat "$T/out"; fail=1
  fi
done
exit $fail
