#!/usr/bin/env bash
# Installs what is missing, builds, runs every test, and ends with "N passed, N failed".
# The doctest suite counts one per test case; every other meson test (the out-of-tree pkg-config
# builds, ...) counts one. Exit status 0 only when nothing failed.
set -uo pipefail
cd "$(dirname "$0")/.."

summary() { echo "$1 passed, $2 failed"; [ "$2" -eq 0 ]; exit $?; }
source scripts/progress.sh

step "checking what is installed (scripts/setup.sh --tests: apt-get for what is missing, then meson setup)"
scripts/setup.sh --tests || { echo "setup failed"; summary 0 1; }
scripts/data.sh || { echo "data setup failed"; summary 0 1; }  # Fashion-MNIST for the examples' short runs
step "building the library, the tests, the examples and the benchmarks"
ninja_watched build/ninja.log || { tail -n 60 build/ninja.log; echo "build failed"; summary 0 1; }

passed=0 failed=0

step "the Python packages some tests read their output with (PyPI, optional)"
# onnxruntime from PyPI for the ONNX export tests (skipped, not passed, where it cannot be installed).
FLUXION_TEST_PYTHON=$(scripts/onnxruntime.sh)
export FLUXION_TEST_PYTHON
# tensorboard from PyPI for reading fx::summary's event files back (skipped where it cannot be installed).
FLUXION_TEST_TENSORBOARD_PYTHON=$(scripts/tensorboard.sh)
export FLUXION_TEST_TENSORBOARD_PYTHON

# The kernels' disk cache (on by default, in ~/.cache/fluxion): a fresh one for this run, so that
# every test compiles what it tests and only this run's processes share kernels.
FLUXION_CACHE_DIR=$(mktemp -d /tmp/fluxion-test-cache.XXXXXX)
export FLUXION_CACHE_DIR
trap 'rm -rf "$FLUXION_CACHE_DIR"' EXIT

# The doctest suite: one test case is one test. A crash or a hang counts as a failure even when
# the summary line is missing. --duration prints a line as each test case ends: the progress.
# FLUXION_EAGER_COMPILE=off: fx::eval, the tests' reference interpreter, runs the reference
# kernels only (tests/test_eager_compiled.cpp turns the compiled eager path on where it tests it).
total=$(build/tests/fluxion_tests --count 2>/dev/null | sed -nE 's/.*filters: ([0-9]+)$/\1/p')
step "the doctest suite: ${total:-?} test cases (build/doctest.out)"
rc=0
WATCH_TOTAL=${total:-?} watched "doctest" build/doctest.out '^[0-9.]+ s: ' \
  env FLUXION_EAGER_COMPILE=off timeout 1800 build/tests/fluxion_tests --duration=true || rc=$?
line=$(grep -E '^\[doctest\] test cases:' build/doctest.out | tail -n 1)
p=$(sed -nE 's/.*\| *([0-9]+) passed.*/\1/p' <<<"$line"); f=$(sed -nE 's/.*\| *([0-9]+) failed.*/\1/p' <<<"$line")
[[ "$p" =~ ^[0-9]+$ ]] || p=0
[[ "$f" =~ ^[0-9]+$ ]] || f=0
if [ $rc -ne 0 ]; then
  # The failing checks with their messages: the test-case blocks holding more than a header and
  # a duration line, then the end of the output (a crash's last words).
  awk '/^====/ { if (bad) printf "%s", block; block = ""; bad = 0 }
       { block = block $0 "\n" }
       !/^====|^$|^[^ ]+:[0-9]+:$|^TEST CASE: |^[0-9.]+ s: |^\[doctest\]/ { bad = 1 }
       END { if (bad) printf "%s", block }' build/doctest.out | tail -n 400
  tail -n 20 build/doctest.out
  [ "$f" -eq 0 ] && f=1       # crashed, timed out, or failed without a summary
else
  grep -E '^\[doctest\] (test cases|assertions):' build/doctest.out
fi
passed=$((passed + p)); failed=$((failed + f))

# Every other meson test, one at a time (--no-rebuild: the build above is current, and the list
# must not contain ninja's own output).
mapfile -t tests < <(meson test -C build --no-rebuild --list 2>/dev/null | grep -vx 'fluxion_tests')
step "${#tests[@]} more tests (meson): builds out of the tree, other devices and CPUs, examples"
for t in "${tests[@]}"; do
  [ -n "$t" ] || continue
  if watched "$t" build/meson-test.out '^$^' meson test -C build --no-rebuild "$t"; then
    passed=$((passed + 1)); echo "PASS $t"
  else
    failed=$((failed + 1)); echo "FAIL $t"
    tail -n 40 build/meson-logs/testlog.txt
  fi
done

# The notebooks (notebooks/README.md), one count each, executed headless by nbclient. Python is
# Debian's (/usr/bin/python3): the notebook packages are Debian packages.
step "the notebooks (build/notebooks)"
notebooks_run=0
while read -r verdict name rest; do
  case "$verdict" in
    PASS) passed=$((passed + 1)) notebooks_run=$((notebooks_run + 1)); echo "PASS notebook $name $rest" ;;
    FAIL) failed=$((failed + 1)) notebooks_run=$((notebooks_run + 1)); echo "FAIL notebook $name $rest" ;;
  esac
done < <(JUPYTER_PATH="$PWD/notebooks/jupyter" FLUXION_NB_FLAGS="-std=c++20 -I$PWD -I$PWD/include -I$PWD/build" \
         FLUXION_NB_LIBS="$PWD/build/libfluxion.so" FLUXION_NB_CELL_TIMEOUT=120 \
         /usr/bin/python3 notebooks/run_notebooks.py --out build/notebooks notebooks/*.ipynb 2>&1)
if [ "$notebooks_run" -eq 0 ]; then
  failed=$((failed + 1)); echo "FAIL notebooks: the runner ran none (scripts/setup.sh installs what they need)"
fi

# The fuzzers (scripts/fuzz.sh, docs/reliability.md): each target for 15 s, one count each -- a
# crash, a sanitizer report or a broken round trip is a failure, its input in build-fuzz/findings/.
step "the fuzzers, 15 s each (build-fuzz/)"
watched "fuzzing" build/fuzz.out '^[a-z_]+: [0-9]+ executions|^fuzz:' scripts/fuzz.sh ci || true
fuzz_out=$(cat build/fuzz.out)
echo "$fuzz_out" | grep -E '^[a-z_]+: [0-9]+ executions|^fuzz:|ERROR|finding' | head -n 40
fuzz_line=$(tail -n 1 <<<"$fuzz_out")
fp=$(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p' <<<"$fuzz_line")
ff=$(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p' <<<"$fuzz_line")
[[ "$fp" =~ ^[0-9]+$ && "$ff" =~ ^[0-9]+$ ]] || { fp=0; ff=1; echo "FAIL fuzz: no summary"; }
[ "$ff" -eq 0 ] || { echo "FAIL fuzz: $ff of its runs"; tail -n 30 <<<"$fuzz_out"; }
passed=$((passed + fp)); failed=$((failed + ff))

summary "$passed" "$failed"
