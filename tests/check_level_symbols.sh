#!/usr/bin/env bash
# Checks that the per-level builds of Eigen's kernels (kernels/matmul_eigen.cpp and
# prims/linalg_eigen.cpp, one static library per x86-64 level each) define no symbol another object
# of the library could also define. A weak or global symbol both objects define is one symbol to the
# linker, which keeps one copy for every caller: an inline function compiled with -march=x86-64-v4
# could then run on an AVX2 CPU. Allowed: the level's entry point, names that mention the level's
# renamed Eigen namespace (fluxion_eigen_levelN: only the level-N objects define those, all with the
# same flags, so any copy the linker keeps is right), and DW.ref.__gxx_personality_v0 (a pointer to
# the C++ personality routine, the same data in every object).
# Usage: check_level_symbols.sh libfluxion_{matmul,linalg}_levelN.a...
set -euo pipefail
NM=${NM:-nm}
[ $# -gt 0 ] || { echo "no archives given" >&2; exit 1; }
status=0
for archive in "$@"; do
  kind=$(basename "$archive" | sed -nE 's/^libfluxion_(matmul|linalg)_level[0-9]+\.a$/\1/p')
  level=$(basename "$archive" | sed -nE 's/^libfluxion_(matmul|linalg)_level([0-9]+)\.a$/\2/p')
  [ -n "$level" ] || { echo "$archive: not a libfluxion_{matmul,linalg}_levelN.a" >&2; exit 1; }
  case "$kind" in
    matmul) entry="_ZN7fluxion7runtime19matmul_eigen_level${level}EbRKNS0_11MatmulBlockE" ;;
    linalg) entry="_ZN7fluxion12linalg_rules19linalg_eigen_level${level}ERNS0_11LinalgBlockE" ;;
  esac
  # eigh's and svd's entry, in the linalg archives of levels 1 and 3 (kernels/meson.build).
  spectral="_ZN7fluxion12linalg_rules22linalg_spectral_level${level}ERNS0_11LinalgBlockE"
  symbols=$("$NM" -g --defined-only "$archive" | awk 'NF == 3 { print $3 }')
  if ! grep -qx "$entry" <<<"$symbols"; then
    echo "$archive: does not define its entry point $entry" >&2
    status=1
  fi
  namespace="fluxion_eigen_level${level}"
  eigen=$(grep -c "$namespace" <<<"$symbols" || true)
  stray=$(grep -v -x -e "$entry" -e "$spectral" -e "DW.ref.__gxx_personality_v0" <<<"$symbols" | grep -v "$namespace" || true)
  if [ -n "$stray" ]; then
    echo "$archive: symbols outside $namespace that other objects may also define:" >&2
    c++filt <<<"$stray" | sed 's/^/  /' >&2
    status=1
  else
    echo "$archive: entry point + $eigen symbols of $namespace, nothing else"
  fi
done
exit $status
