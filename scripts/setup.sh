#!/usr/bin/env bash
# Installs whatever the build needs that is missing (Debian 12, as root or with sudo), and the
# packages named as arguments, then configures build/. Quick when everything is already in place:
# it checks before it installs and configures only when build/ is not configured yet.
#
#   scripts/setup.sh            what the library, the examples and the benchmarks need (showcase.sh)
#   scripts/setup.sh --tests    that and what only the tests need (test.sh): about 250 more Debian
#                               packages, 0.9 GB, that the showcase does not wait for
#   scripts/setup.sh PKG...     that and the packages named (data.sh: the datasets; fuzz.sh: clang)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/progress.sh

packages=(meson ninja-build g++ pkg-config libeigen3-dev doctest-dev libbenchmark-dev
          llvm-19-dev libmlir-19-dev mlir-19-tools libomp-dev
          nlohmann-json3-dev  # configured with the tests (the profiler's trace files are parsed there)
          zlib1g-dev
          libfftw3-dev  # the fft primitive's kernel (FFTW 3, single and double precision)
          libopenblas-pthread-dev liblapacke-dev  # LAPACK for large decompositions (OpenBLAS: runtime CPU dispatch); LAPACKE: bench only
          # MPI: optional for the library, used by the multi-process tests. Installed with the
          # library, not with the tests, so that build/ is configured with it from the start.
          libopenmpi-dev openmpi-bin)
if [ "${1:-}" = --tests ]; then
  shift
  packages+=(cmake graphviz  # find_package(Fluxion) (tests/pkgconfig/), fx::to_dot rendered by dot
             clang-tools-19 python3-ipykernel python3-jupyter-client python3-nbclient python3-matplotlib  # notebooks/
             python3-venv)  # onnxruntime and tensorboard from PyPI (scripts/onnxruntime.sh, tensorboard.sh)
fi
packages+=("$@")  # extra packages a caller needs
need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in "${packages[@]}"; do
  have_pkg "$p" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  step "setup: installing ${#need[@]} Debian packages and what they need: ${need[*]}"
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: run as root or install sudo (missing: ${need[*]})" >&2; exit 1; }
    SUDO=(sudo)
  fi
  "${SUDO[@]}" apt-get update -qq
  # apt's own progress, a line per package fetched and set up (a fresh machine: about 300).
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" |
    grep --line-buffered -E '^(Get:|Setting up|E:|Need to get)' | sed -u 's/^/   apt: /' | cut -c1-110
  for p in "${need[@]}"; do
    have_pkg "$p" || { echo "setup: apt-get did not install $p" >&2; exit 1; }
  done
fi

# Configure once; a build/ left half-configured (no build.ninja) is wiped and configured again.
if [ ! -f build/build.ninja ]; then
  wipe=()
  [ -d build/meson-private ] && wipe=(--wipe)
  step "setup: configuring build/ (meson setup, release)"
  log=$(mktemp)
  if ! meson setup "${wipe[@]}" build --buildtype=release >"$log" 2>&1; then
    cat "$log" >&2
    echo "setup: meson setup failed (log above)" >&2
    exit 1
  fi
  rm -f "$log"
fi
