#!/usr/bin/env bash
# Installs whatever the build needs that is missing (Debian 12), then configures build/.
# Quick when everything is already in place: it checks before it installs.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in meson ninja-build g++ pkg-config libeigen3-dev doctest-dev libbenchmark-dev \
         llvm-19-dev libmlir-19-dev mlir-19-tools libomp-dev; do
  have_pkg "$p" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release >/dev/null
fi
