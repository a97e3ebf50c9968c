#!/bin/sh
# Builds and runs consumer.cpp the way a user's out-of-tree program is built: the C++ compiler and
# `pkg-config --cflags --libs fluxion`, nothing else.
#   build_consumer.sh uninstalled SRCDIR BUILDDIR CXX...  -- against build/meson-uninstalled
#   build_consumer.sh installed   SRCDIR BUILDDIR CXX...  -- meson install --destdir into a temp dir,
#                                                            then against the installed fluxion.pc only
# CXX... is the compiler command meson uses (possibly several words, e.g. "ccache c++").
set -eu
unset LD_LIBRARY_PATH  # meson test points it at the build tree; the .pc files must suffice
mode=$1 src=$2 build=$3
shift 3
work=$(mktemp -d "${TMPDIR:-/tmp}/fluxion-pkgconfig.XXXXXX")
trap 'rm -rf "$work"' EXIT

case "$mode" in
  uninstalled)
    export PKG_CONFIG_PATH="$build/meson-uninstalled"
    flags=$(pkg-config --cflags --libs fluxion)
    ;;
  installed)
    meson install -C "$build" --no-rebuild --quiet --destdir "$work/root" >"$work/install.log" 2>&1 ||
      { cat "$work/install.log"; exit 1; }
    pc=$(find "$work/root" -name fluxion.pc)
    [ -n "$pc" ] || { echo "fluxion.pc was not installed"; exit 1; }
    prefix=$(sed -n 's/^prefix=//p' "$pc")
    inc="$work/root$prefix/include/fluxion"
    # Only headers are installed, the umbrella header among them, and none of them reaches MLIR/LLVM.
    [ -f "$inc/fluxion.h" ] || { echo "fluxion.h is not installed"; exit 1; }
    others=$(find "$inc" -type f ! -name '*.h')
    [ -z "$others" ] || { echo "non-header files installed:"; echo "$others"; exit 1; }
    [ -f "$inc/fluxion_version.h" ] || { echo "fluxion_version.h is not installed"; exit 1; }
    # The public API only (scripts/public_headers.py): nothing of the kernels' or lowering/'s.
    [ ! -e "$inc/lowering" ] || { echo "lowering/ headers installed"; exit 1; }
    [ ! -e "$inc/kernels" ] || { echo "kernels/ headers installed"; exit 1; }
    if grep -rlE '#include *[<"](mlir|llvm)/' "$inc"; then echo "installed headers include MLIR/LLVM"; exit 1; fi
    # Only the installed .pc, its prefix moved to where the files landed; and no source tree.
    export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_LIBDIR="$(dirname "$pc"):/usr/lib/x86_64-linux-gnu/pkgconfig:/usr/share/pkgconfig"
    flags=$(pkg-config --define-variable=prefix="$work/root$prefix" --cflags --libs fluxion)
    case "$flags" in *"$src"*) echo "installed flags point into the source tree: $flags"; exit 1 ;; esac
    ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac

cd "$work"
# shellcheck disable=SC2086  # the flags are a list of words
"$@" -o consumer "$src/tests/pkgconfig/consumer.cpp" $flags
./consumer
