#!/usr/bin/env bash
# Installs what is missing, builds, runs every test, and ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1
ninja -C build || { echo "0 passed, 1 failed"; exit 1; }

passed=0; failed=0
# The doctest suite: one test case is one test.
out=$(build/tests/fluxion_tests 2>&1); rc=$?
echo "$out" | tail -n 40
line=$(echo "$out" | grep -E '^\[doctest\] test cases:' | tail -n 1)
p=$(echo "$line" | sed -E 's/.*\| *([0-9]+) passed.*/\1/'); f=$(echo "$line" | sed -E 's/.*\| *([0-9]+) failed.*/\1/')
[[ "$p" =~ ^[0-9]+$ ]] || p=0; [[ "$f" =~ ^[0-9]+$ ]] || f=1
[ $rc -ne 0 ] && [ "$f" -eq 0 ] && f=1
passed=$((passed + p)); failed=$((failed + f))

# Every other meson test (the out-of-tree pkg-config program, ...).
for t in $(meson test -C build --list 2>/dev/null | grep -v '^fluxion_tests$'); do
  if meson test -C build --no-rebuild "$t" >/dev/null 2>&1; then passed=$((passed + 1)); echo "PASS $t";
  else failed=$((failed + 1)); echo "FAIL $t"; fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
