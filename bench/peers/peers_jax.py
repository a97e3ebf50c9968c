"""The peer table's workloads in JAX on the CPU (bench/bench_peers.cpp is the Fluxion side).

Run by bench/peers/run.sh with the venv of bench/peers/setup.sh: python peers_jax.py [repeats].
Every function is jax.jit-compiled once before timing, every timed call blocks until its result is
ready, and the best of `repeats` wall-clock runs is kept. Threads: XLA's CPU client sizes its pool
by the CPUs this process may run on; run.sh pins the process to two CPUs.
"""
import sys
from functools import partial

import jax

jax.config.update("jax_enable_x64", True)  # for the float64 workloads; every input has an explicit dtype

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import common as c  # noqa: E402


def blocked(f, *args):
    """A thunk that calls f(*args) and waits for every output."""
    return lambda: jax.block_until_ready(f(*args))


def device(tree):
    """The numpy arrays of `tree` as jax arrays (placed once, not converted by every call)."""
    return jax.tree_util.tree_map(jnp.asarray, tree)


def expect_dtype(tree, dtype):
    for leaf in jax.tree_util.tree_leaves(tree):
        assert leaf.dtype == dtype, f"expected {dtype}, got {leaf.dtype}"


def mlp_loss(p, x, y):
    w1, b1, w2, b2 = p
    h = jax.nn.relu(x @ w1 + b1)
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ w2 + b2) * y, -1))


def mlp_step(p, x, y):
    loss, g = jax.value_and_grad(mlp_loss)(p, x, y)
    return loss, jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)


def gmm_loglik(p, x):
    alphas, means, log_sigmas = p
    z = (x[:, None, :] - means[None, :, :]) * jnp.exp(-log_sigmas)
    comp = jax.nn.log_softmax(alphas) - jnp.sum(log_sigmas, -1) - 0.5 * jnp.sum(z * z, -1)
    return jnp.sum(jax.scipy.special.logsumexp(comp, -1))


def rnn_loss(p, h0, xs):
    w, u, b = p

    def cell(h, x):
        n = jnp.tanh(w @ h + u @ x + b)
        return n, n

    h, ys = lax.scan(cell, h0, xs)
    return jnp.sum(h) + jnp.mean(ys)


def example_loss(p, x, y):  # one example: x[784], y[10]
    w1, b1, w2, b2 = p
    h = jax.nn.relu(x @ w1 + b1)
    return -jnp.sum(jax.nn.log_softmax(h @ w2 + b2) * y)


def ba_params(cams, points, weights, cam_idx, point_idx):
    """[observations, 15]: each observation's camera, point and weight, gathered from the tables."""
    return jnp.concatenate([cams[cam_idx], points[point_idx], weights[:, None]], axis=1)


def kmeans_cost(points, centroids):
    """Sum over points of the squared distance to the nearest centroid (|p|^2 + |c|^2 - 2 p.c)."""
    d = jnp.sum(points * points, 1)[:, None] + jnp.sum(centroids * centroids, 1)[None, :] - 2 * points @ centroids.T
    return jnp.sum(jnp.min(d, 1))


def kmeans_dir(points, centroids):
    """The Newton direction: the gradient over the Hessian's diagonal (the Hessian is diagonal; its
    product with ones, a jvp of the gradient, is that diagonal)."""
    g, h = jax.jvp(jax.grad(lambda cs: kmeans_cost(points, cs)), (centroids,), (jnp.ones_like(centroids),))
    return g / h


def conv3x3(x, w):
    return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME")


def conv3x3_grads(x, w, g):
    """The forward convolution and the gradients of sum(conv * g) with respect to x and w (the
    output is returned too: XLA would drop the forward convolution otherwise)."""
    y, pullback = jax.vjp(conv3x3, x, w)
    return (y, *pullback(g))


def cho_solve(spd, rhs):
    return jax.scipy.linalg.cho_solve((jnp.linalg.cholesky(spd), True), rhs)


def gp_loglik(theta, x, y):
    """The GP's log marginal likelihood (up to a constant) through the Cholesky factor."""
    d = x[:, None] - x[None, :]
    eye = jnp.eye(x.shape[0], dtype=x.dtype)
    k = jnp.exp(2 * theta[0]) * jnp.exp(-0.5 * d * d / jnp.exp(2 * theta[1])) + jnp.exp(2 * theta[2]) * eye
    l = jnp.linalg.cholesky(k)
    z = jax.scipy.linalg.solve_triangular(l, y, lower=True)
    return -0.5 * jnp.sum(z * z) - jnp.sum(jnp.log(jnp.diagonal(l)))


def linalg_rows(timed):
    spd, rhs, a, sym = device(c.linalg_data())
    f64 = np.float64
    timed("cho_solve", jax.jit(cho_solve), [spd, rhs], c.abs_sum, dtype=f64)
    timed("lu_solve", jax.jit(jnp.linalg.solve), [spd, rhs], c.abs_sum, dtype=f64)
    timed("qr512", jax.jit(jnp.linalg.qr), [a], lambda r: c.abs_sum(r[1]), dtype=f64)
    timed("eigh512", jax.jit(jnp.linalg.eigh), [sym], lambda r: c.abs_sum(r[0]), dtype=f64)
    timed("svd512", jax.jit(partial(jnp.linalg.svd, full_matrices=False)), [a], lambda r: c.abs_sum(r[1]), dtype=f64)
    x, y, theta = device(c.gp_data())
    vg = jax.jit(jax.value_and_grad(gp_loglik))
    timed("gp_vg", lambda t: vg(t, x, y), [theta], lambda r: float(r[0]), dtype=f64)
    timed("fft", jax.jit(jnp.fft.fft), [jnp.asarray(c.fft_data())], c.abs_sum, dtype=np.complex64)


def max_pool(x, k, pad):
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, k, k), (1, 1, 2, 2),
                                 ((0, 0), (0, 0), (pad, pad), (pad, pad)))


def pool_grads(x, g, k, pad):
    y, pullback = jax.vjp(lambda a: max_pool(a, k, pad), x)
    return (y, *pullback(g))


def resnet18_init(key):
    """ResNet-18 parameters (CIFAR stem, BasicBlocks, 10 classes) and batch statistics as nested
    dicts: convolutions OIHW with biases (He normal over fan_out, as examples/resnet_model.h), batch
    norm scale/bias and running mean/var, a dense head."""
    keys = iter(jax.random.split(key, 64))

    def conv(cin, cout, k):
        w = jax.random.normal(next(keys), (cout, cin, k, k), jnp.float32) * np.sqrt(2.0 / (cout * k * k))
        return {"w": w, "b": jnp.zeros(cout, jnp.float32)}

    def bn(ch):
        return {"scale": jnp.ones(ch, jnp.float32), "bias": jnp.zeros(ch, jnp.float32)}, \
            {"mean": jnp.zeros(ch, jnp.float32), "var": jnp.ones(ch, jnp.float32)}

    params, stats = {"stem": conv(3, 64, 3), "blocks": []}, {"blocks": []}
    params["stem_bn"], stats["stem"] = bn(64)
    cin = 64
    for i, width in enumerate((64, 128, 256, 512)):
        for j in range(2):
            stride = 2 if i > 0 and j == 0 else 1
            p, s = {"c1": conv(cin, width, 3), "c2": conv(width, width, 3)}, {}
            p["b1"], s["b1"] = bn(width)
            p["b2"], s["b2"] = bn(width)
            if stride != 1 or cin != width:
                p["proj"] = conv(cin, width, 1)
                p["proj_bn"], s["proj"] = bn(width)
            params["blocks"].append(p)
            stats["blocks"].append(s)
            cin = width
    params["head"] = {"w": jax.random.normal(next(keys), (512, 10), jnp.float32) / np.sqrt(512.0),
                      "b": jnp.zeros(10, jnp.float32)}
    return params, stats


def resnet18_apply(params, stats, x):
    """Training-mode forward: logits (float32) and the updated running statistics (momentum 0.9,
    Flax's convention; statistics computed in float32)."""
    new_stats = {"blocks": []}

    def conv(p, x, stride):
        k = p["w"].shape[-1]
        pad = ((k // 2, k // 2),) * 2
        y = lax.conv_general_dilated(x, p["w"], (stride, stride), pad, dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return y + p["b"][None, :, None, None]

    def bn(p, s, x):
        mean = jnp.mean(x, (0, 2, 3), dtype=jnp.float32)
        var = jnp.mean(jnp.square(x.astype(jnp.float32) - mean[None, :, None, None]), (0, 2, 3))
        inv = p["scale"] * lax.rsqrt(var + 1e-5)
        y = (x - mean[None, :, None, None].astype(x.dtype)) * inv[None, :, None, None].astype(x.dtype) \
            + p["bias"][None, :, None, None]
        s = {"mean": 0.9 * s["mean"] + 0.1 * lax.stop_gradient(mean),
             "var": 0.9 * s["var"] + 0.1 * lax.stop_gradient(var)}
        return y.astype(x.dtype), s

    h, new_stats["stem"] = bn(params["stem_bn"], stats["stem"], conv(params["stem"], x, 1))
    h = jax.nn.relu(h)
    for i, (p, s) in enumerate(zip(params["blocks"], stats["blocks"])):
        stride = 2 if "proj" in p and i > 0 else 1
        ns = {}
        a, ns["b1"] = bn(p["b1"], s["b1"], conv(p["c1"], h, stride))
        a, ns["b2"] = bn(p["b2"], s["b2"], conv(p["c2"], jax.nn.relu(a), 1))
        shortcut = h
        if "proj" in p:
            shortcut, ns["proj"] = bn(p["proj_bn"], s["proj"], conv(p["proj"], h, stride))
        h = jax.nn.relu(a + shortcut)
        new_stats["blocks"].append(ns)
    pooled = jnp.mean(h, (2, 3))
    return (pooled @ params["head"]["w"] + params["head"]["b"]).astype(jnp.float32), new_stats


def resnet18_step(params, stats, momentum, x, y, compute):
    """One SGD step (momentum 0.9, lr 0.1, weight decay 5e-4 on conv and dense weights) of the mean
    softmax cross-entropy, with parameters and inputs cast to `compute` (float32 master weights)."""
    def loss_fn(p):
        pc = jax.tree_util.tree_map(lambda a: a.astype(compute), p)
        logits, new_stats = resnet18_apply(pc, stats, x.astype(compute))
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], 1)), new_stats

    (loss, new_stats), g = jax.value_and_grad(loss_fn, has_aux=True)(params)
    g = jax.tree_util.tree_map(lambda gi, p: gi + 5e-4 * p if p.ndim > 1 else gi, g, params)
    momentum = jax.tree_util.tree_map(lambda m, gi: 0.9 * m + gi, momentum, g)
    params = jax.tree_util.tree_map(lambda p, m: p - 0.1 * m, params, momentum)
    return params, new_stats, momentum, loss


def resnet_rows(rec):
    """The ResNet-18 training step of bench_peers.cpp resnet_rows, in float32 and bfloat16 compute;
    parameters, statistics and momentum donated and fed back (every timed call is the next step)."""
    x, y = jnp.asarray(c.resnet_images()), jnp.asarray(c.resnet_labels())
    for precision, compute in (("f32", jnp.float32), ("bf16", jnp.bfloat16)):
        params, stats = resnet18_init(jax.random.PRNGKey(0))
        state = [params, stats, jax.tree_util.tree_map(jnp.zeros_like, params)]
        step = jax.jit(partial(resnet18_step, compute=compute), donate_argnums=(0, 1, 2))

        def run():
            *state[:], loss = step(*state, x, y)
            return jax.block_until_ready(loss)

        first = float(run())
        rec.emit(f"resnet18_step_{precision}", rec.best(run), first)


def main():
    rec = c.Recorder("jax", c.repeats_from_argv())
    print(f"# jax {jax.__version__} on {jax.devices()}", flush=True)
    if sys.argv[2:] == ["resnet"]:  # the ResNet rows alone
        return resnet_rows(rec)

    def timed(name, f, args, check, unit="ms", per=1, dtype=np.float32, inner=1):
        out = f(*args)  # compile
        expect_dtype(out, dtype)
        rec.emit(name, rec.best(blocked(f, *args), inner), check(out), unit, per)

    if sys.argv[2:] == ["linalg"]:  # the linear-algebra and FFT rows alone
        return linalg_rows(timed)

    n = c.N_ELEMENTWISE
    abc = [jnp.asarray(c.pattern((n,), lo, hi, s)) for lo, hi, s in [(-3, 3, 1), (0.5, 2, 2), (-4, 2, 3)]]
    timed("fused", jax.jit(lambda a, b, x: jnp.sin(a * b) + jnp.exp(x)), abc, c.abs_sum)
    del abc
    x = jnp.asarray(c.pattern((n,), -20, 20, 1))
    timed("softplus", jax.jit(lambda x: jnp.log1p(jnp.exp(x))), [x], c.abs_sum)
    del x

    m = jnp.asarray(c.pattern((c.N_ROWS, c.N_ROWS), -1, 1, 1))
    timed("rowsum", jax.jit(lambda m: jnp.sum(m, 1)), [m], c.abs_sum)
    m = jnp.asarray(c.pattern((c.N_ROWS, c.N_ROWS), -4, 4, 1))
    timed("softmax", jax.jit(lambda m: jax.nn.softmax(m, -1)), [m], lambda s: np.asarray(s)[:, :7].sum())
    del m

    for size in (512, 1024):
        a, b = jnp.asarray(c.pattern((size, size), -1, 1, 1)), jnp.asarray(c.pattern((size, size), -1, 1, 2))
        timed(f"matmul{size}", jax.jit(jnp.matmul), [a, b], c.abs_sum)

    p, x, y = device(c.mlp_data(c.MLP_HIDDEN))
    timed("mlp_forward", jax.jit(mlp_loss), [p, x, y], float)
    timed("mlp_step", jax.jit(mlp_step), [p, x, y], lambda r: c.abs_sum(*r[1]))

    g, x = device(c.gmm_data())
    timed("gmm_vg", jax.jit(jax.value_and_grad(gmm_loglik)), [g, x], lambda r: float(r[0]))

    cell, h0, xs = device(c.rnn_data())
    timed("rnn_scan", jax.jit(rnn_loss), [cell, h0, xs], float, "us", c.RNN_STEPS)

    p, x, y = device(c.mlp_data(c.PEX_HIDDEN))
    per_example = jax.jit(jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0)))
    timed("per_example", per_example, [p, x, y], lambda g: c.abs_sum(*g))

    small = jnp.asarray(c.pattern((c.SMALL,), -1, 1, 1))
    timed("jit_call", jax.jit(lambda x: jnp.sin(x) * 2 + 1), [small], c.abs_sum, "us", inner=1000)
    timed("eager_add", jnp.add, [small, small], c.abs_sum, "us", inner=1000)

    # Compile: a fresh function (a new constant) each time, timed from its first call to its result.
    x = jnp.asarray(c.pattern((c.COMPILE_N,), 0, 1, 1))
    fresh = iter(range(2, 1 << 30))

    def compile_once():
        k = float(next(fresh))
        jax.block_until_ready(jax.jit(lambda x: x * k)(x))

    rec.emit("compile", rec.best(compile_once), None)

    cams, points, weights, feats, ci, pi = device(c.ba_data())
    ba_args = [cams, points, weights, feats, ci, pi]
    residual = partial(c.ba_residual, jnp)
    ba_res = jax.jit(lambda cams, pts, w, f, ci, pi: jax.vmap(residual)(ba_params(cams, pts, w, ci, pi), f))
    ba_jac = jax.jit(lambda cams, pts, w, f, ci, pi: jax.vmap(jax.jacfwd(residual))(ba_params(cams, pts, w, ci, pi), f))
    timed("ba_residuals", ba_res, ba_args, c.abs_sum, dtype=np.float64)
    timed("ba_jacobian", ba_jac, ba_args, c.abs_sum, dtype=np.float64)

    cx, cw, cg = device(c.conv_data())
    timed("conv3x3_forward", jax.jit(conv3x3), [cx, cw], c.abs_sum)
    timed("conv3x3", jax.jit(conv3x3_grads), [cx, cw, cg], lambda r: c.abs_sum(*r))

    for name, k, pad in c.POOLS:
        px, pg = device(c.pool_data(k, pad))
        timed(name + "_forward", jax.jit(partial(max_pool, k=k, pad=pad)), [px], c.abs_sum)
        timed(name, jax.jit(partial(pool_grads, k=k, pad=pad)), [px, pg], lambda r: c.abs_sum(*r))

    kp, kc = device(c.kmeans_data())
    timed("kmeans_cost", jax.jit(kmeans_cost), [kp, kc], float, dtype=np.float64)
    timed("kmeans_dir", jax.jit(kmeans_dir), [kp, kc], c.abs_sum, dtype=np.float64)

    linalg_rows(timed)
    resnet_rows(rec)


if __name__ == "__main__":
    main()
