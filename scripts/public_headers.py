#!/usr/bin/env python3
"""Prints the public headers, one per line: the headers a user's program can reach from the entry
points named on the command line (include/fluxion.h, api/interop_eigen.h), following their quoted
includes through the source tree. meson.build installs exactly these, so an internal header (a
kernel's, the runtime's, the lowering's) stays out of <includedir>/fluxion.

Usage: public_headers.py SRCDIR ENTRY...   (paths relative to SRCDIR; entries are not printed)
A quoted include that resolves neither against SRCDIR nor against SRCDIR/include is a header the
build generates (fluxion_version.h), which meson installs itself.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def resolve(src, name):
    for base in ("", "include"):
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(src, path)):
            return path
    return None


def reachable(src, entries):
    seen, todo = set(), list(entries)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        with open(os.path.join(src, path), encoding="utf-8") as f:
            for line in f:
                m = INCLUDE.match(line)
                if m:
                    target = resolve(src, m.group(1))
                    if target is not None:
                        todo.append(target)
    return sorted(seen - set(entries))


if __name__ == "__main__":
    src, entries = sys.argv[1], sys.argv[2:]
    print("\n".join(reachable(src, entries)))
