#!/bin/sh
# includes.sh SRCROOT: the runtime embeds without the compiler, so no file
# under runtime/ includes a header of ir/, frontend/, passes/, backend/,
# driver/ or tools/. A quoted include must name runtime/... or base/...,
# or be a bare name found beside the file, in runtime/{isa,emu,prof} or in
# include/ (the include directories runtime/meson.build gives).
root=${1:?usage: includes.sh SRCROOT}
cd "$root" || exit 1
bad=0
n=0
for f in $(find runtime -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' \) | sort); do
  n=$((n + 1))
  dir=$(dirname "$f")
  for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
    case "$h" in
    runtime/* | base/*) ok=1 ;;
    */*) ok=0 ;;
    *) ok=0
       for d in "$dir" runtime/isa runtime/emu runtime/prof include; do
         [ -f "$d/$h" ] && ok=1
       done ;;
    esac
    if [ "$ok" = 0 ]; then
      echo "$f: #include \"$h\": not a runtime, base or public header"
      bad=1
    fi
  done
done
[ "$n" -ge 20 ] || { echo "only $n files under runtime/: wrong SRCROOT?"; exit 1; }
[ "$bad" = 0 ] && echo "$n files under runtime/ include only runtime, base and public headers"
exit $bad
