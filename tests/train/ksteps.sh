#!/bin/bash
# ksteps.sh TPUCC SRCDIR WORKDIR CASE: `tpucc train --steps-per-execution=K`
# (docs/training.md, "Steps per execution"): K steps in one device call run
# the single step's computation, so the same seed gives the same bits.
#   cpu       the MLP sample, cpu with strict numerics, 2 epochs of 10 steps:
#             K=4 (groups 4, 4 and a single-step remainder of 2) and K=5
#             against K=1: every step's loss (--loss-log) the same text, the
#             checkpoint after each run byte for byte, the epoch lines the same
#   replicas  the same with --replicas=2 on the cpu (the step's all-reduce
#             inside the loop's body), K=3 against K=1
#   v3        tests/train/tiny_mlp.tg on the emulated v3, 5 steps: K=4 (one
#             call of 4, one single step) against K=1, losses and checkpoints;
#             and on a v3-8 board as 8 replicas, K=2 against K=1 over 3 steps
#   interp    the tiny model on the evaluator, K=2 against K=1 over 3 steps
#   errors    K of 0, negative, not a number, too large: clear usage errors;
#             a NaN loss inside a group names its exact step and the last
#             finite loss; --emit-step writes the loop module
# Cases needing Fashion-MNIST (/usr/share/datasets/fashion-mnist) skip
# (exit 77) without it.
set -u
T=$1 SRC=$2 W=$3 CASE=$4
. "$SRC/tests/train/common.sh"
TINY=$SRC/tests/train/tiny_mlp.tg

# run NAME K MODEL ARGS...: trains with K steps per execution into $W/NAME.*
run() {
  local name=$1 k=$2 model=$3
  shift 3
  $T train "$model" --steps-per-execution=$k --seed=5 --quiet --loss-log="$W/$name.loss" \
    --checkpoint="$W/$name.npz" --metrics-json="$W/$name.json" "$@" > "$W/$name.out" 2>&1 ||
    { cat "$W/$name.out"; fail "$name: train --steps-per-execution=$k"; }
  cat "$W/$name.out"
}

# same A B STEPS: runs A and B gave the same losses, checkpoint and epoch lines.
same() {
  [ "$(wc -l < "$W/$1.loss")" = "$3" ] || fail "$1: $(wc -l < "$W/$1.loss") losses logged, expected $3"
  cmp "$W/$1.loss" "$W/$2.loss" || { paste "$W/$1.loss" "$W/$2.loss"; fail "$1 and $2: the losses differ"; }
  cmp "$W/$1.npz" "$W/$2.npz" || fail "$1 and $2: the checkpoints differ"
  a=$(grep '^epoch ' "$W/$1.out" | sed 's|  [0-9]* images/s.*||')
  b=$(grep '^epoch ' "$W/$2.out" | sed 's|  [0-9]* images/s.*||')
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "$1 and $2: epoch lines differ: '$a' and '$b'"
  grep -q '"train_loss"' "$W/$2.json" || fail "$2: no per-epoch train_loss in the metrics"
}

case $CASE in
cpu)
  need_data
  A=(--epochs=2 --steps-per-epoch=10 --batch=32 --test-examples=256 --target=cpu,numerics=strict --threads=2)
  run k1 1 "$MLP" "${A[@]}"
  run k4 4 "$MLP" "${A[@]}"
  run k5 5 "$MLP" "${A[@]}"
  same k1 k4 20
  same k1 k5 20
  # the losses are real ones: they change from step to step
  [ "$(sort -u "$W/k1.loss" | wc -l)" -gt 10 ] || fail "the losses do not change"
  ;;
replicas)
  need_data
  A=(--epochs=1 --steps-per-epoch=7 --batch=32 --test-examples=128 --target=cpu,numerics=strict --threads=2 --replicas=2)
  run r1 1 "$MLP" "${A[@]}"
  run r3 3 "$MLP" "${A[@]}"
  same r1 r3 7
  ;;
v3)
  need_data
  A=(--epochs=1 --steps-per-epoch=5 --test-examples=16 --target=v3)
  run v1 1 "$TINY" "${A[@]}"
  run v4 4 "$TINY" "${A[@]}"
  same v1 v4 5
  grep -q 'device [0-9.]* s (modelled)' "$W/v4.out" || fail "no modelled device time with K=4"
  # a board: 8 replicas on v3-8, the all-reduce inside the loop's body
  B=(--epochs=1 --steps-per-epoch=3 --test-examples=64 --target=v3-8 --replicas=8 --batch=64)
  run b1 1 "$TINY" "${B[@]}"
  run b2 2 "$TINY" "${B[@]}"
  same b1 b2 3
  ;;
interp)
  need_data
  A=(--epochs=1 --steps-per-epoch=3 --test-examples=8 --target=interp)
  run i1 1 "$TINY" "${A[@]}"
  run i2 2 "$TINY" "${A[@]}"
  same i1 i2 3
  ;;
errors)
  for k in 0 -2 four 2.5 1025; do
    $T train "$TINY" --steps-per-execution=$k > "$W/o" 2>&1
    expect_error "$W/o" $? 2 "error: --steps-per-execution: '$k' is not an integer in \[1, 1024\]"
  done
  need_data
  $T train "$MLP" --optimizer=sgd --lr=1e6 --steps-per-epoch=50 --test-examples=100 --steps-per-execution=4 > "$W/o" 2>&1
  expect_error "$W/o" $? 1 "error: the loss is NaN at step 3 (epoch 1, batch 3); the last finite loss was [0-9.e+]* at step 2"
  $T train "$TINY" --steps-per-execution=3 --steps-per-epoch=3 --test-examples=8 --quiet \
    --emit-step="$W/steps.hlo" > "$W/o" 2>&1 || { cat "$W/o"; fail "--emit-step"; }
  grep -q 'input_output_alias={ {1}: (0, {}, may-alias)' "$W/steps.hlo" || fail "the loop donates no state"
  grep -q ' while(' "$W/steps.hlo" || fail "no while loop in the emitted program"
  grep -q 'f32\[3\]' "$W/steps.hlo" || fail "no f32[3] of losses"
  grep -q 'dynamic-update-slice(' "$W/steps.hlo" || fail "no dynamic-update-slice of the losses"
  ;;
*)
  fail "unknown case $CASE"
  ;;
esac
echo PASS
