"""The GPU benchmark workloads in JAX and PyTorch on the same card, timed as scripts/gpu_bench_run.py
times Fluxion's (docs/performance.md, GPU): inputs of 0.5 in every element, warm-up first, the
median of `reps` timings (CUDA events for PyTorch; for JAX a host clock around each call and its
block_until_ready, as JAX offers no events). Run on the GPU machine by scripts/gpu_check.sh:

    python3 gpu_peers.py torch|jax OUT.json [reps]

(one peer per process: JAX would otherwise take most of the memory PyTorch's cache holds).
"""
import json
import os
import statistics
import sys
import time


OUT = None  # the JSON-lines file each row goes to as soon as it is measured (a timeout keeps what ran)


def emit(row):
    print(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
    with open(OUT, "a") as f:
        f.write(json.dumps(row) + "\n")


def median_ms(fn, reps, sync):
    for _ in range(3):
        fn()
    sync()
    ms = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        ms.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ms)


def torch_rows(reps):
    import torch
    dev = torch.device("cuda")

    def timed(name, fn, moved):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ms = []
        for _ in range(reps):
            a.record()
            fn()
            b.record()
            b.synchronize()
            ms.append(a.elapsed_time(b))
        m = statistics.median(ms)
        row = {"peer": f"torch {torch.__version__}", "name": name, "ms": m, "GB/s": moved / m / 1e6}
        if name.startswith("matmul"):
            row["TFLOP/s"] = 2 * 8192 ** 3 / m / 1e9
        emit(row)

    x = torch.full((1 << 28,), 0.5, device=dev)
    y = torch.full((1 << 28,), 0.5, device=dev)
    timed("chain_f32_256M (eager)", lambda: torch.tanh(x) * y + torch.exp(-(x * x)) * 0.5, 3 << 30)
    s = torch.full((8192, 8192), 0.5, device=dev)
    timed("softmax_f32_8192x8192", lambda: torch.softmax(s, -1), 2 * 4 * 8192 * 8192)
    timed("rowsum_f32_8192x8192", lambda: s.sum(1), 4 * 8192 * 8192 + 4 * 8192)
    a = torch.full((8192, 8192), 0.5, device=dev, dtype=torch.bfloat16)
    timed("matmul_bf16_8192 (cuBLAS)", lambda: a @ a, 3 * 2 * 8192 * 8192)
    t = torch.full((1024,), 0.5, device=dev)
    timed("scale_f32_1024", lambda: t * 3, 8192)
    chain = torch.compile(lambda a, b: torch.tanh(a) * b + torch.exp(-(a * a)) * 0.5)  # last: its compile is slow
    timed("chain_f32_256M (torch.compile)", lambda: chain(x, y), 3 << 30)


def jax_rows(reps):
    import jax
    import jax.numpy as jnp

    def timed(name, fn, args, moved):
        f = jax.jit(fn)
        m = median_ms(lambda: f(*args).block_until_ready(), reps, lambda: None)
        emit({"peer": f"jax {jax.__version__}", "name": name, "ms": m, "GB/s": moved / m / 1e6})

    x = jnp.full((1 << 28,), 0.5, jnp.float32)
    y = jnp.full((1 << 28,), 0.5, jnp.float32)
    timed("chain_f32_256M", lambda a, b: jnp.tanh(a) * b + jnp.exp(-(a * a)) * 0.5, (x, y), 3 << 30)
    del x, y
    s = jnp.full((8192, 8192), 0.5, jnp.float32)
    timed("softmax_f32_8192x8192", lambda a: jax.nn.softmax(a, -1), (s,), 2 * 4 * 8192 * 8192)
    timed("rowsum_f32_8192x8192", lambda a: a.sum(1), (s,), 4 * 8192 * 8192 + 4 * 8192)
    t = jnp.full((1024,), 0.5, jnp.float32)
    timed("scale_f32_1024", lambda a: a * 3, (t,), 8192)


def main():
    global OUT
    which, OUT = sys.argv[1], sys.argv[2]
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    open(OUT, "w").close()
    try:
        {"torch": torch_rows, "jax": jax_rows}[which](reps)
    except Exception as e:  # a peer that cannot run is reported, not fatal
        emit({"peer": which, "error": repr(e)})


if __name__ == "__main__":
    main()
