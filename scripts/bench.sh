#!/usr/bin/env bash
# Builds and runs the benchmarks in bench/ (release build) and prints each against its baseline and
# its target. Extra arguments go to Google Benchmark (e.g. --benchmark_filter=eager).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ninja -C build bench/fluxion_bench >build/ninja.log 2>&1 || { tail -n 60 build/ninja.log; exit 1; }
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(uname -sr)"
exec build/bench/fluxion_bench --benchmark_min_time=0.5 "$@"
