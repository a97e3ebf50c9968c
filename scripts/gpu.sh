#!/usr/bin/env bash
# The GPU run of Fluxion in one command (docs/gpu.md "Running on a GPU machine").
#
# The GPU machines (H100/H200, NVIDIA driver, CUDA toolkit, no LLVM/MLIR 19, no package registry)
# cannot build Fluxion, so the build travels there, with the shared libraries it needs that such a
# machine lacks, as Debian packages:
#
#   scripts/gpu.sh pack   here (Debian 12, scripts/setup.sh done): builds with -Dcuda=enabled, puts
#                         the stripped test and benchmark binaries and libfluxion.so in .gpu/bin, and
#                         `apt-get download`s into .gpu/debs the package of every shared library they
#                         load (ldd, dpkg -S) but glibc and the base libraries: libllvm19, libmlir-19,
#                         libz3-4, Open MPI, ... (about 47 MB; .gpu/ is git-ignored; give it to the
#                         device tool as `carry`).
#   scripts/gpu.sh run    on the GPU machine: checks the recipe first (driver, GPU, glibc, toolkit),
#                         unpacks the packages with `dpkg -x` (or ar+tar) into .gpu/prefix, checks
#                         that every library resolves (ldd), and runs
#                         the GPU tests, then the whole suite, then the GPU benchmarks, with the
#                         unpacked libraries first on LD_LIBRARY_PATH.
#
# Environment for `run`: FLUXION_CUDA_HOME (default /usr/local/cuda: libdevice and ptxas),
# FLUXION_GPU_ARCH (default sm_90).
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD
gpu=$here/.gpu

pack() {
  [ -f build/build.ninja ] || scripts/setup.sh
  meson configure build -Dcuda=enabled >/dev/null
  nice ninja -C build
  rm -rf "$gpu" && mkdir -p "$gpu/bin" "$gpu/debs"
  cp build/libfluxion.so "$gpu/bin/"
  cp build/tests/fluxion_tests "$gpu/bin/"
  cp build/bench/fluxion_bench_compile "$gpu/bin/"
  strip --strip-unneeded "$gpu"/bin/*
  # The packages of every library the binaries load, except glibc (it must be the machine's own)
  # and the base libraries every Debian/Ubuntu system has under the same sonames (carrying them
  # would pass the device tool's 64 MiB: with them the packages alone are 59 MB).
  mapfile -t libs < <(LD_LIBRARY_PATH=build ldd "$gpu"/bin/* | awk '/=> \//{print $3}' | sort -u)
  declare -A pkgs=()
  for lib in "${libs[@]}"; do
    real=$(readlink -f "$lib")
    p=$(dpkg -S "$real" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || true)
    p=${p%%:*}
    case "$p" in
      ''|libc6|libc6-dev|libgcc-s1|libstdc++6|zlib1g|libzstd1|liblzma5|libtinfo6|libudev1|libbsd0|libmd0|libxml2|libicu*) continue ;;
    esac
    pkgs[$p]=1
  done
  (cd "$gpu/debs" && apt-get download "${!pkgs[@]}" >/dev/null)
  echo "gpu.sh pack: $(ls "$gpu/debs" | wc -l) packages, $(du -sh "$gpu" | cut -f1) in .gpu (carry: .gpu)"
  ls "$gpu/debs"
}

check_machine() {
  local ok=1
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader ||
    { echo "gpu.sh: no nvidia-smi (no driver?)"; ok=0; }
  ldconfig -p | grep -q 'libcuda.so.1' || { echo "gpu.sh: the loader does not know libcuda.so.1"; ok=0; }
  local cuda=${FLUXION_CUDA_HOME:-/usr/local/cuda}
  [ -f "$cuda/nvvm/libdevice/libdevice.10.bc" ] || { echo "gpu.sh: no libdevice under $cuda (set FLUXION_CUDA_HOME)"; ok=0; }
  # Built against Debian 12's glibc 2.36: an older one cannot run the binaries.
  local glibc
  glibc=$(ldd --version | head -n1 | grep -oE '[0-9]+\.[0-9]+$')
  if [ "$(printf '%s\n2.36\n' "$glibc" | sort -V | head -n1)" != "2.36" ]; then
    echo "gpu.sh: glibc $glibc is older than the 2.36 the build needs"; ok=0
  fi
  [ -d "$gpu/bin" ] && [ -d "$gpu/debs" ] || { echo "gpu.sh: no .gpu/bin and .gpu/debs (run 'scripts/gpu.sh pack' first and carry .gpu)"; ok=0; }
  [ $ok -eq 1 ]
}

# After unpacking: every library the binaries need must resolve (a base library pack left out
# that this machine lacks shows here, by soname).
check_libraries() {
  local missing
  missing=$(ldd "$gpu"/bin/* 2>/dev/null | grep 'not found' | sort -u || true)
  [ -z "$missing" ] || { echo "gpu.sh: libraries missing on this machine:"; echo "$missing"; return 1; }
}

unpack() {
  mkdir -p "$gpu/prefix"
  for deb in "$gpu"/debs/*.deb; do
    if command -v dpkg >/dev/null; then
      dpkg -x "$deb" "$gpu/prefix"
    else  # a .deb is an ar archive holding data.tar.*
      (tmp=$(mktemp -d) && cd "$tmp" && ar x "$deb" && tar -xf data.tar.* -C "$gpu/prefix" && rm -rf "$tmp")
    fi
  done
}

run() {
  check_machine || { echo "gpu.sh: this machine cannot run the carried build (above)"; exit 1; }
  unpack
  export LD_LIBRARY_PATH="$gpu/bin:$gpu/prefix/usr/lib/llvm-19/lib:$gpu/prefix/usr/lib/x86_64-linux-gnu:$gpu/prefix/usr/lib/x86_64-linux-gnu/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export FLUXION_CUDA_HOME=${FLUXION_CUDA_HOME:-/usr/local/cuda}
  check_libraries || exit 1
  mkdir -p "${OUT:-$gpu/out}"
  local out=${OUT:-$gpu/out}
  echo "== GPU tests"
  "$gpu/bin/fluxion_tests" --test-case='gpu*,cuda*' 2>&1 | tee "$out/gpu_tests.txt" | tail -n 40
  echo "== the whole suite"
  "$gpu/bin/fluxion_tests" 2>&1 | tee "$out/all_tests.txt" | tail -n 5
  # The GPU benchmarks so far: the one-op compile beside the CPU's (the issue's bandwidth, softmax,
  # matmul and JAX comparisons need GPU arrays first: docs/gpu.md).
  echo "== GPU benchmarks"
  "$gpu/bin/fluxion_bench_compile" onep gpu 2>&1 | tee "$out/gpu_bench.txt"
}

case "${1:-}" in
  pack) pack ;;
  run) run ;;
  check) check_machine ;;
  *) echo "usage: scripts/gpu.sh pack|check|run (docs/gpu.md)"; exit 2 ;;
esac
