#!/usr/bin/env bash
# tools/llvm_versions.sh: builds tpucc against each installed LLVM with
# --werror and runs the suites that exercise the CPU backend (llvm, cli and
# the runtime's libtpurt-cpu test), one build directory per version.
#
#   tools/llvm_versions.sh [PREFIX [LLVM_CONFIG...]]
#
# PREFIX (default build-llvm) names the build directories PREFIX-NN, under
# the source root. Without LLVM_CONFIG arguments, every
# /usr/lib/llvm-NN/bin/llvm-config with NN in 14..19 is tried (Debian:
# apt-get install llvm-15-dev llvm-16-dev llvm-19-dev). Prints one line per
# version and exits nonzero when any build or suite fails. CI builds only
# against the default llvm-config (docs/cpu-backend.md, "LLVM versions").
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-build-llvm}
shift || true
configs=("$@")
if [ ${#configs[@]} -eq 0 ]; then
  for c in /usr/lib/llvm-*/bin/llvm-config; do
    [ -x "$c" ] || continue
    v=$("$c" --version) || continue
    major=${v%%.*}
    if [ "$major" -ge 14 ] && [ "$major" -le 19 ]; then configs+=("$c"); fi
  done
fi
if [ ${#configs[@]} -eq 0 ]; then
  echo "no llvm-config for LLVM 14..19 found" >&2
  exit 2
fi
jobs=${JOBS:-2}
status=0
summary=()
for c in "${configs[@]}"; do
  v=$("$c" --version)
  dir="$root/$prefix-${v%%.*}"
  log="$dir.log"
  result="ok"
  if [ ! -d "$dir" ]; then
    meson setup "$dir" "$root" -Dllvm=enabled -Dllvm_config="$c" -Dwerror=true >"$log" 2>&1 ||
      result="setup failed"
  fi
  if [ "$result" = ok ] && ! ninja -C "$dir" -j"$jobs" >>"$log" 2>&1; then result="build failed"; fi
  if [ "$result" = ok ] && ! meson test -C "$dir" --num-processes "$jobs" --suite llvm --suite cli \
      >>"$log" 2>&1; then
    result="tests failed"
  fi
  tests=$(grep -E '^(Ok|Fail|Timeout):' "$dir/meson-logs/testlog.txt" 2>/dev/null | tr -s ' ' | tr '\n' ' ')
  summary+=("LLVM $v ($c): $result; $tests(log: $log)")
  [ "$result" = ok ] || status=1
done
printf '%s\n' "${summary[@]}"
exit $status
