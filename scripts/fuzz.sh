#!/usr/bin/env bash
# libFuzzer over Fluxion's readers of untrusted input (issue 35, item 2; docs/reliability.md):
#
#   scripts/fuzz.sh build                   the binaries, build-fuzz/fuzz_<target>
#   scripts/fuzz.sh run TARGET SECONDS ...  one target (extra arguments go to libFuzzer)
#   scripts/fuzz.sh all SECONDS             every target for SECONDS each: the figures
#   scripts/fuzz.sh ci                      every target for $FLUXION_FUZZ_CI_SECONDS (default 15) each
#
# The targets are tests/fuzz_targets.cpp (the doctest suite replays fuzz/corpus/ through the same
# functions). Clang 19 compiles them with the fuzzer's coverage, AddressSanitizer and
# UndefinedBehaviorSanitizer, together with the library files that read the inputs (the list below:
# the parser, serialization, the checkpoint formats, JSON, file reading, the IDX/CIFAR readers);
# the rest of the library comes from build/libfluxion.so (the plain release build, GCC: the same
# C++ ABI), where the readers' definitions in the binary take precedence. So the readers are
# instrumented and the arrays they make are Fluxion's ordinary ones.
#
# Each run's corpus is build-fuzz/corpus/<target> (what the fuzzer adds) on top of fuzz/corpus/<target>
# (the seeds, read only); a crash, leak, timeout or out-of-memory input is written to
# build-fuzz/findings/<target>/ -- copy it into fuzz/corpus/<target>/ as regress-<what> once fixed.
# Ends with "N passed, N failed" (one per target run) like scripts/test.sh; executions and times go
# to build-fuzz/fuzz-figures.txt.
set -uo pipefail
cd "$(dirname "$0")/.."

out=build-fuzz
cxx=${FLUXION_FUZZ_CXX:-clang++-19}
targets=(program_text program_serialized safetensors npz npy idx cifar)
# The library files that read untrusted bytes: compiled into each fuzzer, instrumented.
readers=(ir/parser.cpp ir/serialize.cpp ir/shape.cpp train/json.cpp train/file_io.cpp train/npz.cpp
         train/checkpoint.cpp train/readers.cpp)
flags=(-std=c++20 -g -O1 -fno-omit-frame-pointer -I. -Iinclude -D_FILE_OFFSET_BITS=64 -pthread
       -fsanitize=address,undefined -fno-sanitize-recover=undefined -Wno-everything)

build() {
  [ -f build/libfluxion.so ] || { echo "fuzz: build the library first (nice ninja -C build)"; return 1; }
  command -v "$cxx" >/dev/null && [ -n "$(ls /usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null)" ] ||
    scripts/setup.sh clang-19 libclang-rt-19-dev >/dev/null || return 1
  mkdir -p "$out/obj"
  local objs=() src obj
  for src in "${readers[@]}" tests/fuzz_targets.cpp; do
    obj="$out/obj/$(tr / _ <<<"$src").o"
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ]; then
      nice "$cxx" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj" || return 1
    fi
    objs+=("$obj")
  done
  local t
  for t in "${targets[@]}"; do
    nice "$cxx" "${flags[@]}" -fsanitize=fuzzer -DFLUXION_FUZZ_TARGET="\"$t\"" fuzz/fuzz_main.cpp "${objs[@]}" \
      -L build -lfluxion -lz -Wl,-rpath,"$PWD/build" -o "$out/fuzz_$t" || return 1
  done
}

# run TARGET SECONDS [libFuzzer args]: prints "TARGET: N executions in S s, OK|FINDING".
run() {
  local t=$1 secs=$2; shift 2
  mkdir -p "$out/corpus/$t" "$out/findings/$t"
  local log="$out/fuzz_$t.log"
  # Leaks: LLVM's and MLIR's process-wide singletons (the library loads them) are freed at exit.
  ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=1" \
  LSAN_OPTIONS="suppressions=$PWD/scripts/sanitizers/lsan.supp:print_suppressions=0" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    nice "$out/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
      -print_final_stats=1 -artifact_prefix="$out/findings/$t/" "$@" "$out/corpus/$t" "fuzz/corpus/$t" >"$log" 2>&1
  local rc=$?
  local execs; execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -n 1)
  local verdict=OK
  [ $rc -eq 0 ] || verdict="FINDING (exit $rc; $log, $out/findings/$t/)"
  echo "$t: ${execs:-0} executions in $secs s, $verdict ($(date -u +%F))" | tee -a "$out/fuzz-figures.txt"
  [ $rc -eq 0 ] || { grep -E -A25 'ERROR: |runtime error:|fuzz finding|terminate called' "$log" | head -n 60; }
  [ $rc -eq 0 ]
}

every() {
  local secs=$1 passed=0 failed=0 t
  for t in "${targets[@]}"; do
    if run "$t" "$secs"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  done
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

case "${1:-}" in
  build) build ;;
  run) build && shift && run "$@" ;;
  all) build && every "${2:-600}" ;;
  ci) build || { echo "0 passed, 1 failed"; exit 1; }; every "${FLUXION_FUZZ_CI_SECONDS:-15}" ;;
  *) echo "usage: scripts/fuzz.sh build | run TARGET SECONDS [args] | all SECONDS | ci"; exit 2 ;;
esac
