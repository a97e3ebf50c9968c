#!/usr/bin/env python3
"""The environment settings in step (ir/settings.h): every FLUXION_* name the library's sources
read is in the table of ir/settings.cpp, and the table and docs/settings.md list the same settings.
Run as a meson test (scripts/test.sh counts it); prints every mismatch and exits 1 on any.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY = ["ir", "lax", "interpreters", "transforms", "prims", "api", "train", "kernels", "runtime", "lowering", "compile",
           "memory", "include"]
READ = re.compile(r'(?:getenv|setting_value|choice_setting|toggle_setting|integer_setting|seconds_setting|switched_off|env_on)'
                  r'\(\s*"(FLUXION_[A-Z0-9_]+)"')


def table():
    src = open(os.path.join(ROOT, "ir", "settings.cpp")).read()
    body = src[src.index("kSettings[] = {"):src.index("};", src.index("kSettings[] = {"))]
    return re.findall(r'\{"(FLUXION_[A-Z0-9_*]+)", K::(\w+)', body)


def covered(name, names):
    return any(n == name or (n.endswith("*") and name.startswith(n[:-1])) for n in names)


def main():
    entries = table()
    names = [n for n, _ in entries]
    problems = []
    for top in LIBRARY:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if not f.endswith((".cpp", ".h")):
                    continue
                path = os.path.join(dirpath, f)
                for name in READ.findall(open(path, errors="replace").read()):
                    if not covered(name, names):
                        problems.append(f"{os.path.relpath(path, ROOT)} reads {name}, which ir/settings.cpp's table lacks")
    doc = open(os.path.join(ROOT, "docs", "settings.md")).read()
    documented = re.findall(r"^\| `(FLUXION_[A-Z0-9_*]+)`", doc, re.M)
    for n, kind in entries:
        if n not in documented:
            problems.append(f"{n} is in the table but not in docs/settings.md")
    for n in documented:
        if n not in names:
            problems.append(f"docs/settings.md lists {n}, which the table lacks")
    for p in problems:
        print(p)
    print(f"{len(entries)} settings, {len(documented)} documented, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
