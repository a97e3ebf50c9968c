#!/usr/bin/env python3
"""The GPU check's summary table (scripts/gpu_check.sh run): the check's line, then each benchmark
workload with Fluxion's time and bandwidth (and the host time of a cached launch where measured)
beside each peer's time on the same card; a workload the GPU pipeline does not lower yet is a row
"not lowered" with the reason, never left out.

    gpu_check_summary.py OUT        (the directory the run writes: check.log, bench_fluxion.json,
                                     peers_torch.json, peers_jax.json)
"""
import json
import math
import re
import os
import sys


def rows(out, name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip()]


def main():
    out = sys.argv[1]
    flux = rows(out, "bench_fluxion.json")
    peers = rows(out, "peers_torch.json") + rows(out, "peers_jax.json")
    log = os.path.join(out, "check.log")
    lines = [line.strip() for line in open(log) if " cases ran in " in line] if os.path.exists(log) else []
    print(lines[-1] if lines else "the check: no summary line (check.log)")
    print(f"{'workload':30} {'Fluxion ms':>10} {'GB/s':>6} {'host us':>7} {'peer':>32} {'peer ms':>8} {'peer/Fluxion':>12}")
    for r in flux:
        name = r.get("name", "?")
        same = [p for p in peers if p.get("name") == name and "ms" in p] or [{}]
        if "not_lowered" in r or "error" in r:
            what = "not lowered: " + r["not_lowered"] if "not_lowered" in r else "error: " + r["error"]
            print(f"{name:30} {what[:120]}")
            for p in same:
                if p:
                    print(f"{'':30} {'':10} {'':6} {'':7} {p['peer']:>32} {p['ms']:8.3f}")
            continue
        host = f"{r['host_us']:7.1f}" if "host_us" in r else f"{'':7}"
        for p in same:
            ratio = f"{p['ms'] / r['ms']:12.2f}" if p and r["ms"] > 0 else f"{'':12}"
            peer_ms = f"{p['ms']:8.3f}" if p else f"{'':8}"
            print(f"{name:30} {r['ms']:10.3f} {r.get('GB/s', math.nan):6.0f} {host} {p.get('peer', '-'):>32} {peer_ms} {ratio}")
    # A workload the runner started but did not finish (stopped by the benchmarks' time budget, or
    # a crash): its line in bench.txt has no row in the JSON. Shown, never left out.
    done = {r.get("name") for r in flux}
    bench_txt = os.path.join(out, "bench.txt")
    started = re.findall(r"^fluxion (\S+):", open(bench_txt).read(), re.M) if os.path.exists(bench_txt) else []
    for name in started:
        if name not in done:
            print(f"{name:30} no result: the runner stopped during it (the benchmarks' time budget, or a crash)")
    for p in peers:
        if "error" in p:
            print(f"peer {p.get('peer')} {p.get('name', '')}: {p['error'][:200]}")
        elif "TFLOP/s" in p:
            print(f"{p['name']} ({p['peer']}): {p['ms']:.3f} ms, {p['TFLOP/s']:.0f} TFLOP/s")


if __name__ == "__main__":
    main()
