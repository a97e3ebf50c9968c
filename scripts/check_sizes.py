#!/usr/bin/env python3
"""The size budget of the code a reader has to hold in mind: no file over 600 lines and no function
over 80 lines in ir/ prims/ api/ transforms/ lax/ memory/ tests/, except the inherent cases named
below (docs/architecture.md says why each is one piece). Run as a meson test (scripts/test.sh
counts it); prints every breach and exits 1 on any.

A function is a brace block opened at namespace or class scope after a parameter list (a
TEST_CASE's body counts as one); its length runs from its signature's first line to the closing
brace. The scan ignores comments and string literals, which is all the C++ it needs to know.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ["memory", "ir", "lax", "interpreters", "prims", "api", "train", "kernels", "runtime", "lowering", "compile",
           "transforms", "tests"]
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80

# (path, function name or None for the whole file): exceptions, each explained in
# docs/architecture.md ("Size budget").
EXCEPTIONS: set = set()


def strip_comments_and_strings(text):
    """The text with comments and string/char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, last line) of every function body at namespace or class scope."""
    code = strip_comments_and_strings(text)
    stack = []  # per open brace: is it a scope that can hold function definitions?
    found = []
    start = 0  # where the current declaration's text begins
    for i, c in enumerate(code):
        if c in ";":
            start = i + 1
        elif c == "{":
            head = code[start:i]
            at_scope = all(stack)
            is_scope = re.search(r"\b(namespace|struct|class|union|enum|extern)\b[^()]*$", head) is not None
            is_function = at_scope and not is_scope and ")" in head and "=" not in head.split("(")[0]
            if is_function:
                name = re.findall(r"([A-Za-z_][\w:~<>]*)\s*\(", head)
                first = code.count("\n", 0, start + len(head) - len(head.lstrip())) + 1
                stack.append(("function", name[0] if name else "?", first))
            else:
                stack.append(is_scope)
            start = i + 1
        elif c == "}":
            top = stack.pop() if stack else None
            if isinstance(top, tuple):
                found.append((top[1], top[2], code.count("\n", 0, i) + 1))
            start = i + 1
    return found


def main():
    breaches = []
    used = set()
    for folder in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(names):
                if not name.endswith((".h", ".cpp", ".inc")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, ROOT)
                text = open(path, encoding="utf-8").read()
                lines = text.count("\n")
                if lines > MAX_FILE_LINES:
                    if (rel, None) in EXCEPTIONS:
                        used.add((rel, None))
                    else:
                        breaches.append(f"{rel}: {lines} lines (budget {MAX_FILE_LINES})")
                for fn, first, last in functions(text):
                    length = last - first + 1
                    if length > MAX_FUNCTION_LINES:
                        if (rel, fn) in EXCEPTIONS:
                            used.add((rel, fn))
                        else:
                            breaches.append(f"{rel}:{first}: {fn} is {length} lines (budget {MAX_FUNCTION_LINES})")
    for stale in sorted(set(EXCEPTIONS) - used, key=str):
        breaches.append(f"{stale[0]}: the exception for {stale[1] or 'the file'} is no longer needed; remove it")
    for b in breaches:
        print(b)
    if breaches:
        print(f"check_sizes: {len(breaches)} breach(es)")
        return 1
    print("check_sizes: every file and function within budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
