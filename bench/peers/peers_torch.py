"""The peer table's workloads in PyTorch, eager (no torch.compile), on the CPU.

Run by bench/peers/run.sh: python peers_torch.py [repeats]. Threads: torch.set_num_threads(2).
`python peers_torch.py N resnet` runs the ResNet-18 rows alone, `python peers_torch.py N layers`
ResNet-18's convolutions one at a time (bench/bench_conv_layers.cpp's output format).
Rows without a PyTorch counterpart are skipped (the cached jit call and the compile of a one-op
function: eager PyTorch has neither; PyTorch has no scan, so the RNN row runs a Python loop of
1000 steps, which is what a PyTorch user writes). The per-example gradients, the BA Jacobian and
the k-means direction use torch.func (vmap, grad, jacfwd, jvp).
"""
import sys
import time
import warnings
from functools import partial

import torch
import torch.nn.functional as F
from torch.func import grad, jacfwd, jvp, vmap

import common as c

torch.set_num_threads(2)
warnings.filterwarnings("ignore", category=FutureWarning)  # torch.func's internal use of torch.jit


def mlp_loss(p, x, y):
    w1, b1, w2, b2 = p
    h = torch.relu(x @ w1 + b1)
    return -torch.mean(torch.sum(F.log_softmax(h @ w2 + b2, -1) * y, -1))


def mlp_step(p, x, y):
    p = [a.detach().requires_grad_() for a in p]
    loss = mlp_loss(p, x, y)
    g = torch.autograd.grad(loss, p)
    with torch.no_grad():
        return loss.detach(), [a - 0.01 * b for a, b in zip(p, g)]


def gmm_value_and_grad(p, x):
    alphas, means, log_sigmas = [a.detach().requires_grad_() for a in p]
    z = (x[:, None, :] - means[None, :, :]) * torch.exp(-log_sigmas)
    comp = F.log_softmax(alphas, -1) - torch.sum(log_sigmas, -1) - 0.5 * torch.sum(z * z, -1)
    value = torch.sum(torch.logsumexp(comp, -1))
    return value.detach(), torch.autograd.grad(value, [alphas, means, log_sigmas])


@torch.no_grad()
def rnn_loss(p, h0, xs):
    w, u, b = p
    h, total = h0, torch.zeros((), dtype=h0.dtype)
    for t in range(xs.shape[0]):
        h = torch.tanh(w @ h + u @ xs[t] + b)
        total = total + torch.sum(h)
    return torch.sum(h) + total / (xs.shape[0] * xs.shape[1])


def example_loss(p, x, y):
    w1, b1, w2, b2 = p
    h = torch.relu(x @ w1 + b1)
    return -torch.sum(F.log_softmax(h @ w2 + b2, -1) * y)


def ba_params(cams, points, weights, cam_idx, point_idx):
    return torch.cat([cams[cam_idx], points[point_idx], weights[:, None]], 1)


def kmeans_cost(points, centroids):
    d = torch.sum(points * points, 1)[:, None] + torch.sum(centroids * centroids, 1)[None, :] - 2 * points @ centroids.T
    return torch.sum(torch.min(d, 1).values)


def kmeans_dir(points, centroids):
    g, h = jvp(grad(lambda cs: kmeans_cost(points, cs)), (centroids,), (torch.ones_like(centroids),))
    return g / h


def conv3x3_grads(x, w, g):
    """The forward convolution (oneDNN) and the gradients of sum(conv * g) with respect to x and w."""
    x, w = x.detach().requires_grad_(), w.detach().requires_grad_()
    y = F.conv2d(x, w, padding=1)
    return (y.detach(), *torch.autograd.grad(y, (x, w), g))


def gp_value_and_grad(theta, x, y):
    theta = theta.detach().requires_grad_()
    d = x[:, None] - x[None, :]
    eye = torch.eye(x.shape[0], dtype=x.dtype)
    k = torch.exp(2 * theta[0]) * torch.exp(-0.5 * d * d / torch.exp(2 * theta[1])) + torch.exp(2 * theta[2]) * eye
    l = torch.linalg.cholesky(k)
    z = torch.linalg.solve_triangular(l, y[:, None], upper=False)
    value = -0.5 * torch.sum(z * z) - torch.sum(torch.log(torch.diagonal(l)))
    return value.detach(), torch.autograd.grad(value, theta)[0]


@torch.no_grad()
def linalg_rows(timed, abs_sum):
    spd, rhs, a, sym = tensors(c.linalg_data())
    timed("cho_solve", lambda m, r: torch.cholesky_solve(r, torch.linalg.cholesky(m)), [spd, rhs], abs_sum)
    timed("lu_solve", torch.linalg.solve, [spd, rhs], abs_sum)
    timed("qr512", torch.linalg.qr, [a], lambda r: abs_sum(r[1]))
    timed("eigh512", torch.linalg.eigh, [sym], lambda r: abs_sum(r[0]))
    timed("svd512", lambda m: torch.linalg.svd(m, full_matrices=False), [a], lambda r: abs_sum(r[1]))
    x, y, theta = tensors(c.gp_data())
    with torch.enable_grad():
        timed("gp_vg", lambda t: gp_value_and_grad(t, x, y), [theta], lambda r: float(r[0]))
    timed("fft", torch.fft.fft, [torch.from_numpy(c.fft_data())], abs_sum)


def pool_grads(x, g, k, pad):
    """Max pooling (k x k, stride 2) and the gradient of sum(pool * g) with respect to x."""
    x = x.detach().requires_grad_()
    y = F.max_pool2d(x, k, 2, pad)
    return (y.detach(), *torch.autograd.grad(y, (x,), g))


class BasicBlock(torch.nn.Module):
    """conv3x3-bn-relu-conv3x3-bn plus the input (a strided 1x1 conv and bn where the shape changes),
    as examples/resnet_model.h (convolutions with biases, like fx::nn::Conv)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        nn = torch.nn
        self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1), nn.BatchNorm2d(cout)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1), nn.BatchNorm2d(cout)
        self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride), nn.BatchNorm2d(cout)) if stride != 1 or cin != cout else None

    def forward(self, x):
        h = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        return torch.relu(h + (self.proj(x) if self.proj is not None else x))


def resnet18():
    """ResNet-18 with the CIFAR stem (3x3 conv, no max pool), 10 classes."""
    nn, layers, cin = torch.nn, [], 64
    for i, width in enumerate((64, 128, 256, 512)):
        for j in range(2):
            layers.append(BasicBlock(cin, width, 2 if i > 0 and j == 0 else 1))
            cin = width
    return nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1), nn.BatchNorm2d(64), nn.ReLU(), *layers,
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10))


def resnet_rows(timed):
    """The ResNet-18 training step (bench_peers.cpp resnet_rows): SGD momentum 0.9, lr 0.1, weight
    decay 5e-4 on conv and dense weights; bf16 = autocast to bfloat16 (float32 master weights)."""
    x, y = torch.from_numpy(c.resnet_images()), torch.from_numpy(c.resnet_labels()).long()
    for precision in ("f32", "bf16"):
        torch.manual_seed(0)
        model = resnet18().train()
        decayed = [p for p in model.parameters() if p.ndim > 1]
        others = [p for p in model.parameters() if p.ndim <= 1]
        opt = torch.optim.SGD([{"params": decayed, "weight_decay": 5e-4}, {"params": others, "weight_decay": 0.0}],
                              lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
                loss = F.cross_entropy(model(x).float(), y)
            loss.backward()
            opt.step()
            return loss.detach()

        first = float(step(x, y))
        timed(f"resnet18_step_{precision}", step, [x, y], lambda _: first)


# ResNet-18's convolutions (bench/bench_conv_layers.cpp's kLayers): name, c -> o features, hw x hw
# input, k x k kernel (padding k // 2), stride, runs per training step, input gradient needed.
LAYERS = [("stem", 3, 64, 32, 3, 1, 1, False), ("s1", 64, 64, 32, 3, 1, 4, True),
          ("s2_down", 64, 128, 32, 3, 2, 1, True), ("s2_proj", 64, 128, 32, 1, 2, 1, True),
          ("s2", 128, 128, 16, 3, 1, 3, True), ("s3_down", 128, 256, 16, 3, 2, 1, True),
          ("s3_proj", 128, 256, 16, 1, 2, 1, True), ("s3", 256, 256, 8, 3, 1, 3, True),
          ("s4_down", 256, 512, 8, 3, 2, 1, True), ("s4_proj", 256, 512, 8, 1, 2, 1, True),
          ("s4", 512, 512, 4, 3, 1, 3, True)]


def layer_rows(repeats):
    """Per layer, dtype and part (forward, input gradient, kernel gradient), the best of `repeats`
    calls, as bench/bench_conv_layers.cpp prints them: "layer NAME DTYPE PART MS COUNT". The
    gradients are aten.convolution_backward with one output each, as autograd calls it in the step
    (there with both outputs at once); bfloat16 tensors throughout for bf16 (autocast's)."""
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads, best of {repeats}", flush=True)
    n = c.RESNET_N
    for dtype, label in ((torch.bfloat16, "bf16"), (torch.float32, "f32")):
        for name, ci, co, hw, k, s, count, needs_dx in LAYERS:
            pad, oh = k // 2, (hw + 2 * (k // 2) - k) // s + 1
            x = torch.from_numpy(c.pattern((n, ci, hw, hw), -1, 1, 1)).to(dtype)
            w = torch.from_numpy(c.pattern((co, ci, k, k), -0.1, 0.1, 2)).to(dtype)
            g = torch.from_numpy(c.pattern((n, co, oh, oh), -1, 1, 3)).to(dtype)

            def backward(mask):
                return torch.ops.aten.convolution_backward(g, x, w, None, [s, s], [pad, pad], [1, 1], False, [0, 0], 1,
                                                           mask)

            parts = [("forward", lambda: F.conv2d(x, w, stride=s, padding=pad), count),
                     ("input_grad", lambda: backward([True, False, False]), count if needs_dx else 0),
                     ("kernel_grad", lambda: backward([False, True, False]), count)]
            with torch.no_grad():
                for part, f, runs in parts:
                    f()
                    best = 1e300
                    for _ in range(repeats):
                        t = time.perf_counter()
                        f()
                        best = min(best, time.perf_counter() - t)
                    print(f"layer {name} {label} {part} {best * 1e3:.3f} {runs}", flush=True)


def tensors(tree):
    if isinstance(tree, (tuple, list)):
        return type(tree)(tensors(a) for a in tree)
    return torch.from_numpy(tree)


def flat(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for a in tree for leaf in flat(a)]
    return [tree]


def main():
    if sys.argv[2:] == ["layers"]:  # ResNet-18's convolutions one at a time
        return layer_rows(c.repeats_from_argv())
    rec = c.Recorder("torch", c.repeats_from_argv())
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads, eager", flush=True)

    def timed(name, f, args, check, unit="ms", per=1, inner=1):
        out = f(*args)
        rec.emit(name, rec.best(lambda: f(*args), inner), check(out), unit, per)

    abs_sum = lambda out: c.abs_sum(*[a.detach().numpy() for a in flat(out)])  # noqa: E731
    if sys.argv[2:] == ["resnet"]:  # the ResNet rows alone
        return resnet_rows(timed)
    n = c.N_ELEMENTWISE
    abc = [torch.from_numpy(c.pattern((n,), lo, hi, s)) for lo, hi, s in [(-3, 3, 1), (0.5, 2, 2), (-4, 2, 3)]]
    timed("fused", lambda a, b, x: torch.sin(a * b) + torch.exp(x), abc, abs_sum)
    del abc
    x = torch.from_numpy(c.pattern((n,), -20, 20, 1))
    timed("softplus", lambda x: torch.log1p(torch.exp(x)), [x], abs_sum)
    del x

    m = torch.from_numpy(c.pattern((c.N_ROWS, c.N_ROWS), -1, 1, 1))
    timed("rowsum", lambda m: torch.sum(m, 1), [m], abs_sum)
    m = torch.from_numpy(c.pattern((c.N_ROWS, c.N_ROWS), -4, 4, 1))
    timed("softmax", lambda m: torch.softmax(m, -1), [m], lambda s: float(s[:, :7].double().sum()))
    del m

    for size in (512, 1024):
        a, b = torch.from_numpy(c.pattern((size, size), -1, 1, 1)), torch.from_numpy(c.pattern((size, size), -1, 1, 2))
        timed(f"matmul{size}", torch.matmul, [a, b], abs_sum)

    p, x, y = tensors(c.mlp_data(c.MLP_HIDDEN))
    with torch.no_grad():
        timed("mlp_forward", mlp_loss, [p, x, y], float)
    timed("mlp_step", mlp_step, [p, x, y], lambda r: abs_sum(r[1]))

    g, x = tensors(c.gmm_data())
    timed("gmm_vg", gmm_value_and_grad, [g, x], lambda r: float(r[0]))

    cell, h0, xs = tensors(c.rnn_data())
    timed("rnn_scan", rnn_loss, [cell, h0, xs], float, "us", c.RNN_STEPS)

    p, x, y = tensors(c.mlp_data(c.PEX_HIDDEN))
    timed("per_example", vmap(grad(example_loss), in_dims=(None, 0, 0)), [p, x, y], abs_sum)

    small = torch.from_numpy(c.pattern((c.SMALL,), -1, 1, 1))
    rec.skip("jit_call", "eager PyTorch has no compiled-function call (torch.compile not used)")
    timed("eager_add", torch.add, [small, small], abs_sum, "us", inner=1000)
    rec.skip("compile", "torch.compile not used")

    cams, points, weights, feats, ci, pi = tensors(c.ba_data())
    ci, pi = ci.long(), pi.long()
    ba_args = [cams, points, weights, feats, ci, pi]
    residual = partial(c.ba_residual, torch)
    timed("ba_residuals", lambda cams, pts, w, f, ci, pi: vmap(residual)(ba_params(cams, pts, w, ci, pi), f), ba_args, abs_sum)
    timed("ba_jacobian", lambda cams, pts, w, f, ci, pi: vmap(jacfwd(residual))(ba_params(cams, pts, w, ci, pi), f), ba_args,
          abs_sum)

    cx, cw, cg = tensors(c.conv_data())
    with torch.no_grad():
        timed("conv3x3_forward", lambda x, w: F.conv2d(x, w, padding=1), [cx, cw], abs_sum)
    timed("conv3x3", conv3x3_grads, [cx, cw, cg], abs_sum)

    for name, k, pad in c.POOLS:
        px, pg = tensors(c.pool_data(k, pad))
        with torch.no_grad():
            timed(name + "_forward", lambda x, k=k, pad=pad: F.max_pool2d(x, k, 2, pad), [px], abs_sum)
        timed(name, lambda x, g, k=k, pad=pad: pool_grads(x, g, k, pad), [px, pg], abs_sum)

    kp, kc = tensors(c.kmeans_data())
    timed("kmeans_cost", kmeans_cost, [kp, kc], float)
    timed("kmeans_dir", kmeans_dir, [kp, kc], abs_sum)

    linalg_rows(timed, abs_sum)
    resnet_rows(timed)


if __name__ == "__main__":
    main()
