#!/usr/bin/env bash
# The GPU check on the emulated GPU, in CI (issue 29 item 5; docs/gpu.md, "The GPU check"): the same
# script, the same bundle format and the same runner code that go to a GPU machine, so that none of
# them can rot between the rare GPU sessions.
#   1. the runner that travels needs only glibc's libraries (ldd), and binds every driver entry
#      point it uses (the toolkit's stub libcuda.so: all resolve, then cuInit refuses);
#   2. scripts/gpu_check.sh pack small (a subset of the op table, the composed transforms, the
#      benchmarks at small sizes);
#   3. the runner that travels, over a stand-in libcuda.so.1 (tests/cuda_stand_in.cpp: kernels do
#      nothing), checks and times the bundle: its pure-driver path, as it will go on a GPU;
#   4. run under FLUXION_CUDA_DRIVER=emulate with the runner's emulated build, then compare: every
#      program ran and matches the eager results on the CPU.
#     tests/gpu_check_emulated.sh SOURCE_ROOT BUILD_DIR [CUDA_HOME [STAND_IN_LIBCUDA]]
set -euo pipefail
root=$1 build=$(cd "$2" && pwd) cuda=${3:-} stand_in=${4:-}
runner=$build/tools/fluxion_gpu_runner
work=$(mktemp -d /tmp/fluxion_gpu_check_ci.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

allowed='linux-vdso.so.1 libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 libstdc++.so.6 libgcc_s.so.1 /lib64/ld-linux-x86-64.so.2'
for lib in $(ldd "$runner" | awk '{print $1}'); do
  [[ " $allowed " == *" $lib "* ]] || fail "fluxion_gpu_runner needs $lib (only glibc, libstdc++ and libgcc may remain)"
done
echo "ldd fluxion_gpu_runner: $(ldd "$runner" | awk '{print $1}' | tr '\n' ' ')"
if [ -n "$cuda" ] && [ -f "$cuda/lib64/stubs/libcuda.so" ]; then
  out=$(FLUXION_CUDA_DRIVER="$cuda/lib64/stubs/libcuda.so" "$runner" env 2>&1) && fail "the stub library's cuInit succeeded: $out"
  [[ "$out" == *CUDA_ERROR_STUB_LIBRARY* ]] || fail "the stub library: $out"
  echo "the stub libcuda.so binds every entry point: $out"
fi

cd "$root"
t0=$SECONDS
FLUXION_BUILD_DIR=$build FLUXION_GPU_DIR=$work/gpu scripts/gpu_check.sh pack small
t1=$SECONDS
if [ -n "$stand_in" ]; then
  x=$work/stand_in && mkdir -p "$x" && tar xzf "$work/gpu/bundle.tgz" -C "$x"
  line=$(FLUXION_CUDA_DRIVER=$stand_in "$work/gpu/fluxion_gpu_runner" check "$x/bundle/check" "$x/results" 120 2>&1 |
    grep ' cases ran in ') || fail "the travelling runner over the stand-in driver: no summary line"
  [[ "$line" =~ ^stand-in\ libcuda.*:\ ([0-9]+)\ of\ ([0-9]+)\ cases\ ran ]] &&
    [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] || fail "the stand-in driver's check: $line"
  # Every program that only launches kernels must pass; one with a library step (a plan's 'call'
  # line: cuBLAS) may fail here, where cuBLAS finds no real driver.
  mapfile -t dirs < <(cut -d' ' -f1 "$x/bundle/check/cases.txt")
  while read -r n what; do
    [ "$what" = ok ] || grep -q '^call ' "$x/bundle/check/${dirs[$n]}/plan.txt" ||
      fail "the stand-in driver: case $n (${dirs[$n]}) failed without a library step: $what"
  done <"$x/results/status.txt"
  FLUXION_CUDA_DRIVER=$stand_in "$work/gpu/fluxion_gpu_runner" bench "$x/bundle/bench" "$x/bench.json" 3 >/dev/null ||
    echo "(the benchmarks over the stand-in ended with status $?; the rows before are checked)"
  grep -q '"name": "chain_f32_64K", "ms": 1,' "$x/bench.json" && grep -q '"host_us"' "$x/bench.json" ||
    fail "the stand-in driver's benchmarks: $(cat "$x/bench.json")"
  echo "the travelling runner over the stand-in libcuda.so.1: $line; the benchmarks timed ($((SECONDS - t1)) s)"
fi
t1=$SECONDS
OUT=$work/out FLUXION_BUILD_DIR=$build FLUXION_GPU_DIR=$work/gpu FLUXION_CUDA_DRIVER=emulate \
  FLUXION_GPU_RUNNER=$build/tools/fluxion_gpu_runner_emulated scripts/gpu_check.sh run
t2=$SECONDS
line=$(grep ' cases ran in ' "$work/out/check.log") || fail "no summary line in check.log"
[[ "$line" =~ :\ ([0-9]+)\ of\ ([0-9]+)\ cases\ ran.*\ 0\ failed ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] ||
  fail "the check: $line"
grep -q '"name": "chain_f32_64K", "ms"' "$work/out/bench_fluxion.json" || fail "no timing of the chain in bench_fluxion.json"
grep -q '"host_us"' "$work/out/bench_fluxion.json" || fail "no host time of a cached launch in bench_fluxion.json"
grep -q 'not lowered' "$work/out/summary.txt" || echo "(every benchmark workload lowers now)"
n=$(ls "$work/out" | wc -l)
[ "$n" -le 8 ] || fail "$n files in \$OUT (the device tool brings back 8)"
FLUXION_BUILD_DIR=$build scripts/gpu_check.sh compare "$work/out" | tail -n 4
echo "pack $((t1 - t0)) s, run $((t2 - t1)) s, compare $((SECONDS - t2)) s"
