"""The GPU check's benchmark workloads in JAX and PyTorch on the same card, timed as Fluxion's runner
(tools/gpu_runner, `bench`) times Fluxion's: inputs of 0.5 in every float element, warm-up first,
the median of `reps` timings (CUDA events for PyTorch; for JAX a host clock around each call and its
block_until_ready, as JAX offers no events). The workloads and their sizes are the bundle's
(bench/workloads.txt: "<name> <family> <dims>", written by tests/test_gpu_bundle_bench.cpp), so that
both sides run the same sizes. Run on the GPU machine by scripts/gpu_check.sh:

    python3 gpu_peers.py torch|jax WORKLOADS.txt OUT.json [reps]

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


def moved_bytes(family, d):
    """Bytes each workload must read and write at least, as Fluxion's runner counts them."""
    if family == "chain":
        return 3 * 4 * d[0]
    if family == "softmax":
        return 2 * 4 * d[0] * d[1]
    if family == "rowsum":
        return 4 * d[0] * d[1] + 4 * d[0]
    if family == "scale":
        return 2 * 4 * d[0]
    if family == "matmul":
        return 3 * 2 * d[0] * d[0]
    return 0


def torch_workloads(torch):
    dev = torch.device("cuda")

    def full(*shape, dtype=torch.float32, grad=False):
        return torch.full(shape, 0.5, device=dev, dtype=dtype, requires_grad=grad)

    def mlp_step(b, i, h, o):
        w1, b1, w2, b2 = full(i, h, grad=True), full(h, grad=True), full(h, o, grad=True), full(o, grad=True)
        x, y = full(b, i), full(b, o)

        def step():
            loss = -(torch.log_softmax(torch.relu(x @ w1 + b1) @ w2 + b2, -1) * y).sum(-1).mean()
            grads = torch.autograd.grad(loss, (w1, b1, w2, b2))
            with torch.no_grad():
                return loss, [p - 0.01 * g for p, g in zip((w1, b1, w2, b2), grads)]
        return step

    def gmm(n, k, d):
        alphas, means, log_sigmas = full(k, grad=True), full(k, d, grad=True), full(k, d, grad=True)
        x = full(n, d)

        def value_and_grad():
            z = (x[:, None, :] - means[None]) * torch.exp(-log_sigmas)
            comp = torch.log_softmax(alphas, -1) - log_sigmas.sum(-1) - 0.5 * (z * z).sum(-1)
            v = torch.logsumexp(comp, -1).sum()
            return v, torch.autograd.grad(v, (alphas, means, log_sigmas))
        return value_and_grad

    def chain(n):
        x, y = full(n), full(n)
        return lambda: torch.tanh(x) * y + torch.exp(-(x * x)) * 0.5

    def compiled_chain(n):
        x, y = full(n), full(n)
        f = torch.compile(lambda a, b: torch.tanh(a) * b + torch.exp(-(a * a)) * 0.5)
        return lambda: f(x, y)

    return {
        "chain": [("eager", chain), ("torch.compile", compiled_chain)],
        "softmax": [("", lambda r, c: (lambda s: lambda: torch.softmax(s, -1))(full(r, c)))],
        "rowsum": [("", lambda r, c: (lambda s: lambda: s.sum(1))(full(r, c)))],
        "scale": [("", lambda n: (lambda t: lambda: t * 3)(full(n)))],
        "matmul": [("cuBLAS", lambda k: (lambda a: lambda: a @ a)(full(k, k, dtype=torch.bfloat16)))],
        "mlp_step": [("", mlp_step)],
        "gmm": [("", gmm)],
    }


def torch_rows(workloads, reps):
    import torch
    table = torch_workloads(torch)
    for name, family, dims in workloads:
        for how, make in table.get(family, []):
            try:
                torch_one(torch, name, family, dims, how, make, reps)
            except Exception as e:  # one workload that cannot run is a row, not the end of the peer
                emit({"peer": f"torch {torch.__version__}", "name": name, "error": repr(e)[:300]})
            torch.cuda.empty_cache()


def torch_one(torch, name, family, dims, how, make, reps):
    fn = make(*dims)
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
    row = {"peer": f"torch {torch.__version__}" + (f" ({how})" if how else ""), "name": name, "ms": m,
           "GB/s": moved_bytes(family, dims) / m / 1e6}
    if family == "matmul":
        row["TFLOP/s"] = 2 * dims[0] ** 3 / m / 1e9
    emit(row)


def jax_workloads(jax, jnp):
    def full(*shape, dtype=jnp.float32):
        return jnp.full(shape, 0.5, dtype)

    def mlp_step(b, i, h, o):
        def loss(p, x, y):
            w1, b1, w2, b2 = p
            return -jnp.mean(jnp.sum(jax.nn.log_softmax(jax.nn.relu(x @ w1 + b1) @ w2 + b2) * y, -1))

        def step(p, x, y):
            v, g = jax.value_and_grad(loss)(p, x, y)
            return v, [w - 0.01 * dw for w, dw in zip(p, g)]
        return step, ([full(i, h), full(h), full(h, o), full(o)], full(b, i), full(b, o))

    def gmm(n, k, d):
        def loglik(alphas, means, log_sigmas, x):
            z = (x[:, None, :] - means[None]) * jnp.exp(-log_sigmas)
            comp = jax.nn.log_softmax(alphas) - log_sigmas.sum(-1) - 0.5 * (z * z).sum(-1)
            return jax.scipy.special.logsumexp(comp, -1).sum()
        return jax.value_and_grad(loglik, argnums=(0, 1, 2)), (full(k), full(k, d), full(k, d), full(n, d))

    return {
        "chain": lambda n: (lambda a, b: jnp.tanh(a) * b + jnp.exp(-(a * a)) * 0.5, (full(n), full(n))),
        "softmax": lambda r, c: (lambda a: jax.nn.softmax(a, -1), (full(r, c),)),
        "rowsum": lambda r, c: (lambda a: a.sum(1), (full(r, c),)),
        "scale": lambda n: (lambda a: a * 3, (full(n),)),
        "matmul": lambda k: (lambda a: a @ a, (full(k, k, dtype=jnp.bfloat16),)),
        "mlp_step": mlp_step,
        "gmm": gmm,
    }


def jax_rows(workloads, reps):
    import jax
    import jax.numpy as jnp
    table = jax_workloads(jax, jnp)
    for name, family, dims in workloads:
        if family not in table:
            continue
        try:
            jax_one(jax, name, family, dims, table[family], reps)
        except Exception as e:  # one workload that cannot run is a row, not the end of the peer
            emit({"peer": f"jax {jax.__version__}", "name": name, "error": repr(e)[:300]})


def jax_one(jax, name, family, dims, make, reps):
    fn, args = make(*dims)
    f = jax.jit(fn)
    call = lambda: jax.block_until_ready(f(*args))  # noqa: E731
    for _ in range(3):
        call()
    ms = []
    for _ in range(reps):
        t = time.perf_counter()
        call()
        ms.append((time.perf_counter() - t) * 1e3)
    m = statistics.median(ms)
    emit({"peer": f"jax {jax.__version__}", "name": name, "ms": m, "GB/s": moved_bytes(family, dims) / m / 1e6})


def main():
    global OUT
    which, workloads_file, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    open(OUT, "w").close()
    workloads = []
    for line in open(workloads_file):
        name, family, dims = line.split()
        workloads.append((name, family, [int(x) for x in dims.split(",")]))
    try:
        {"torch": torch_rows, "jax": jax_rows}[which](workloads, reps)
    except Exception as e:  # a peer that cannot run is reported, not fatal
        emit({"peer": which, "error": repr(e)})


if __name__ == "__main__":
    main()
