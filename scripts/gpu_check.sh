#!/usr/bin/env bash
# The GPU check in one command (docs/gpu.md, "The GPU check"). The GPU machines have a driver, JAX
# and PyTorch but no LLVM/MLIR 19 and none of our libraries, so what runs there is prepared here:
# programs compiled by the GPU pipeline (tests/gpu_bundle.h: PTX, launch plans, inputs, and the
# kernels before NVVM for the emulated GPU) and the runner, tools/gpu_runner, which needs only the
# CUDA driver; after the run, the outputs are compared here with eager results on the CPU.
#
#   scripts/gpu_check.sh pack [small] here: .gpu/bundle.tgz (check/: every op-table program the GPU
#                                  pipeline lowers and the composed transforms; bench/: issue 30's
#                                  workloads) and .gpu/fluxion_gpu_runner; "small": CI's bundle (a
#                                  subset of the op table, the benchmarks at small sizes)
#   scripts/gpu_check.sh run       there (device tool: carry [".gpu"]): environment, the check, the
#                                  benchmarks, the peers on the same card, a summary; 8 files in $OUT
#   scripts/gpu_check.sh compare DIR   here: the check's outputs (DIR/results.tgz, from the run)
#                                  against eager results on the CPU (the same build must pack)
#
# Settings: FLUXION_BUILD_DIR (build), FLUXION_GPU_DIR (.gpu), FLUXION_GPU_RUNNER (the runner `run`
# uses; .gpu's by default, build/tools/fluxion_gpu_runner_emulated for the emulated GPU), and
# FLUXION_CUDA_DRIVER=emulate for the emulated GPU (tests/gpu_check_emulated.sh: CI).
#
# Budget of `run`: under 6 minutes however it goes (the versions of torch and jax 15 s each; the
# check 120 s, killed at 140; the benchmarks 50 s; PyTorch 70 s; JAX 45 s; unpacking and the
# summary: 335 s and a few), so that one device call with timeout_s=420 ends on its own; the H200
# ran the whole check in about a minute.
set -uo pipefail
cd "$(dirname "$0")/.."
gpu=${FLUXION_GPU_DIR:-$PWD/.gpu}
build=${FLUXION_BUILD_DIR:-build}
max_bundle_bytes=$((48 << 20))

pack() {
  local tests=$build/tests/fluxion_tests runner=$build/tools/fluxion_gpu_runner
  local small=() t0=$SECONDS
  [ "${1:-}" = small ] && small=(FLUXION_TEST_GPU_BUNDLE_EVERY=64 FLUXION_TEST_GPU_BENCH_SIZE=small)
  [ -x "$tests" ] && [ -x "$runner" ] || { echo "gpu_check: no $tests or $runner (build first)"; return 1; }
  rm -rf "$gpu" && mkdir -p "$gpu/bundle"
  env "${small[@]}" FLUXION_TEST_GPU_BUNDLE="$gpu/bundle" "$tests" --test-case='gpu bundle: the*' >"$gpu/pack.log" 2>&1 ||
    { tail -n 30 "$gpu/pack.log"; return 1; }
  { echo "Fluxion GPU check bundle, packed $(date -u +%FT%TZ) from $(git rev-parse --short HEAD 2>/dev/null)${small:+ (small)}"
    grep -E 'MESSAGE: .*(programs written|not lowered)' "$gpu/pack.log" | sed 's/^.*MESSAGE: //'; } >"$gpu/bundle/manifest.txt"
  tar czf "$gpu/bundle.tgz" -C "$gpu" bundle && rm -rf "$gpu/bundle" "$gpu/pack.log"
  cp "$runner" "$gpu/fluxion_gpu_runner"
  local bytes; bytes=$(du -cb "$gpu"/* | tail -n 1 | cut -f1)
  echo "gpu_check pack: $((bytes >> 10)) KiB in $gpu ($(ls "$gpu" | tr '\n' ' ')), $((SECONDS - t0)) s"
  [ "$bytes" -le "$max_bundle_bytes" ] || { echo "gpu_check pack: over the 48 MiB a device call can carry"; return 1; }
}

# cuBLAS for the library steps (dot_general): the runner dlopens libcublas.so.13 (or .12); on a
# machine whose CUDA libraries came from PyPI (nvidia-cublas, beside torch) they are not on the
# loader's path, so their folder joins LD_LIBRARY_PATH.
find_cublas() {
  [ "${FLUXION_CUDA_DRIVER:-}" = emulate ] && return 0
  local dirs
  dirs=$(timeout 15 python3 -c '
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages(), "/usr/local/cuda/lib64"]
found = sorted({os.path.dirname(p) for r in roots for p in glob.glob(r + "/**/libcublas.so.1[23]", recursive=True)})
print(":".join(found))' 2>/dev/null)
  if [ -n "$dirs" ]; then
    export LD_LIBRARY_PATH="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "cuBLAS: $dirs"
  else
    echo "cuBLAS: not found (programs with dot_general will fail)"
  fi
}

environment() {
  local runner=$1
  echo "== environment"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  "$runner" env
  echo "the runner's libraries: $(ldd "$runner" | awk '{print $1}' | tr '\n' ' ')"
  echo "python $(python3 -c 'import platform; print(platform.python_version())')"
  [ "${FLUXION_CUDA_DRIVER:-}" = emulate ] && return 0
  for m in torch jax; do timeout 15 python3 -c "import $m; print('$m', $m.__version__)" 2>&1 | tail -n 1; done
}

peers() {
  local workloads=$1 out=$2
  if [ "${FLUXION_CUDA_DRIVER:-}" = emulate ]; then
    echo "the peers: not run on the emulated GPU"
    : >"$out/peers_torch.json"; : >"$out/peers_jax.json"
    return 0
  fi
  timeout 70 python3 bench/peers/gpu_peers.py torch "$workloads" "$out/peers_torch.json" 20 2>&1 | grep -v Warning
  timeout 45 python3 bench/peers/gpu_peers.py jax "$workloads" "$out/peers_jax.json" 20 2>&1 | grep -v Warning
}

run() {
  local out=${OUT:-$gpu/out} runner=${FLUXION_GPU_RUNNER:-$gpu/fluxion_gpu_runner} t0=$SECONDS work
  mkdir -p "$out"
  [ -f "$gpu/bundle.tgz" ] && [ -x "$runner" ] ||
    { echo "gpu_check: no $gpu/bundle.tgz or $runner (scripts/gpu_check.sh pack here, then carry .gpu)"; return 1; }
  work=$(mktemp -d /tmp/fluxion_gpu_check.XXXXXX)  # not under $OUT: only the 8 files go back
  tar xzf "$gpu/bundle.tgz" -C "$work"
  find_cublas >"$out/env.txt"  # not through a pipe: its LD_LIBRARY_PATH must stay in this shell
  cat "$out/env.txt"
  environment "$runner" 2>&1 | tee -a "$out/env.txt"
  head -n 1 "$work/bundle/manifest.txt"
  echo "== the check: every program against the CPU's outputs (compared here after the run)"
  : >"$out/check.log"  # both streams append: the workers' errors (stderr) only here, the summary also on screen
  timeout 140 "$runner" check "$work/bundle/check" "$work/results" 120 2>>"$out/check.log" | tee -a "$out/check.log"
  tar czf "$out/results.tgz" -C "$work" results
  echo "== benchmarks: Fluxion's programs ($((SECONDS - t0)) s so far)"
  timeout 50 "$runner" bench "$work/bundle/bench" "$out/bench_fluxion.json" 20 2>&1 | tee "$out/bench.txt"
  echo "== the peers on the same card ($((SECONDS - t0)) s so far)"
  peers "$work/bundle/bench/workloads.txt" "$out" | tee -a "$out/bench.txt"
  echo "== summary ($((SECONDS - t0)) s)"
  python3 scripts/gpu_check_summary.py "$out" | tee "$out/summary.txt"
  rm -rf "$work"
}

compare() {
  local dir=${1:?usage: scripts/gpu_check.sh compare DIR (holding results.tgz)}
  tar xzf "$dir/results.tgz" -C "$dir" &&
    FLUXION_TEST_GPU_RESULTS="$dir/results" "$build/tests/fluxion_tests" --test-case='gpu bundle: a GPU*'
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) run ;;
  compare) shift; compare "$@" ;;
  *) echo "usage: scripts/gpu_check.sh pack [small] | run | compare DIR (docs/gpu.md)"; exit 2 ;;
esac
