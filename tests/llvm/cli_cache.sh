#!/usr/bin/env bash
# tests/llvm/cli_cache.sh TPUCC SRCDIR: the cpu target's compile cache and
# its LLVM IR output, end to end through `tpucc run` (libtpucc's
# tpucc_execute, or the backend directly with --stats-json):
#  - a cold run stores one entry, the next run loads it ("hit") and prints
#    the same bytes as a run without the cache; under strict numerics both
#    print what the evaluator prints;
#  - a corrupt entry (a byte flipped in the object, in the header), a
#    truncated one and an empty one are misses that are rewritten, never a
#    crash or a wrong answer;
#  - a cache directory that cannot be written costs only the store;
#  - two processes compiling the same module into an empty cache at once
#    both succeed and leave exactly one whole entry and no temporary file;
#  - kernels compiled in two parts on two threads print what one part
#    prints (and the evaluator, under strict numerics), and an entry of two
#    parts loads where one thread compiles;
#  - where the directory comes from: --cache-dir, cache= in the spec,
#    --no-cache, TPUCC_NO_CACHE, TPUCC_CACHE_DIR, XDG_CACHE_HOME, HOME;
#  - --emit=llvm and --dump-dir write LLVM IR that llvm-as reads (when
#    installed; else its structure is checked).
# HOME points into the test's directory: nothing is written to the user's.
set -u
tpucc="$1"
src="$2"
tmp="$(mktemp -d)"
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
unset TPUCC_NO_CACHE TPUCC_CACHE_DIR XDG_CACHE_HOME
export HOME="$tmp/home"
mkdir -p "$HOME"

mod="$tmp/m.hlo"
cat > "$mod" <<'EOF'
HloModule cache_test

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[8,16]{1,0} parameter(0)
  w = f32[16,4]{1,0} parameter(1)
  d = f32[8,4]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[8,4]{1,0} tanh(d)
  z = f32[] constant(0)
  ROOT r = f32[8]{0} reduce(t, z), dimensions={1}, to_apply=add
}
EOF

# run OUT [flags...]: runs the module on the cpu with --stats-json; prints
# what the cache did ("stored", "hit", ...) or "exit N" when it failed.
run() {
  local out="$1"
  shift
  if "$tpucc" run "$mod" --target=cpu --random-inputs --stats-json="$tmp/s.json" "$@" \
      > "$out" 2> "$tmp/err"; then
    sed -n 's/.*"cache": "\([a-z ]*\)".*/\1/p' "$tmp/s.json"
  else
    echo "exit $?"
    cat "$tmp/err" >&2
  fi
}
entries() { find "$1" -name '*.tjo' 2>/dev/null | wc -l; }
expect() { # WHAT GOT WANT
  [ "$2" = "$3" ] || bad "$1: got '$2', expected '$3'"
}

"$tpucc" run "$mod" --target=cpu --random-inputs --no-cache > "$tmp/ref" || bad "run without cache"
"$tpucc" run "$mod" --target=interp --random-inputs > "$tmp/interp" || bad "interp run"
[ -s "$tmp/ref" ] || bad "no reference output"

# 1. cold, then cached: the same bytes.
c="$tmp/c"
expect "cold run" "$(run "$tmp/o1" --cache-dir="$c")" "stored"
cmp -s "$tmp/o1" "$tmp/ref" || bad "cold run with the cache printed other values"
expect "entries after a cold run" "$(entries "$c")" 1
expect "second run" "$(run "$tmp/o2" --cache-dir="$c")" "hit"
cmp -s "$tmp/o2" "$tmp/ref" || bad "cached run printed other values"
expect "strict, cold" "$(run "$tmp/s1" --cache-dir="$c" --cpu-numerics=strict)" "stored"
expect "strict, cached" "$(run "$tmp/s2" --cache-dir="$c" --cpu-numerics=strict)" "hit"
cmp -s "$tmp/s2" "$tmp/interp" || bad "cached strict run differs from the evaluator"
expect "entries: one per numerics" "$(entries "$c")" 2
# through tpucc_execute (no --stats-json): hits leave the entries as they were
touch -d '2001-01-01' "$c"/*.tjo
touch "$tmp/stamp"
"$tpucc" run "$mod" --target=cpu --random-inputs --cache-dir="$c" > "$tmp/o3" || bad "run via libtpucc"
"$tpucc" run "$mod" --target=cpu --random-inputs --cache-dir="$c" --cpu-numerics=strict \
  > "$tmp/o4" || bad "strict run via libtpucc"
cmp -s "$tmp/o3" "$tmp/ref" || bad "libtpucc's cached run printed other values"
cmp -s "$tmp/o4" "$tmp/interp" || bad "libtpucc's cached strict run differs from the evaluator"
expect "entries rewritten by hits through libtpucc" "$(find "$c" -name '*.tjo' -newer "$tmp/stamp" | wc -l)" 0

# 2. damaged entries: a miss, rewritten, the right values.
native="$tmp/n"
expect "cold run (n)" "$(run "$tmp/o" --cache-dir="$native")" "stored"
e="$(find "$native" -name '*.tjo')"
size=$(stat -c %s "$e")
damage() { # NAME: damages $e one way, then checks a run recompiles and the next hits
  local got
  got="$(run "$tmp/o" --cache-dir="$native")"
  expect "$1: run" "$got" "stored"
  cmp -s "$tmp/o" "$tmp/ref" || bad "$1: other values"
  expect "$1: size after the rewrite" "$(stat -c %s "$e")" "$size"
  expect "$1: next run" "$(run "$tmp/o" --cache-dir="$native")" "hit"
}
printf '\xff' | dd of="$e" bs=1 seek=$((size - 100)) conv=notrunc status=none
damage "a byte flipped in the object"
printf 'X' | dd of="$e" bs=1 seek=2 conv=notrunc status=none
damage "a byte flipped in the magic"
truncate -s $((size / 2)) "$e"
damage "truncated to half"
truncate -s 10 "$e"
damage "truncated inside the header"
: > "$e"
damage "empty"
"$tpucc" run "$mod" --target=cpu --random-inputs --cache-dir="$native" --stats 2>&1 >/dev/null |
  grep -q '^  compile cache     hit$' || bad "--stats does not say 'compile cache     hit'"
truncate -s 100 "$e"
"$tpucc" run "$mod" --target=cpu --random-inputs --cache-dir="$native" --stats 2>&1 >/dev/null |
  grep -q 'compile cache     stored: a damaged entry' || bad "--stats does not name the damaged entry"

# 3. a directory that cannot be written: the values, exit 0, "not stored".
: > "$tmp/file"
expect "cache dir under a file" "$(run "$tmp/o" --cache-dir="$tmp/file/c")" "not stored"
cmp -s "$tmp/o" "$tmp/ref" || bad "unwritable cache dir: other values"
ro="$tmp/ro"
mkdir "$ro"
chmod 555 "$ro"
if [ "$(id -u)" != 0 ]; then # root writes anyway
  expect "read-only cache dir" "$(run "$tmp/o" --cache-dir="$ro")" "not stored"
  cmp -s "$tmp/o" "$tmp/ref" || bad "read-only cache dir: other values"
  expect "read-only dir: nothing written" "$(ls -A "$ro" | wc -l)" 0
fi
chmod 755 "$ro"
cp "$e" "$ro/"
chmod 555 "$ro"
expect "read-only cache dir holding the entry" "$(run "$tmp/o" --cache-dir="$ro")" "hit"
cmp -s "$tmp/o" "$tmp/ref" || bad "read-only cache dir hit: other values"
chmod 755 "$ro"

# 4. two processes compiling the same module into an empty cache at once.
p="$tmp/par"
cnn="$src/samples/cnn.tg"
"$tpucc" run "$cnn" --target=cpu --random-inputs --no-cache > "$tmp/cnn_ref" || bad "cnn without cache"
"$tpucc" run "$cnn" --target=cpu --random-inputs --cache-dir="$p" > "$tmp/p1" 2> "$tmp/pe1" &
p1=$!
"$tpucc" run "$cnn" --target=cpu --random-inputs --cache-dir="$p" > "$tmp/p2" 2> "$tmp/pe2" &
p2=$!
wait $p1 || bad "concurrent run 1 failed: $(cat "$tmp/pe1")"
wait $p2 || bad "concurrent run 2 failed: $(cat "$tmp/pe2")"
cmp -s "$tmp/p1" "$tmp/cnn_ref" || bad "concurrent run 1: other values"
cmp -s "$tmp/p2" "$tmp/cnn_ref" || bad "concurrent run 2: other values"
expect "entries after two concurrent compiles" "$(entries "$p")" 1
expect "temporary files left" "$(find "$p" -name '*.tmp' | wc -l)" 0
"$tpucc" run "$cnn" --target=cpu --random-inputs --cache-dir="$p" --stats 2> "$tmp/pe3" > "$tmp/p3" ||
  bad "run after the concurrent ones"
grep -q '^  compile cache     hit$' "$tmp/pe3" || bad "no hit after two concurrent compiles"
cmp -s "$tmp/p3" "$tmp/cnn_ref" || bad "cached cnn: other values"

# 4b. kernels compiled in parts on threads (split.c): the same bytes as one
# part, the evaluator's under strict numerics; an entry of two parts loads
# where one thread compiles.
sj() { sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" "$tmp/s.json"; }
"$tpucc" run "$cnn" --target=interp --random-inputs > "$tmp/cnn_interp" || bad "cnn on interp"
for ct in 1 2; do
  TPUCC_CPU_COMPILE_THREADS=$ct "$tpucc" run "$cnn" --target=cpu --cpu-numerics=strict \
    --random-inputs --cache-dir="$tmp/parts$ct" --stats-json="$tmp/s.json" > "$tmp/ct$ct" ||
    bad "compile threads $ct"
  expect "parts with $ct compile threads" "$(sj parts)" "$ct"
  cmp -s "$tmp/ct$ct" "$tmp/cnn_interp" || bad "$ct compile threads: strict cpu differs from interp"
done
TPUCC_CPU_COMPILE_THREADS=1 "$tpucc" run "$cnn" --target=cpu --cpu-numerics=strict --random-inputs \
  --cache-dir="$tmp/parts2" --stats-json="$tmp/s.json" > "$tmp/ct" || bad "two parts, loaded"
expect "two-part entry, one compile thread: cache" \
  "$(sed -n 's/.*"cache": "\([a-z ]*\)".*/\1/p' "$tmp/s.json")" "hit"
expect "two-part entry: parts loaded" "$(sj parts)" 2
cmp -s "$tmp/ct" "$tmp/cnn_interp" || bad "two-part entry: strict cpu differs from interp"

# 5. where the cache is.
expect "TPUCC_NO_CACHE=1" "$(TPUCC_NO_CACHE=1 run "$tmp/o")" "off"
expect "TPUCC_NO_CACHE=1 and --cache-dir" "$(TPUCC_NO_CACHE=1 run "$tmp/o" --cache-dir="$tmp/e0")" "stored"
expect "TPUCC_NO_CACHE=0" "$(TPUCC_NO_CACHE=0 TPUCC_CACHE_DIR="$tmp/e00" run "$tmp/o")" "stored"
expect "TPUCC_CACHE_DIR" "$(TPUCC_CACHE_DIR="$tmp/e1" run "$tmp/o")" "stored"
expect "entry in TPUCC_CACHE_DIR" "$(entries "$tmp/e1")" 1
expect "--no-cache beats TPUCC_CACHE_DIR" "$(TPUCC_CACHE_DIR="$tmp/e1" run "$tmp/o" --no-cache)" "off"
expect "XDG_CACHE_HOME" "$(XDG_CACHE_HOME="$tmp/xdg" run "$tmp/o")" "stored"
expect "entry in XDG_CACHE_HOME/tpucc" "$(entries "$tmp/xdg/tpucc")" 1
expect "HOME" "$(run "$tmp/o")" "stored"
expect "entry in HOME/.cache/tpucc" "$(entries "$HOME/.cache/tpucc")" 1
expect "HOME, second run" "$(run "$tmp/o")" "hit"
if "$tpucc" run "$mod" --target=cpu,cache=off --random-inputs --stats 2>&1 >/dev/null |
    grep -q '^  compile cache     off$'; then :; else bad "--target=cpu,cache=off is not off"; fi
if "$tpucc" run "$mod" --target="cpu,cache=$tmp/e2" --random-inputs --output= 2>/dev/null; then
  expect "entry in cache= of the spec" "$(entries "$tmp/e2")" 1
else
  bad "--target=cpu,cache=DIR failed"
fi

# 6. usage errors.
"$tpucc" run "$mod" --target=interp --random-inputs --no-cache > /dev/null 2>&1
expect "--no-cache on interp: exit" "$?" 2
"$tpucc" run "$mod" --target=cpu --random-inputs --cache-dir=a,b > /dev/null 2>&1
expect "--cache-dir with a comma: exit" "$?" 2
"$tpucc" run "$mod" --target=cpu --random-inputs --no-cache=1 > /dev/null 2>&1
expect "--no-cache=1: exit" "$?" 2

# 7. LLVM IR: --emit=llvm and --dump-dir.
check_ir() { # FILE WHAT
  if command -v llvm-as > /dev/null; then
    llvm-as "$1" -o /dev/null 2> "$tmp/as" || bad "$2: llvm-as: $(head -3 "$tmp/as")"
  fi
  grep -q '^target triple = ' "$1" || bad "$2: no target triple"
  grep -q '^define .*@tpucc_entry(' "$1" || bad "$2: no entry function"
  [ "$(grep -c '^define ' "$1")" = "$(grep -c '^}' "$1")" ] || bad "$2: unbalanced functions"
}
if "$tpucc" compile "$mod" --target=cpu --emit=llvm -o "$tmp/m.ll"; then
  check_ir "$tmp/m.ll" "--emit=llvm"
else
  bad "compile --emit=llvm"
fi
for f in "$src"/tests/modules/control/*.hlo; do # control flow: loads through entry buffers
  for n in strict native; do
    if "$tpucc" compile "$f" --target=cpu --cpu-numerics=$n --emit=llvm -o "$tmp/c.ll"; then
      check_ir "$tmp/c.ll" "--emit=llvm $(basename "$f") $n"
    else
      bad "compile --emit=llvm $(basename "$f") $n"
    fi
  done
done
"$tpucc" compile "$mod" --target=cpu --emit=llvm > "$tmp/m2.ll" || bad "--emit=llvm to stdout"
cmp -s "$tmp/m.ll" "$tmp/m2.ll" || bad "--emit=llvm: stdout and -o differ"
"$tpucc" compile "$mod" --emit=llvm -o "$tmp/x.ll" > /dev/null 2>&1
expect "--emit=llvm without --target=cpu: exit" "$?" 2
mkdir "$tmp/dump"
"$tpucc" run "$mod" --target=cpu --random-inputs --dump-dir="$tmp/dump" > "$tmp/o" || bad "--dump-dir run"
cmp -s "$tmp/o" "$tmp/ref" || bad "--dump-dir run: other values"
ll="$(find "$tmp/dump" -name 'cache_test.*.after_cpu_llvm.ll')"
if [ -n "$ll" ]; then check_ir "$ll" "--dump-dir"; else bad "--dump-dir wrote no LLVM IR"; fi
mkdir "$tmp/dump2"
"$tpucc" run "$mod" --target=cpu --random-inputs --dump-dir="$tmp/dump2" --dump-after=dce \
  > /dev/null || bad "--dump-after run"
[ -z "$(find "$tmp/dump2" -name '*.ll')" ] || bad "--dump-after=dce still dumped the LLVM IR"

expect "files written to HOME outside .cache/tpucc" \
  "$(find "$HOME" -type f ! -path "$HOME/.cache/tpucc/*" | wc -l)" 0
exit $fail
