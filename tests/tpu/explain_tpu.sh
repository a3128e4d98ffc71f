#!/bin/sh
# explain_tpu.sh TPUCC DIR: --explain names the condition an attention
# pattern failed, at the fusion pass and at the kernel (DIR holds the
# modules: attention.hlo is softmax(Q K^T) V on f32[2,16,32]; the others
# change one thing). Exit 0 when every check passes.
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
# the refused patterns still run (op by op)
for m in attention_highest attention_exp_escapes; do
  if "$TPUCC" run "$D/$m.hlo" --target=v3 --random-inputs >"$T/out" 2>&1; then
    echo "PASS $m runs on v3"
  else
    echo "FAIL $m on v3"; cat "$T/out"; fail=1
  fi
done
exit $fail
