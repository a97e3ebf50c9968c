#!/usr/bin/env bash
# The sanitizer builds and their runs of the doctest suite (docs/reliability.md):
#
#   scripts/sanitize.sh asan [full|ci]   AddressSanitizer + UndefinedBehaviorSanitizer, in build-asan
#   scripts/sanitize.sh tsan [full|ci]   ThreadSanitizer, in build-tsan: the concurrency suites
#
# `full` runs every test case the sanitizer can run (the exclusions below say why the others
# cannot); `ci` the subset .ci/run runs (scripts/test.sh), chosen to fit its time budget. Each
# configuration has its own build directory (-O1 -g1: line tables, so reports have lines, at half
# the compile time of -O2 -g, whose template-heavy files took up to 18 minutes each; no CUDA),
# builds only the test binary, and ends like test.sh with "N passed, N failed"; the
# build's and the run's wall times go to <dir>/sanitize-times.txt for docs/reliability.md.
set -uo pipefail
cd "$(dirname "$0")/.."

kind=${1:-asan}
scope=${2:-full}
supp="$PWD/scripts/sanitizers"
case "$kind" in
  asan)
    dir=build-asan
    options=(-Db_sanitize=address,undefined)
    # float-cast-overflow is not in GCC's -fsanitize=undefined: named, since float -> int casts
    # out of range are one of the classes issue 35 asks about.
    extra_args="-fsanitize=float-cast-overflow -fno-sanitize-recover=all"
    # allocator_may_return_null: a failed allocation is std::bad_alloc as without ASan (the tests of
    # huge shapes ask for more than ASan's 1 TiB limit). intercept_tls_get_addr=0: GCC 12's runtime
    # (like LLVM's before 17) takes a dynamic TLS block whose address is 16 past a page boundary for
    # glibc 2.19's header and reads a range from the two words before it; LeakSanitizer's tracer
    # then scans that range and crashes ("Tracer caught signal 11") at the exit of a process whose
    # threads -- libomp's workers -- have such blocks. Without the interception the tracer scans
    # static TLS only, which holds libfluxion's thread_locals (the library is loaded at start).
    # FLUXION_DETECT_LEAKS=0 turns leak checking off.
    export ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=${FLUXION_DETECT_LEAKS:-1}:intercept_tls_get_addr=0:abort_on_error=0:print_summary=1"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
    ;;
  tsan)
    dir=build-tsan
    options=(-Db_sanitize=thread)
    extra_args=""
    # libomp (the compiled kernels' and library kernels' thread pool) is not built with TSan: its
    # barriers are invisible to it and every parallel loop would be a false report. One thread per
    # kernel keeps OpenMP out of the picture; the threads TSan checks are Fluxion's own (device
    # workers, pmap, the data loader's prefetcher, the compile cache, callers of jit).
    export FLUXION_NUM_THREADS=1
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
    ;;
  *) echo "usage: scripts/sanitize.sh asan|tsan [full|ci]"; exit 2 ;;
esac

# Test cases that cannot run under the sanitizer, each with its reason (docs/reliability.md).
exclude=(
  # Timings and speed ratios: a sanitizer slows code 2-10x unevenly.
  "*faster*" "*speed*"
  # Spawns Python (onnxruntime, numpy): the interpreter is not built with the sanitizer's runtime.
  "*onnx*"
  # Arrays of 2^31 bytes and more, several at once: ASan's shadow and quarantine multiply that past
  # the machine's memory. They run in the plain build (tests/test_huge_arrays.cpp).
  "huge arrays:*"
  # Sets RLIMIT_AS to what the process maps plus 1 GiB: ASan and TSan map terabytes of shadow.
  "faults: an allocation*"
)
# The concurrency suites: what TSan is for (issue 35, item 1).
tsan_cases="devices:*,pmap:*,data:*,*thread*,jit: the runtime cache*,jit: the on-disk cache*,threads:*,shard_map:*,sharded jit:*,sharding:*,profiler:*"
# The CI subset of ASan+UBSan: the parsers and readers of untrusted input, shapes, integer and
# float edge cases, the jit's fusion regressions, errors, and one pass of the op table (eager).
asan_ci_files="*test_bad_files*,*test_shape_limits*,*test_integer_division*,*test_float_edges*,*test_jit_fusion*,\
*test_ir_text*,*test_checkpoint*,*test_data*,*test_errors*,*test_settings*,*test_op_table_eager*,*test_shape.cpp*"

start=$(date +%s)
if [ ! -f "$dir/build.ninja" ]; then
  mkdir -p "$dir"
  meson setup "$dir" --buildtype=plain -Dcuda=disabled -Db_lundef=false "${options[@]}" \
    -Dcpp_args="-O1 -g1 $extra_args" -Dcpp_link_args="$extra_args" >"$dir/setup.log" 2>&1 ||
    { cat "$dir/setup.log"; echo "0 passed, 1 failed"; exit 1; }
fi
# The AOT runtime too: the export tests link C programs against it.
nice ninja -C "$dir" tests/fluxion_tests kernels/libfluxion_aot_rt.a >"$dir/ninja.log" 2>&1 ||
  { tail -n 60 "$dir/ninja.log"; echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
built=$(date +%s)

# One process per test file: a sanitizer report ends its process (halt_on_error), and so would
# hide every finding after it; file by file, each report costs one file's remaining cases.
args=(--test-case-exclude="$(IFS=,; echo "${exclude[*]}")")
if [ "$kind" = tsan ]; then
  files=(all)
  args+=(--test-case="$tsan_cases")
elif [ "$scope" = ci ]; then
  IFS=, read -r -a files <<<"${asan_ci_files//\*/}"
else
  mapfile -t files < <(cd tests && ls test_*.cpp)
fi
logs="$dir/sanitize-logs"
rm -rf "$logs" && mkdir -p "$logs"
p=0 f=0 reports=0
for file in "${files[@]}"; do
  fargs=("${args[@]}")
  [ "$file" = all ] || fargs+=(--source-file="*tests/$file*")
  timeout 1800 "$dir/tests/fluxion_tests" "${fargs[@]}" >"$logs/$file.log" 2>&1
  rc=$?
  line=$(grep -E '^\[doctest\] test cases:' "$logs/$file.log" | tail -n 1)
  fp=$(sed -nE 's/.*\| *([0-9]+) passed.*/\1/p' <<<"$line"); ff=$(sed -nE 's/.*\| *([0-9]+) failed.*/\1/p' <<<"$line")
  [[ "$fp" =~ ^[0-9]+$ ]] || fp=0
  [[ "$ff" =~ ^[0-9]+$ ]] || ff=0
  if grep -qE 'ERROR: (Address|Leak|Thread)Sanitizer|runtime error:|WARNING: ThreadSanitizer' "$logs/$file.log"; then
    echo "== $file: a sanitizer report (the whole log: $logs/$file.log)"
    grep -E -A30 'ERROR: (Address|Leak|Thread)Sanitizer|runtime error:|WARNING: ThreadSanitizer' "$logs/$file.log" | head -n 60
    reports=$((reports + 1))
    [ "$ff" -eq 0 ] && ff=1  # the report ended the process: count it as a failure
  elif [ $rc -ne 0 ] && [ "$ff" -eq 0 ]; then
    echo "== $file: exit status $rc"; tail -n 20 "$logs/$file.log"; ff=1
  fi
  p=$((p + fp)) f=$((f + ff))
done
ran=$(date +%s)
echo "$kind $scope: build $((built - start)) s, run $((ran - built)) s, ${#files[@]} files, $reports with reports ($(date -u +%F))" |
  tee -a "$dir/sanitize-times.txt"
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
