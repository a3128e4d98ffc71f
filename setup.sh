#!/usr/bin/env bash
# setup.sh: installs what is missing (Debian packages, as root), configures
# and builds tpucc into ./build. Idempotent: a second run only rebuilds.
#   bash setup.sh            # default build
#   BUILD=build-asan MESON_ARGS="-Db_sanitize=address,undefined" bash setup.sh
#   ORACLES=1 bash setup.sh  # also python3-torch, the oracle of the autograd
#                            # and optimizer tests (they skip without it)
set -euo pipefail
cd "$(dirname "$0")"

PKGS="meson ninja-build flex bison pkg-config gcc libcmocka-dev llvm-dev
      libopenblas-dev zlib1g-dev python3-numpy dataset-fashion-mnist
      libopenmpi-dev openmpi-bin"
if [ "${ORACLES:-}" = 1 ]; then PKGS="$PKGS python3-torch"; fi
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup.sh: installing:$missing"
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

BUILD="${BUILD:-build}"
ARGS="${MESON_ARGS:-}"
if [ "${CI:-}" = true ]; then ARGS="$ARGS -Dwerror=true"; fi
if [ ! -f "$BUILD/build.ninja" ]; then
  # shellcheck disable=SC2086
  meson setup "$BUILD" $ARGS
fi
ninja -C "$BUILD"
