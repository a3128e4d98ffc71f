#!/usr/bin/env bash
# cli_test.sh: end-to-end tests of the tpucc command line.
#
#   cli_test.sh TPUCC MODULES_DIR DATA_DIR WORK_DIR CASE
#
# TPUCC is the built tpucc, MODULES_DIR the HLO modules the cases run
# (tests/modules; XLA's corpus for corpus_all), DATA_DIR this folder (small
# hand-written modules), WORK_DIR a scratch folder, CASE the test to run
# (see the functions below). Exit 0 pass, 1 fail, 77 skip.
set -u
TPUCC=$1 MODULES=$2 DATA=$3 WORK=$4 CASE=$5
mkdir -p "$WORK"
T=$(mktemp -d "$WORK/$CASE.XXXXXX")
trap 'rm -rf "$T"' EXIT

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# run EXPECTED_RC ARGS...: runs tpucc, keeps stdout in $T/out, stderr in $T/err.
run() {
  local want=$1; shift
  "$TPUCC" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ "$rc" != "$want" ]; then
    fail "tpucc $* exited $rc, expected $want"
    sed 's/^/  stdout: /' "$T/out" | head -5 >&2
    sed 's/^/  stderr: /' "$T/err" | head -10 >&2
  fi
}
out_is() { [ "$(cat "$T/out")" == "$1" ] || fail "stdout is '$(cat "$T/out")', expected '$1'"; }
err_has() { grep -qF -- "$1" "$T/err" || { fail "stderr lacks '$1'"; sed 's/^/  stderr: /' "$T/err" | head -10 >&2; }; }
out_has() { grep -qF -- "$1" "$T/out" || fail "stdout lacks '$1'"; }
# has_target NAME: the build has target NAME (listed by tpucc run --help).
has_target() { "$TPUCC" run --help | grep -q "^  $1 "; }

# --help documents every flag; --version; usage errors exit 2.
case_help() {
  run 0 --version
  out_has "tpucc 0.1.0"
  run 0 run --help
  for f in --target= --entry= --language= --input= --random-inputs --seed= --output=@ \
           --output=- --print-max-elements= --expected-output= --atol= --rtol= --reference= \
           --help \
           "exit status" interp; do
    out_has "$f"
  done
  run 0 compile --help
  for f in --emit= "-o FILE" --entry= --language= --help "exit status"; do out_has "$f"; done
  run 0 help run
  out_has "--random-inputs"
  run 0 --help
  out_has "compile"
  run 2 run
  err_has "no FILE given"
  run 2 run "$DATA/add.hlo" --frobnicate
  err_has "unknown option '--frobnicate'"
  run 2 run "$DATA/add.hlo" --target=nosuch
  err_has "unknown target 'nosuch' (known: interp"
  run 2 run "$DATA/add.hlo" --seed=abc
  err_has "--seed: 'abc' is not an integer"
  run 2 run "$DATA/add.hlo" --output=out.npy
  err_has "expected @FILE, - (print) or nothing"
  run 2 frobnicate
  err_has "unknown command 'frobnicate'"
  run 2 compile "$DATA/add.hlo" --emit=frob
  err_has "unknown kind 'frob' (known: hlo"
  run 2 run "$T/missing.hlo"
  err_has "missing.hlo: No such file or directory"
  run 2 run "$T"
  err_has "is a directory"
  run 2 run /dev/zero
  err_has "/dev/zero: not a regular file or a pipe"
  # a pipe works: the module from standard input
  cat "$MODULES/constant_sum.hlo" |
    "$TPUCC" run /dev/stdin --language=hlo >"$T/out" 2>"$T/err" ||
    fail "reading the module from a pipe: $(cat "$T/err")"
  out_is "f32=0.3"
}

# 0.1 + 0.2 in f32 is the float nearest 0.3 (0x3e99999a), printed shortest:
# 0.3, where %.9g would print 0.300000012.
case_add_constants() {
  run 0 run "$MODULES/constant_sum.hlo" --target=interp
  out_is "f32=0.3"
}

# Two given inputs, values checked by hand.
case_add_inputs() {
  run 0 run "$DATA/add.hlo" --input="2x3xf32=1 2 3 4 5 6" --input="2x3xf32=[10 20 30][40 50 60]"
  out_is "2x3xf32=[11 22 33][44 55 66]"
  run 0 run "$DATA/add.hlo" --input "2x3xf32=0.5" --input "f32[2,3]=1,2,3,4,5,6" --output=-
  out_is "2x3xf32=[1.5 2.5 3.5][4.5 5.5 6.5]"
  run 0 run "$DATA/add.hlo" --input="2x3xf32=1" --input="2x3xf32=1" --output=
  out_is ""
  # tuple results: one line each, or one --output each
  run 0 run "$DATA/tuple.hlo" --input="3xs32=1 -2 3"
  out_is "$(printf '3xs32=-1 2 -3\n3xs32=1 4 9')"
  run 0 run "$DATA/tuple.hlo" --input="3xi32=1 -2 3" --output= --output=-
  out_is "3xs32=1 4 9"
  # fewer --output than results: the rest are printed (as iree-run-module)
  run 0 run "$DATA/tuple.hlo" --input="3xs32=1 -2 3" --output=-
  out_is "$(printf '3xs32=-1 2 -3\n3xs32=1 4 9')"
  run 2 run "$DATA/tuple.hlo" --input="3xs32=1 -2 3" --output=- --output=- --output=-
  err_has "the entry has 2 results, 3 --output given"
  # bf16 through a raw .bin: 1.5 (0x3fc0) and -0.25 (0xbe80), little endian
  printf '\xc0\x3f\x80\xbe\xc0\x3f\x80\xbe' >"$T/a.bin"
  run 0 run "$DATA/bf16.hlo" --input="2x2xbf16=@$T/a.bin"
  out_is "2x2xbf16=[3 -0.5][3 -0.5]"
}

# --expected-output: match exits 0; a mismatch exits 1 naming index, got, expected.
case_expected_output() {
  run 0 run "$DATA/add.hlo" --input="2x3xf32=1 2 3 4 5 6" --input="2x3xf32=1 2 3 4 5 6" \
      --expected-output="2x3xf32=2 4 6 8 10 12" --output=
  run 0 run "$DATA/add.hlo" --input="2x3xf32=1 2 3 4 5 6" --input="2x3xf32=1 2 3 4 5 6" \
      --expected-output="2x3xf32=2 4 6 8 10.05 12" --atol=0.1 --output=
  run 1 run "$DATA/add.hlo" --input="2x3xf32=1 2 3 4 5 6" --input="2x3xf32=1 2 3 4 5 6" \
      --expected-output="2x3xf32=2 4 6 8 11 12" --output=
  err_has "result 0 (2x3xf32): mismatch at index 4 [1, 1]: got 10, expected 11"
  err_has "1 of 6 elements differ"
  run 1 run "$DATA/add.hlo" --input="2x3xf32=1 2 3 4 5 6" --input="2x3xf32=1 2 3 4 5 6" \
      --expected-output="3x2xf32=2 4 6 8 10 12" --output=
  err_has "result 0: got 2x3xf32, expected 3x2xf32"
  run 0 run "$DATA/add.hlo" --input="2x3xf32=nan" --input="2x3xf32=1" \
      --expected-output="2x3xf32=nan" --output=
  run 2 run "$DATA/add.hlo" --random-inputs --expected-output="f32=1" --expected-output="f32=1"
  err_has "the entry has 1 result, 2 expected outputs given"
  # --reference: the same inputs on another target, compared the same way
  run 0 run "$DATA/tuple.hlo" --random-inputs --reference=interp
  out_has "3xs32="
  run 2 run "$DATA/add.hlo" --random-inputs --reference=nosuch
  err_has "unknown reference target 'nosuch' (known: interp"
}

# A wrong input names the parameter (index and name), expected and given.
case_wrong_input() {
  # control bytes quoted from a file are escaped, never echoed raw
  printf "\x93NUMPY\x01\x00\x46\x00{'descr': '<\x1b[31mX', 'fortran_order': False, 'shape': (2,), }        \n" >"$T/esc.npy"
  run 2 run "$DATA/add.hlo" --input="@$T/esc.npy" --input="2x3xf32=1"
  err_has "unsupported dtype '<\x1b[31mX'"
  grep -q "$(printf '\x1b')" "$T/err" && fail "a raw ESC byte reached stderr"
  run 2 run "$DATA/add.hlo" --input="2x3xf32=1" --input="3x2xf32=1"
  err_has "--input 2 ('3x2xf32=1') for parameter 1 'y': expected 2x3xf32, given 3x2xf32"
  run 2 run "$DATA/add.hlo" --input="2x3xs32=1" --input="2x3xf32=1"
  err_has "parameter 0 'x': expected 2x3xf32, given 2x3xs32"
  run 2 run "$DATA/add.hlo" --input="2x3xf32=1"
  err_has "the entry takes 2 parameters, 1 input given"
  err_has "parameter 1 'y': 2x3xf32"
  run 2 run "$DATA/add.hlo" --input="2x3xf32=1 2" --input="2x3xf32=1"
  err_has "--input 1 ('2x3xf32=1 2'): expected 6 values, got 2"
  run 2 run "$DATA/add.hlo" --input="@$T/nope.npy" --input="2x3xf32=1"
  err_has "nope.npy: No such file or directory"
  printf 'garbage' >"$T/g.npy"
  run 2 run "$DATA/add.hlo" --input="@$T/g.npy" --input="2x3xf32=1"
  err_has "g.npy: not an .npy file (bad magic)"
  # --random-inputs fills what --input does not give
  run 0 run "$DATA/add.hlo" --input="2x3xf32=100" --random-inputs --output=
}

# npy written by tpucc reads back (and feeds the next run); .npz and .bin too.
case_npy_output() {
  run 0 run "$DATA/add.hlo" --input="2x3xf32=1 2 3 4 5 6" --input="2x3xf32=0.5" \
      --output="@$T/r.npy"
  out_is ""
  [ "$(od -An -tx1 -N8 "$T/r.npy" | tr -d ' \n')" == "934e554d50590100" ] ||
    fail "r.npy does not start with the .npy 1.0 magic: $(od -An -tx1 -N8 "$T/r.npy")"
  run 0 run "$DATA/add.hlo" --input="@$T/r.npy" --input="@$T/r.npy"
  out_is "2x3xf32=[3 5 7][9 11 13]"
  run 0 run "$DATA/add.hlo" --input="2x3xf32=1 2 3 4 5 6" --input="2x3xf32=0.5" \
      --expected-output="@$T/r.npy" --rtol=0 --atol=0 --output=
  run 0 run "$DATA/tuple.hlo" --input="3xs32=1 2 3" --output="@$T/n.npy" --output="@$T/s.npz"
  run 0 run "$DATA/tuple.hlo" --input="@$T/s.npz:arr_0" --output= --output=-
  out_is "3xs32=1 16 81"
  run 0 run "$DATA/tuple.hlo" --input="@$T/n.npy" --output="@$T/b.bin" --output=
  [ "$(od -An -tx1 "$T/b.bin" | tr -d ' \n')" == "010000000200000003000000" ] ||
    fail "b.bin bytes: $(od -An -tx1 "$T/b.bin")"
  # refused before running (a usage error), see case_output_safety
  run 2 run "$DATA/add.hlo" --random-inputs --output="@$T/nodir/x.npy"
  err_has "nodir/x.npy"
}

# Source errors print file:line:col, the line and a caret; exit 2.
case_diagnostics() {
  run 2 run "$DATA/bad.hlo" --random-inputs
  err_has "bad.hlo:5:"
  err_has "error:"
  err_has "frobnicate"
  grep -q '^ *\^$' "$T/err" || fail "no caret line in: $(cat "$T/err")"
  run 2 compile "$DATA/bad.hlo"
  err_has "bad.hlo:5:"
}

# compile --emit=hlo prints the module; -o writes it; the output runs again.
case_compile() {
  run 0 compile "$DATA/add.hlo" --emit=hlo
  out_has "HloModule"
  out_has "add("
  run 0 compile "$DATA/add.hlo" -o "$T/re.hlo"
  out_is ""
  run 0 compile "$DATA/add.hlo" --verify-each --time-passes -o "$T/re2.hlo"
  cmp -s "$T/re.hlo" "$T/re2.hlo" || fail "--verify-each changed the output"
  run 2 compile "$DATA/add.hlo" --verify-each=yes
  run 0 run "$T/re.hlo" --input="2x3xf32=1" --input="2x3xf32=2"
  out_is "2x3xf32=[3 3 3][3 3 3]"
}

# A .tg graph runs; its emitted HLO runs to the same results (same seed).
case_tg() {
  local tg="$DATA/../../samples/mlp.tg"
  "$TPUCC" run "$tg" --random-inputs --seed=3 >"$T/a" 2>"$T/err"
  if grep -q "built without the .tg frontend" "$T/err"; then echo "no .tg frontend: skipped"; exit 77; fi
  run 0 run "$tg" --random-inputs --seed=3
  cmp -s "$T/out" "$T/a" || fail "two runs of mlp.tg differ"
  run 0 compile "$tg" -o "$T/mlp.hlo"
  run 0 run "$T/mlp.hlo" --random-inputs --seed=3
  cmp -s "$T/out" "$T/a" || fail "mlp.tg and its emitted HLO give different results"
}

# Random inputs are deterministic per seed and differ across seeds.
case_random_inputs() {
  run 0 run "$DATA/add.hlo" --random-inputs --seed=7
  cp "$T/out" "$T/a"
  run 0 run "$DATA/add.hlo" --random-inputs --seed=7
  cmp -s "$T/out" "$T/a" || fail "--seed=7 twice gives different outputs"
  run 0 run "$DATA/add.hlo" --random-inputs --seed=8
  cmp -s "$T/out" "$T/a" && fail "--seed=7 and --seed=8 give the same outputs"
  for m in axpy dot reduce data_movement binary_f32 reduce_window convolution pred_ops int_s8; do
    run 0 run "$MODULES/$m.hlo" --target=interp --random-inputs
  done
  # Each parameter is capped at 4 GiB and all of them at 8 GiB, checked
  # before anything is made: six 3.6 GB parameters are refused at once.
  {
    echo "HloModule six"
    echo "ENTRY main {"
    for i in 0 1 2 3 4 5; do echo "  p$i = f32[900000000] parameter($i)"; done
    echo "  ROOT t = (f32[900000000], f32[900000000]) tuple(p0, p5)"
    echo "}"
  } >"$T/six.hlo"
  for t in interp cpu; do
    has_target "$t" || continue
    run 2 run "$T/six.hlo" --target=$t --random-inputs
    err_has "parameter 2 'p2' (900000000xf32, 3.6e+09 bytes) brings the generated inputs over the cap of 8 GiB in all"
  done
  printf 'HloModule one\nENTRY main {\n  ROOT p = f32[1100000000] parameter(0)\n}\n' >"$T/one.hlo"
  run 2 run "$T/one.hlo" --target=interp --random-inputs
  err_has "parameter 0 'p' (1100000000xf32, 4.4e+09 bytes) is over the cap of 4 GiB per parameter"
}

# Outputs: every path checked before running; a file is replaced only when
# its new contents are complete; results after the last --output printed.
case_output_safety() {
  echo "old" >"$T/keep.npy"
  run 2 run "$DATA/tuple.hlo" --input="3xs32=1 2 3" --output="@$T/keep.npy" \
      --output="@$T/no/such/dir/s.npy"
  err_has "--output 2: $T/no/such/dir/s.npy: directory $T/no/such/dir: No such file or directory"
  [ "$(cat "$T/keep.npy")" == "old" ] || fail "keep.npy was written before the second --output was refused"
  run 2 run "$DATA/tuple.hlo" --input="3xs32=1 2 3" --output="@$T"
  err_has "--output 1: $T: is a directory"
  # a write that fails (over a 1 KiB file-size limit: EFBIG) leaves the old file whole
  printf 'HloModule big\nENTRY main {\n  c = f32[] constant(1)\n  ROOT b = f32[4096] broadcast(c), dimensions={}\n}\n' >"$T/big.hlo"
  (trap '' XFSZ; ulimit -f 1; exec "$TPUCC" run "$T/big.hlo" --target=interp \
      --output="@$T/keep.npy" >"$T/out" 2>"$T/err")
  local rc=$?
  [ $rc -eq 1 ] || fail "a write over the file-size limit exited $rc, expected 1"
  err_has "(the file is unchanged)"
  [ "$(cat "$T/keep.npy")" == "old" ] || fail "the failed write changed keep.npy"
  ls "$T" | grep -q 'keep.npy.tmp' && fail "a temporary file was left behind"
  # a successful write replaces the file; the second result is printed
  run 0 run "$DATA/tuple.hlo" --input="3xs32=1 2 3" --output="@$T/keep.npy"
  out_is "3xs32=1 4 9"
  run 0 run "$DATA/tuple.hlo" --input="@$T/keep.npy" --output=-
  out_is "$(printf '3xs32=1 2 3\n3xs32=1 4 9')"
}

# .npz inputs bind by name when their names are the parameters' names, by
# position otherwise (with a note). The archives are written by Python's
# zipfile with hand-made .npy headers (no numpy needed).
case_npz_names() {
  command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
  cat >"$T/mk.py" <<'EOF'
import sys, struct, zipfile
def npy(vals):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % len(vals)
    h += ' ' * ((64 - (10 + len(h) + 1) % 64) % 64) + '\n'
    return (b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h.encode()
            + struct.pack('<%df' % len(vals), *vals))
with zipfile.ZipFile(sys.argv[1], 'w') as z:
    for kv in sys.argv[2:]:
        k, v = kv.split('=')
        z.writestr(k + '.npy', npy([float(x) for x in v.split(',')]))
EOF
  printf 'HloModule sub\nENTRY main {\n  a = f32[2] parameter(0)\n  b = f32[2] parameter(1)\n  ROOT d = f32[2] subtract(a, b)\n}\n' >"$T/sub.hlo"
  python3 "$T/mk.py" "$T/ba.npz" b=1,1 a=5,6 || fail "python3 could not write an .npz"
  python3 "$T/mk.py" "$T/pos.npz" arr_0=5,6 arr_1=1,1
  python3 "$T/mk.py" "$T/ac.npz" a=5,6 c=1,1
  run 0 run "$T/sub.hlo" --target=interp --input="@$T/ba.npz"
  out_is "2xf32=4 5"
  grep -q note "$T/err" && fail "binding by name printed a note"
  run 0 run "$T/sub.hlo" --target=interp --input="@$T/pos.npz"
  out_is "2xf32=4 5"
  err_has "note: .npz arrays bound to parameters by position (the inputs: arr_0, arr_1; the parameters: a, b)"
  run 0 run "$T/sub.hlo" --target=interp --input="@$T/ac.npz"
  err_has "(the inputs: a, c; the parameters: a, b)"
}

# numpy writes, tpucc reads (C/Fortran order, both byte orders); tpucc
# writes, numpy reads. Skipped when no python3 with numpy is found.
case_numpy() {
  local py=""
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c 'import numpy' 2>/dev/null; then py=$p; break; fi
  done
  [ -n "$py" ] || { echo "no python3 with numpy: skipped"; exit 77; }
  "$py" - "$T" <<'EOF' || fail "numpy could not write inputs"
import sys, numpy as np
t = sys.argv[1]
x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
np.save(t + "/x.npy", x)
np.save(t + "/xf.npy", np.asfortranarray(x.astype(">f4")))
np.savez(t + "/xy.npz", x=x, y=np.full((2, 3), 10, np.float32))
np.savez_compressed(t + "/xyc.npz", x=x, y=np.full((2, 3), 10, np.float32))
np.save(t + "/x64.npy", x.astype(np.float64))
EOF
  run 0 run "$DATA/add.hlo" --input="@$T/x.npy" --input="@$T/xf.npy" --output="@$T/s.npy"
  run 0 run "$DATA/add.hlo" --input="@$T/xy.npz" --output="@$T/t.npy"
  run 0 run "$DATA/add.hlo" --input="@$T/xyc.npz" --output=-
  out_is "2x3xf32=[10 10.25 10.5][10.75 11 11.25]"
  # float64 (numpy's default) reads as f64, which an f32 parameter refuses;
  # with the type named it converts
  run 2 run "$DATA/add.hlo" --input="@$T/x64.npy" --input="2x3xf32=1"
  err_has "for parameter 0 'x': expected 2x3xf32, given 2x3xf64"
  run 0 run "$DATA/add.hlo" --input="2x3xf32=@$T/x64.npy" --input="2x3xf32=1"
  out_is "2x3xf32=[1 1.25 1.5][1.75 2 2.25]"
  "$py" - "$T" <<'EOF' || fail "numpy disagrees with tpucc's .npy output"
import sys, numpy as np
t = sys.argv[1]
x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
s = np.load(t + "/s.npy"); u = np.load(t + "/t.npy")
assert s.dtype == np.float32 and s.shape == (2, 3), (s.dtype, s.shape)
assert (s == 2 * x).all(), s
assert (u == x + 10).all(), u
EOF
}

# Every corpus module whose inputs can be generated runs on interp without
# crashing; a module that is rejected must say why (a non-empty error).
case_corpus_all() {
  local n=0 ok=0 rejected=0
  for f in "$MODULES"/*.hlo; do
    n=$((n + 1))
    timeout 600 "$TPUCC" run "$f" --target=interp --random-inputs >"$T/out" 2>"$T/err"
    local rc=$?
    case $rc in
      0) ok=$((ok + 1)) ;;
      1|2)
        rejected=$((rejected + 1))
        if [ ! -s "$T/err" ]; then fail "$(basename "$f"): exit $rc without a message"; fi
        echo "rejected (exit $rc): $(basename "$f"): $(grep -m1 error "$T/err")" ;;
      124) fail "$(basename "$f"): timed out" ;;
      *) fail "$(basename "$f"): crashed (exit $rc)"; head -5 "$T/err" >&2 ;;
    esac
  done
  echo "corpus: $n modules, $ok ran, $rejected rejected with a message"
  [ "$n" -gt 0 ] || fail "no corpus modules in $MODULES"
}

# Every module of tests/modules runs on interp (host/ too); the TPU refuses
# host/'s modules with a located error naming what it lacks (exit 1).
case_modules_all() {
  local n=0 f
  for f in "$MODULES"/*.hlo "$MODULES"/host/*.hlo; do
    n=$((n + 1))
    run 0 run "$f" --target=interp --random-inputs
  done
  [ "$n" -ge 20 ] || fail "only $n modules in $MODULES"
  if "$TPUCC" run --help | grep -q '^  v3 '; then
    run 0 run "$MODULES/f16.hlo" --target=v3 --random-inputs
    run 1 run "$MODULES/host/int_power.hlo" --target=v3 --random-inputs
    err_has "int_power.hlo:6:3: error: tpu: power:"
    err_has "(power on s32)"
    run 1 run "$MODULES/host/f64.hlo" --target=v3 --random-inputs
    err_has "f64.hlo:4:3: error: f64 is not supported on the TPU: 'p' (parameter) computes in f64"
    run 1 run "$MODULES/host/int_wide.hlo" --target=v3 --random-inputs
    err_has "int_wide.hlo:4:3: error: s64 is not supported on the TPU: 'a' (parameter) holds s64 values"
    run 1 run "$MODULES/host/small_host.hlo" --target=v3 --random-inputs
    err_has "small_host.hlo:9:3: error: f64 is not supported on the TPU: 'yr' (reduce-precision) computes in f64"
  fi
}

# Statistics and reports per target: --stats/--stats-json on cpu give the
# figures that apply (FLOPs equal to what the v3 lowering counts, an
# independent count); target-specific flags elsewhere are usage errors,
# never silently ignored.
case_target_flags() {
  "$TPUCC" run --help | grep -q '^  cpu ' || { echo "no cpu target: skipped"; exit 77; }
  "$TPUCC" run --help | grep -q '^  v3 ' || { echo "no v3 target: skipped"; exit 77; }
  local f n
  for f in "$DATA/../../samples/mlp.tg" "$DATA/../../samples/cnn.tg" \
           "$MODULES/conv_block.hlo" "$MODULES/convolution.hlo"; do
    [ -f "$f" ] || { fail "missing $f"; continue; }
    n=$(basename "$f")
    run 0 run "$f" --target=cpu --random-inputs --stats --stats-json="$T/$n.cpu.json" --threads=1
    err_has "stats (target cpu):"
    run 0 run "$f" --target=v3 --random-inputs --stats-json="$T/$n.v3.json"
    local c v
    c=$(grep -o '"flops": [0-9]*' "$T/$n.cpu.json")
    v=$(grep -o '"flops": [0-9]*' "$T/$n.v3.json")
    [ -n "$c" ] && [ "$c" == "$v" ] || fail "$n: cpu $c, v3 $v"
    for k in seconds compile_seconds host_seconds threads; do
      grep -q "\"$k\": " "$T/$n.cpu.json" || fail "$n: cpu JSON lacks $k"
    done
  done
  # mlp.tg: 32x784x256 + 32x256x128 + 32x128x10 MACs
  grep -q '"flops": 15024128,' "$T/mlp.tg.cpu.json" || fail "mlp FLOPs: $(cat "$T/mlp.tg.cpu.json")"
  run 2 run "$DATA/add.hlo" --target=cpu --random-inputs --report=-
  err_has "--report applies to TPU targets"
  run 2 run "$DATA/add.hlo" --target=cpu --random-inputs --precision=high
  err_has "--precision applies to TPU targets"
  run 2 run "$DATA/add.hlo" --target=interp --random-inputs --stats
  err_has "--stats applies to TPU targets and cpu"
}

# The passes size their decisions by the target given to opt, compile and
# run: the attention golden fuses on v3 and is refused with 64 KiB of VMEM.
case_pass_target() {
  "$TPUCC" run --help | grep -q '^  v3 ' || { echo "no v3 target: skipped"; exit 77; }
  local g="$DATA/../passes/golden/fusion_attention.hlo"
  run 0 opt "$g" --passes=fusion --explain
  err_has "fused (kCustom): the scores stay in VMEM (84 KiB for two groups of 1024 queries, of 14336 KiB on v3)"
  run 0 opt "$g" --passes=fusion --explain --target=v3,vmem=64KiB
  err_has "attention not fused: a score row of 7 keys needs 84 KiB of VMEM for two groups of 1024 queries, more than 56 KiB"
  run 2 opt "$g" --target=cpu
  err_has "is not a TPU target spec"
  run 0 compile "$g" -O2 --explain --target=v2 -o "$T/a.tpub"
  err_has "of 14336 KiB on v2)"
}

"case_$CASE"
[ "$failures" -eq 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "ok"
