#!/bin/sh
# install_cpu.sh BUILD_DIR SOURCE_DIR AXPY_HLO: installs the project into a
# temporary DESTDIR, compiles tests/runtime/cpu_example.c against the
# installed libtpurt-cpu using only `pkg-config tpurt-cpu`, runs it on the
# AXPY module (tests/modules/axpy.hlo) on the cpu device, and checks that
# the TPU-only libtpurt does not load LLVM.
set -eu
build=$1
src=$2
hlo=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --destdir "$tmp" --no-rebuild --quiet >/dev/null
pc=$(find "$tmp" -name tpurt-cpu.pc | head -n 1)
[ -n "$pc" ] || { echo "tpurt-cpu.pc was not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_SYSROOT_DIR=$tmp
libdir=$(dirname "$pc")/..
san=
if ldd "$libdir/libtpurt-cpu.so" | grep -q libasan; then san="-fsanitize=address,undefined"; fi
${CC:-cc} -std=c11 -Wall -Wextra -pedantic $san "$src/tests/runtime/cpu_example.c" \
  $(pkg-config --cflags --libs tpurt-cpu) -o "$tmp/cpu_example"
LD_LIBRARY_PATH=$libdir "$tmp/cpu_example" "$hlo" cpu
if ldd "$libdir/libtpurt.so" | grep -qi llvm; then
  echo "libtpurt.so depends on LLVM"
  exit 1
fi
