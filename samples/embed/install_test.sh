#!/bin/sh
# install_test.sh BUILD_DIR SOURCE_DIR: installs the project into a
# temporary DESTDIR, then compiles samples/embed/embed.c against the
# installed libtpurt using only pkg-config, and runs it.
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --destdir "$tmp" --no-rebuild --quiet >/dev/null
pc=$(find "$tmp" -name tpurt.pc | head -n 1)
[ -n "$pc" ] || { echo "tpurt.pc was not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_SYSROOT_DIR=$tmp
cflags=$(pkg-config --cflags tpurt)
libs=$(pkg-config --libs tpurt)
libdir=$(dirname "$(find "$tmp" -name 'libtpurt.so*' | head -n 1)")
# A sanitizer build installs an instrumented library: match it.
san=
if ldd "$(find "$libdir" -name 'libtpurt.so*' | head -n 1)" | grep -q libasan; then
  san="-fsanitize=address,undefined"
fi
${CC:-cc} -std=c11 $san "$src/samples/embed/embed.c" $cflags $libs -lm -o "$tmp/embed"
LD_LIBRARY_PATH=$libdir "$tmp/embed"
