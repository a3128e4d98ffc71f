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
# libtpurt-mpi, when the build has it: samples/embed_mpi/pod.c compiled
# with nothing but `pkg-config --cflags --libs tpurt-mpi` (which brings
# libtpurt and MPI's flags) and, with mpirun at hand, run on 2 ranks. The
# installed .pc files get the DESTDIR in their prefix (a sysroot would
# also move MPI's system paths).
mpc=$(find "$tmp" -name tpurt-mpi.pc | head -n 1)
[ -n "$mpc" ] || exit 0
unset PKG_CONFIG_SYSROOT_DIR
mkdir "$tmp/pc"
for f in "$(dirname "$mpc")"/tpurt.pc "$mpc"; do
  sed "s|^prefix=|prefix=$tmp|" "$f" >"$tmp/pc/$(basename "$f")"
done
export PKG_CONFIG_PATH=$tmp/pc
${CC:-cc} -std=c11 $san "$src/samples/embed_mpi/pod.c" $(pkg-config --cflags --libs tpurt-mpi) \
  -o "$tmp/pod"
mpirun=$(command -v mpirun || true)
[ -n "$mpirun" ] && [ -x "$build/tools/tpucc" ] || { echo "pod built; no mpirun or tpucc to run it"; exit 0; }
"$build/tools/tpucc" compile "$src/tests/docs/files/allreduce8.hlo" --target=v3-8 -o "$tmp/ar8.tpub"
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" LD_LIBRARY_PATH=$libdir \
  timeout 60 "$mpirun" --allow-run-as-root --oversubscribe --mca btl self,vader -x LD_LIBRARY_PATH \
  -np 2 "$tmp/pod" "$tmp/ar8.tpub" --target=v3-8 >"$tmp/pod.out"
grep -qx 'pod 0 core 7 result 0: 36 72 108 144' "$tmp/pod.out" ||
  { echo "the installed pod printed:"; cat "$tmp/pod.out"; exit 1; }
LD_LIBRARY_PATH=$libdir ldd "$tmp/pod" | grep -q "$tmp.*libtpurt-mpi" || { echo "pod did not load the installed libtpurt-mpi"; exit 1; }
echo "the installed libtpurt-mpi: pod built with pkg-config tpurt-mpi ran on 2 ranks"
