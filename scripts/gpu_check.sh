#!/usr/bin/env bash
# The GPU check in one command (docs/gpu.md, "The GPU check"). The GPU machines have a driver, JAX
# and PyTorch but no LLVM/MLIR 19, so what runs there is prepared here: programs compiled by the GPU
# pipeline (PTX and launch plans), their inputs and, after the run, the comparison with the CPU.
#
#   scripts/gpu_check.sh pack      here: writes .gpu/optable.tgz (every op-table program the GPU
#                                  pipeline lowers, every sample and dtype) and .gpu/bench.tgz (the
#                                  benchmark programs); needs build/ with the CUDA toolkit
#   scripts/gpu_check.sh run       there (device tool: carry [".gpu"]): environment, op table,
#                                  benchmarks, the peers on the same card, a summary; files in $OUT
#   scripts/gpu_check.sh compare DIR   here: the op table's outputs (DIR/results.tgz, fetched from
#                                  the run) against eager results on the CPU
#
# Budget of `run`: at most about 6 minutes (op table 150 s, benchmarks, PyTorch, JAX), so that one
# call with timeout_s=420 leaves a lease of 15 minutes room for a rerun.
set -uo pipefail
cd "$(dirname "$0")/.."
gpu=${FLUXION_GPU_DIR:-$PWD/.gpu}

pack() {
  local tests=${FLUXION_BUILD_DIR:-build}/tests/fluxion_tests
  [ -x "$tests" ] || { echo "gpu_check: no $tests (build first)"; return 1; }
  rm -rf "$gpu" && mkdir -p "$gpu"
  FLUXION_TEST_GPU_BUNDLE="$gpu/optable" "$tests" --test-case='gpu bundle: the op table*' >"$gpu/pack.log" 2>&1 ||
    { tail -n 20 "$gpu/pack.log"; return 1; }
  FLUXION_TEST_GPU_BENCH="$gpu/bench" "$tests" --test-case='gpu bundle: the benchmark*' >>"$gpu/pack.log" 2>&1 ||
    { tail -n 20 "$gpu/pack.log"; return 1; }
  (cd "$gpu" && tar czf optable.tgz optable && tar czf bench.tgz bench && rm -rf optable bench pack.log)
  echo "gpu_check pack: $(du -sh "$gpu" | cut -f1) in $gpu ($(ls "$gpu" | tr '\n' ' '))"
}

environment() {
  echo "== environment"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || echo "no nvidia-smi"
  python3 - <<'PY'
import ctypes, platform
try:
    cu = ctypes.CDLL("libcuda.so.1")  # through the real loader, as the library's dlopen finds it
    v = ctypes.c_int(); cu.cuDriverGetVersion(ctypes.byref(v))
    print(f"libcuda.so.1 loads; CUDA driver API {v.value // 1000}.{v.value % 1000 // 10}")
except OSError as e:
    print(f"libcuda.so.1 does not load: {e}")
print(f"glibc {platform.libc_ver()[1]}, python {platform.python_version()}")
for m in ("torch", "jax"):
    try:
        print(m, __import__(m).__version__)
    except Exception as e:
        print(m, "missing:", e)
PY
}

run() {
  local out=${OUT:-$gpu/out} t0=$SECONDS
  mkdir -p "$out"
  for f in optable.tgz bench.tgz; do
    [ -f "$gpu/$f" ] || { echo "gpu_check: no $gpu/$f (scripts/gpu_check.sh pack here, then carry .gpu)"; return 1; }
  done
  environment 2>&1 | tee "$out/env.txt"
  echo "== op table (every program the GPU pipeline lowers, against the CPU's outputs after the run)"
  timeout 200 python3 scripts/gpu_bundle_run.py "$gpu/optable.tgz" "$out" 150 2>"$out/optable.log" | tee -a "$out/optable.log"
  echo "== benchmarks: Fluxion's programs ($((SECONDS - t0)) s so far)"
  timeout 90 python3 scripts/gpu_bench_run.py "$gpu/bench.tgz" "$out/bench_fluxion.json" 20 2>&1 | tee "$out/bench.txt"
  echo "== the peers on the same card ($((SECONDS - t0)) s so far)"
  timeout 90 python3 bench/peers/gpu_peers.py torch "$out/peers_torch.json" 20 2>&1 | grep -v Warning | tee -a "$out/bench.txt"
  timeout 60 python3 bench/peers/gpu_peers.py jax "$out/peers_jax.json" 20 2>&1 | grep -v Warning | tee -a "$out/bench.txt"
  echo "== summary ($((SECONDS - t0)) s)"
  python3 - "$out" <<'PY' | tee "$out/summary.txt"
import json, os, sys
out = sys.argv[1]
def rows(name):
    p = os.path.join(out, name)
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else []
flux = {r["name"]: r for r in rows("bench_fluxion.json")}
peers = rows("peers_torch.json") + rows("peers_jax.json")
gpu = next((r["gpu"] for r in flux.values() if "gpu" in r), "?")
print(f"GPU: {gpu}")
status = os.path.join(out, "optable.log")
print([l.strip() for l in open(status) if " cases ran in " in l] or ["op table: no summary line"])
print(f"{'workload':34} {'Fluxion ms':>11} {'GB/s':>7} {'peer':>22} {'peer ms':>9} {'peer/Fluxion':>12}")
for name, r in flux.items():
    if "error" in r:
        print(f"{name:34} error: {r['error']}")
        continue
    base = name.split(" ")[0]
    same = [p for p in peers if p.get("name", "").split(" ")[0] == base] or [{}]
    for p in same:
        ratio = f"{p['ms'] / r['ms']:.2f}" if "ms" in p else ""
        print(f"{name:34} {r['ms']:11.3f} {r.get('GB/s', 0):7.0f} {p.get('peer', '-'):>22} {p.get('ms', float('nan')):9.3f} {ratio:>12}")
for p in peers:
    if "error" in p or p.get("name", "").startswith("matmul"):
        print(p)
PY
}

compare() {
  local dir=${1:?usage: scripts/gpu_check.sh compare DIR (holding results.tgz)}
  local tests=${FLUXION_BUILD_DIR:-build}/tests/fluxion_tests
  (cd "$dir" && tar xzf results.tgz)
  FLUXION_TEST_GPU_RESULTS="$dir/results" "$tests" --test-case='gpu bundle: a GPU*'
}

case "${1:-}" in
  pack) pack ;;
  run) run ;;
  compare) shift; compare "$@" ;;
  *) echo "usage: scripts/gpu_check.sh pack|run|compare DIR (docs/gpu.md)"; exit 2 ;;
esac
