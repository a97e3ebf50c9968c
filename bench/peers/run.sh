#!/usr/bin/env bash
# The peer table of docs/performance.md in one run: builds fluxion_bench_peers, runs it, then the
# same workloads in JAX and PyTorch (bench/peers/.venv from bench/peers/setup.sh; PyTorch only if
# installed there), and prints per workload the times and the ratios peer time / Fluxion time.
#
#   bench/peers/run.sh [--cpu NAME] [--repeats N] [--rounds R] [--out DIR]
#
# --cpu NAME   FLUXION_CPU=NAME for Fluxion (x86-64-v2/v3/v4 or an LLVM CPU name). For the
#              x86-64-vN levels the peers are held to the same ISA: XLA_FLAGS=--xla_cpu_max_isa,
#              ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA and MKL_ENABLE_INSTRUCTIONS.
# --repeats N  best of N wall-clock runs (default 10).
# --rounds R   run the sides one after the other R times (default 2) and keep each workload's best
#              time: on a shared machine a busy minute then hits every side, not just one.
# --out DIR    where the JSON lines go (default build/peers/<date>-<cpu>).
# Threads: 2 on every side (FLUXION_NUM_THREADS=2, torch.set_num_threads(2); XLA sizes its pool by
# the CPUs it may use), and on a machine with more than 2 CPUs every side is pinned to CPUs 0-1.
set -euo pipefail
cd "$(dirname "$0")/../.."

cpu="" repeats=10 rounds=2 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) cpu="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: bench/peers/run.sh [--cpu NAME] [--repeats N] [--rounds R] [--out DIR]" >&2; exit 2 ;;
  esac
done
out=${out:-build/peers/$(date +%Y%m%d-%H%M%S)-${cpu:-host}}
mkdir -p "$out"

scripts/setup.sh
ninja -C build bench/fluxion_bench_peers >"$out/ninja.log" 2>&1 || { tail -n 40 "$out/ninja.log"; exit 1; }

export FLUXION_NUM_THREADS=2 OMP_NUM_THREADS=2 MKL_NUM_THREADS=2
pin=()
if [ "$(nproc)" -gt 2 ] && command -v taskset >/dev/null; then pin=(taskset -c 0,1); fi
if [ -n "$cpu" ]; then
  export FLUXION_CPU="$cpu"
  case "$cpu" in  # the peers' own switches for the same instruction set
    x86-64-v2) isa=(SSE4_2 DEFAULT SSE41 SSE4_2) ;;
    x86-64-v3) isa=(AVX2 AVX2 AVX2 AVX2) ;;
    x86-64-v4) isa=(AVX512 AVX512 AVX512_CORE AVX512) ;;
    *) isa=() ;;
  esac
  if [ ${#isa[@]} -gt 0 ]; then
    export XLA_FLAGS="${XLA_FLAGS:-} --xla_cpu_max_isa=${isa[0]}" ATEN_CPU_CAPABILITY="${isa[1],,}"
    export ONEDNN_MAX_CPU_ISA="${isa[2]}" MKL_ENABLE_INSTRUCTIONS="${isa[3]}"
  else
    echo "run.sh: the peers run with the host's instruction set (no mapping for FLUXION_CPU=$cpu)" >&2
  fi
fi

echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $(uname -sr); FLUXION_CPU=${cpu:-host}" | tee "$out/machine.txt"
py=bench/peers/.venv/bin/python
peers=()
if [ -x "$py" ]; then
  peers=(jax)
  "$py" -c "import torch" 2>/dev/null && peers+=(torch)
else
  echo "run.sh: no bench/peers/.venv (run bench/peers/setup.sh): Fluxion only" >&2
  py=python3
fi
for round in $(seq "$rounds"); do
  echo "# round $round: fluxion ${peers[*]}" >&2
  "${pin[@]}" build/bench/fluxion_bench_peers "$repeats" | tee "$out/fluxion-$round.jsonl" >&2
  for p in "${peers[@]}"; do
    (cd bench/peers && "${pin[@]}" .venv/bin/python "peers_$p.py" "$repeats") | tee "$out/$p-$round.jsonl" >&2
  done
done
"$py" bench/peers/join.py "$out"/*.jsonl | tee "$out/table.md"
echo "(JSON lines and the table: $out)"
