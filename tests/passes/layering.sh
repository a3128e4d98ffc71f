#!/bin/bash
# layering.sh SRCDIR: passes/ is target-independent: no file under it
# includes a header of backend/ (a target answers the passes through
# pass_target, passes/passes.h, filled in by the backend).
src=$1
[ -d "$src/passes" ] || { echo "no $src/passes"; exit 1; }
if grep -rnE '#[[:space:]]*include[[:space:]]*"backend/' "$src/passes"; then
  echo "FAIL: passes/ includes backend headers (above)"
  exit 1
fi
echo "ok: passes/ includes no backend header"
