#!/usr/bin/env python3
"""The floors of the library (docs/architecture.md): a file may include files of its own floor or
of a lower one, never of a higher one. Run as a meson test (scripts/test.sh counts it); prints every
upward include and exits 1 on any that is not listed in KNOWN below.

Also checked: MLIR and LLVM headers are included only inside lowering/, and no header outside
lowering/ includes a lowering/ header (so a user program needs no MLIR include path).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Lowest first. A path belongs to the floor of the longest prefix that matches it.
FLOORS = [
    ("memory", ["memory/"]),              # host buffers and the caching allocator; what a device is
    ("ir", ["ir/"]),                      # types, programs, arrays, trees, tracing and bind, the eval table
    ("lax", ["lax/"]),                    # one op per primitive, no promotion: what rules are written with
    ("interpreters", ["interpreters/"]),  # Program -> Program rewrites, each owning its rule table
    ("prims", ["prims/"]),                # one block per primitive, registered into those tables
    ("api", ["api/"]),                    # the numpy-style functions and operators
    ("train", ["train/"]),                # the training library: layers, losses, optimizers, checkpoints, data
    ("kernels", ["kernels/"]),            # what compiled kernels call on the host: matmul, convolutions, library calls
    ("runtime", ["runtime/"]),            # devices, drivers, allocators, executables, collectives
    ("lowering", ["lowering/"]),          # Program -> MLIR -> native code or PTX
    ("compile", ["compile/"]),            # the compile cache: a Program in, an Executable out, by platform
    ("user", ["include/", "transforms/"]),  # what users call: transformations of C++ functions
]
CHECKED = ["memory", "ir", "lax", "interpreters", "prims", "api", "train", "kernels", "runtime", "lowering", "compile",
           "transforms", "include"]

# Upward includes that are known and scheduled to go (from, to): each must still exist.
KNOWN: set = set()


def floor_of(path):
    best, level = None, None
    for i, (_, prefixes) in enumerate(FLOORS):
        for p in prefixes:
            if path.startswith(p) and (best is None or len(p) > len(best)):
                best, level = p, i
    return level


def sources():
    for folder in CHECKED:
        for dirpath, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(names):
                if name.endswith((".h", ".cpp", ".inc")):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT)


def main():
    problems, seen_known = [], set()
    include = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
    for path in sources():
        src_floor = floor_of(path)
        for n, line in enumerate(open(os.path.join(ROOT, path), encoding="utf-8"), 1):
            m = include.match(line)
            if not m:
                continue
            kind, target = m.groups()
            if kind == "<":
                if re.match(r"(mlir|llvm|llvm-c)/", target) and not path.startswith("lowering/"):
                    problems.append(f"{path}:{n}: includes <{target}>: MLIR/LLVM headers belong in lowering/ only")
                continue
            if target.startswith("lowering/") and path.endswith(".h") and not path.startswith("lowering/"):
                problems.append(f"{path}:{n}: a header outside lowering/ includes {target} (it would need MLIR)")
            dst_floor = floor_of(target)
            if dst_floor is None or src_floor is None or dst_floor <= src_floor:
                continue
            if (path, target) in KNOWN:
                seen_known.add((path, target))
                continue
            problems.append(f"{path}:{n}: includes {target}, a higher floor ({FLOORS[dst_floor][0]} above "
                            f"{FLOORS[src_floor][0]})")
    for stale in sorted(KNOWN - seen_known):
        problems.append(f"{stale[0]} no longer includes {stale[1]}: remove it from KNOWN in scripts/check_layers.py")
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s)")
        return 1
    print("check_layers: no include reaches a higher floor (known exceptions: %d)" % len(KNOWN))
    return 0


if __name__ == "__main__":
    sys.exit(main())
