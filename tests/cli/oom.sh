#!/usr/bin/env bash
# oom.sh TPUCC WORKDIR: a host that runs out of memory in the middle of a
# compile gets "error: out of memory (host)" and exit status 1, never an
# abort or a crash. A 60,000-instruction chain is run on interp under
# address-space limits from 300 MiB to 1.5 GiB; at each limit the run must
# exit 0 (it fitted), 1 with the out-of-memory error, or 127 (the loader
# could not map the shared libraries: too small to test). At least one limit
# must reach the out-of-memory error. Not registered under sanitizers, which
# reserve more address space than any such limit. A run that hangs (exit
# handlers waiting on threads after the failure) fails at 60 s.
set -u
TPUCC=$1
W=$2
mkdir -p "$W"
awk 'BEGIN { n = 60000; print "HloModule chain\nENTRY e {\n  a0 = f32[4] parameter(0)";
             for (i = 1; i < n; i++) print "  a" i " = f32[4] negate(a" i - 1 ")";
             print "  ROOT r = f32[4] negate(a" n - 1 ")\n}" }' >"$W/chain.hlo"
hit=0 fail=0
for mib in 300 400 500 600 800 1000 1500; do
  (ulimit -v $((mib * 1024)) && exec timeout 60 "$TPUCC" run "$W/chain.hlo" --target=interp \
    --input=4xf32="1 2 3 4") >"$W/out" 2>"$W/err"
  rc=$?
  case $rc in
    0 | 127) ;;
    1) if grep -q '^error: out of memory (host)' "$W/err"; then hit=$((hit + 1)); fi ;;
    *) echo "FAIL: limit ${mib} MiB: exit status $rc"; head -c 400 "$W/err"; fail=1 ;;
  esac
done
if [ $hit = 0 ]; then echo "FAIL: no limit reached the out-of-memory error"; fail=1; fi
echo "$hit limits ran out of memory cleanly"
exit $fail
