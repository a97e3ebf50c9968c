#!/bin/sh
# Builds and runs consumer.cpp the way a CMake user's program is built: `meson install --destdir`
# into a temporary tree, then tests/pkgconfig/cmake/CMakeLists.txt (find_package(Fluxion VERSION)
# and target_link_libraries(... Fluxion::fluxion)) configured against that tree alone.
#   build_cmake_consumer.sh SRCDIR BUILDDIR VERSION CXX...
# Also checks that a request for another minor version is refused (the 0.x compatibility rule),
# and the soname the library and the program carry. Exits 77 (skipped) where cmake is missing.
set -eu
unset LD_LIBRARY_PATH  # meson test points it at the build tree; the package must suffice
src=$1 build=$2 version=$3
shift 3
command -v cmake >/dev/null || { echo "cmake is not installed: skipped"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fluxion-cmake.XXXXXX")
trap 'rm -rf "$work"' EXIT

meson install -C "$build" --no-rebuild --quiet --destdir "$work/root" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }
config=$(find "$work/root" -name FluxionConfig.cmake)
[ -n "$config" ] || { echo "FluxionConfig.cmake was not installed"; exit 1; }
[ -f "$(dirname "$config")/FluxionConfigVersion.cmake" ] || { echo "FluxionConfigVersion.cmake was not installed"; exit 1; }
prefix=$(find "$work/root" -name fluxion.h -path '*/include/fluxion/*' | sed 's|/include/fluxion/fluxion.h$||')

# The compiler meson uses, possibly behind ccache.
launcher=""
if [ "$(basename "$1")" = ccache ]; then launcher=$1; shift; fi
cxx=$1

configure() {  # configure DIR REQUEST
  cmake -S "$src/tests/pkgconfig/cmake" -B "$1" -DCMAKE_PREFIX_PATH="$prefix" -DFLUXION_REQUEST="$2" \
    -DCMAKE_CXX_COMPILER="$cxx" ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"} -DCMAKE_BUILD_TYPE=Release
}
major=${version%%.*} rest=${version#*.}
minor=${rest%%.*}
configure "$work/build" "$major.$minor" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
grep -q "Fluxion $version from $prefix" "$work/cmake.log" || { cat "$work/cmake.log"; echo "found the wrong package"; exit 1; }
cmake --build "$work/build" >"$work/make.log" 2>&1 || { cat "$work/make.log"; exit 1; }
out=$("$work/build/consumer")
echo "$out"
echo "$out" | grep -qx "version: $version" || { echo "the program does not see version $version"; exit 1; }

# Another minor version of 0.x is another ABI: find_package must refuse it.
if configure "$work/other" "$major.$((minor + 1))" >"$work/cmake-other.log" 2>&1; then
  echo "find_package(Fluxion $major.$((minor + 1))) accepted version $version"; exit 1
fi

# The soname: libfluxion.so.<major>.<minor> while the major is 0, and the program needs that name.
soname=$(readelf -d "$(find "$work/root" -name "libfluxion.so.$version")" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libfluxion.so.$major.$minor" ] || { echo "soname is '$soname'"; exit 1; }
readelf -d "$work/build/consumer" | grep -q "NEEDED.*\[libfluxion.so.$major.$minor\]" ||
  { echo "the program does not need libfluxion.so.$major.$minor"; exit 1; }
echo "cmake package: ok (find_package(Fluxion $major.$minor), soname $soname)"
