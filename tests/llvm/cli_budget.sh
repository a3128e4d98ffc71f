#!/usr/bin/env bash
# tests/llvm/cli_budget.sh TPUCC: the work and memory budget (ir/budget.c)
# on every target the build has (interp, cpu, v3): modules asking for
# runaway work or memory are refused at once, exit 1, with the
# instruction's location; an allocation the host cannot satisfy is an error
# with exit 1, never an abort.
set -u
tpucc="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

targets="interp cpu"
"$tpucc" run --help | grep -q '^  v3 ' && targets="$targets v3"

add='add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
'
# an iota of 2^40 elements reduced to a scalar
printf 'HloModule iota_big\n%s\nENTRY main {\n  i = f32[1099511627776] iota(), iota_dimension=0\n  z = f32[] constant(0)\n  ROOT r = f32[] reduce(i, z), dimensions={0}, to_apply=add\n}\n' "$add" >"$tmp/iota_big.hlo"
# a reduce-window with a 2^24 window over 2^24 padded positions: 2^48 folds
printf 'HloModule rw_big\n%s\nENTRY main {\n  p = f32[16777216] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[16777216] reduce-window(p, z), window={size=16777216 pad=16777215_0}, to_apply=add\n}\n' "$add" >"$tmp/rw_big.hlo"
# a broadcast and a pad to 10^12 elements
printf 'HloModule bcast_big\nENTRY main {\n  c = f32[] constant(1)\n  ROOT b = f32[1000000,1000000] broadcast(c), dimensions={}\n}\n' >"$tmp/bcast_big.hlo"
printf 'HloModule pad_big\nENTRY main {\n  c = f32[2] constant({1, 2})\n  z = f32[] constant(0)\n  ROOT p = f32[1000000000000] pad(c, z), padding=999999999999_-1\n}\n' >"$tmp/pad_big.hlo"
# the work hides in to_apply: each of 2^20 folds broadcasts and reduces
# 2^20 elements (2^41 steps), though no value is large
printf 'HloModule apply_big\n%s
heavy {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  s = f32[] add(a, b)
  w = f32[1048576] broadcast(s), dimensions={}
  z = f32[] constant(0)
  ROOT r = f32[] reduce(w, z), dimensions={0}, to_apply=add
}

ENTRY main {
  p = f32[1048576] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=heavy
}
' "$add" >"$tmp/apply_big.hlo"

# refused NAME LINE:COL WORDS: every target exits 1 within 30 s, naming the place.
refused() {
  local name=$1 at=$2 words=$3
  for t in $targets; do
    timeout 30 "$tpucc" run "$tmp/$name.hlo" --target="$t" --random-inputs >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -ne 1 ]; then
      bad "$name on $t exited $rc, expected 1: $(head -c 300 "$tmp/err")"
    elif ! grep -qF "$name.hlo:$at: " "$tmp/err" || ! grep -qF "$words" "$tmp/err" ||
        ! grep -qF "over the limit of" "$tmp/err"; then
      bad "$name on $t: message lacks '$name.hlo:$at' or '$words': $(cat "$tmp/err")"
    fi
  done
}
refused iota_big 11:8 "needs 2.2e+12 steps of work with 0 before it" # iota fused into the reduce
refused rw_big 11:8 "r (reduce-window): needs 2.81e+14 steps of work"
refused bcast_big 4:8 "b (broadcast): " # interp: over its 2^36 steps; cpu, v3: over 16 GiB
refused pad_big 5:8 "p (pad): "
refused apply_big 20:8 "needs 2.2e+12 steps of work"

# A loop whose condition never turns false: the cpu counts each trip's
# work (ir_while_trip_work: 4096 + negate's 4 + the constant's 1 = 4101
# steps) against the 2^40 budget and stops after floor(2^40 / 4101) trips,
# naming the while. The evaluator's own limit is covered by eval_control.
printf 'HloModule forever\nbody {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\ncond {\n  p = f32[4] parameter(0)\n  ROOT t = pred[] constant(true)\n}\nENTRY main {\n  x = f32[4] parameter(0)\n  ROOT spin = f32[4] while(x), condition=cond, body=body\n}\n' >"$tmp/forever.hlo"
timeout 60 "$tpucc" run "$tmp/forever.hlo" --target=cpu --random-inputs >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -qF "forever.hlo:12:8: spin (while): stopped after 268108175 trips: over the limit of 1.1e+12 steps of work" "$tmp/err" ||
  bad "a loop that never ends on cpu: exit $rc, $(head -c 300 "$tmp/err")"

# An allocation the host refuses (a 4 GiB result under a 3 GB address-space
# limit) is an error with exit 1. Skipped where the limit stops the process
# itself (sanitizer builds reserve terabytes of shadow memory).
printf 'HloModule b4g\nENTRY main {\n  c = f32[] constant(1)\n  ROOT b = f32[1073741824] broadcast(c), dimensions={}\n}\n' >"$tmp/b4g.hlo"
printf 'HloModule one\nENTRY main {\n  ROOT c = f32[] constant(1)\n}\n' >"$tmp/one.hlo"
if (ulimit -v 3000000 && "$tpucc" run "$tmp/one.hlo" --target=cpu) >/dev/null 2>&1; then
  for t in interp cpu; do
    for stats in "" --stats; do
      [ "$t" = interp ] && [ -n "$stats" ] && continue
      (ulimit -v 3000000 && exec "$tpucc" run "$tmp/b4g.hlo" --target=$t $stats) >/dev/null 2>"$tmp/err"
      rc=$?
      [ $rc -eq 1 ] && grep -q "no memory" "$tmp/err" ||
        bad "4 GiB result under ulimit -v on $t $stats: exit $rc, $(head -c 300 "$tmp/err")"
    done
  done
else
  echo "skipped the allocation-failure checks: the process does not run under ulimit -v"
fi

[ $fail -eq 0 ] && echo "cli_budget: all checks passed"
exit $fail
