"""Joins the JSON lines of bench_peers (Fluxion), peers_jax.py and peers_torch.py into the peer table
(markdown): per workload the Fluxion, JAX and PyTorch times, the ratios peer time / Fluxion time
(> 1: Fluxion is faster), and for the GradBench-style rows the plain C++ loop and Fluxion time /
loop time against the target. The last column compares the sides' result values (check): the
largest relative difference from Fluxion's.

python join.py FILE...   one run: lines that are not JSON objects are ignored; where a workload and
                         side appear more than once (several rounds) the best time counts
python join.py DIR...    one run per directory (its *.jsonl, as run.sh writes them): every cell
                         shows the runs' values side by side, "run 1 / run 2 / ..."
"""
import glob
import json
import os
import sys

ROWS = [  # workload id, label, target of Fluxion time / plain-loop time
    ("fused", "sin(a·b)+exp(c), 16M f32", None),
    ("softplus", "softplus log1p(exp(x)), 16M f32", None),
    ("rowsum", "row sums 4096² f32", None),
    ("softmax", "softmax rows 4096² f32", None),
    ("matmul512", "matmul 512³ f32", None),
    ("matmul1024", "matmul 1024³ f32", None),
    ("mlp_forward", "MLP 784-512-10 b256 forward (loss)", None),
    ("mlp_step", "MLP 784-512-10 b256 SGD step", None),
    ("gmm_vg", "GMM value_and_grad d=64 K=100 n=1000 f32", None),
    ("rnn_scan", "RNN scan 1000×64 forward, per step", None),
    ("per_example", "per-example grads vmap(grad) 256 × 784-128-10", None),
    ("jit_call", "cached jit call, 3 ops on f32[8]", None),
    ("eager_add", "eager add f32[8]", None),
    ("compile", "compile a one-op function (first call)", None),
    ("ba_residuals", "BA residuals, 30k obs f64 (vmap)", None),
    ("ba_jacobian", "BA Jacobian vmap(jacfwd), 30k obs × 2×15 f64", 7.0),
    ("conv3x3_forward", "conv 3×3 64→64 32² b128 NCHW forward f32", None),
    ("conv3x3", "conv 3×3 64→64 32² b128 forward + both gradients f32", None),
    ("maxpool2_forward", "max pool 2×2/2, 32×64×56² NCHW f32 forward", None),
    ("maxpool2", "max pool 2×2/2 forward + gradient", None),
    ("maxpool3_forward", "max pool 3×3/2 pad 1, 32×64×56² forward", None),
    ("maxpool3", "max pool 3×3/2 pad 1 forward + gradient", None),
    ("kmeans_cost", "k-means cost n=10k k=100 d=16 f64", None),
    ("kmeans_dir", "k-means Newton direction (grad, Hessian diag) f64", 1.5),
    ("cho_solve", "Cholesky + solve, 256 × 64² f64", None),
    ("lu_solve", "LU solve, 256 × 64² f64", None),
    ("qr512", "QR 512² f64 (reduced, Q and R)", None),
    ("eigh512", "eigh 512² f64 (values and vectors)", None),
    ("svd512", "SVD 512² f64 (U, S, Vᵀ)", None),
    ("gp_vg", "GP log-likelihood value_and_grad, n=2000 f64", None),
    ("fft", "FFT 2²⁰ complex64", None),
    ("resnet18_step_f32", "ResNet-18 training step b128 32²×3, SGD momentum, f32", None),
    ("resnet18_step_bf16", "ResNet-18 training step, bf16 compute, f32 master weights", None),
]
PEERS = [("jax", "JAX"), ("torch", "PyTorch")]


def load(paths):
    recs = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                key = (r["workload"], r["side"])
                if key not in recs or r.get("time", 0) < recs[key].get("time", 0):
                    recs[key] = r
    return recs


def fmt(r):
    if r is None:
        return "—"
    if "skipped" in r:
        return "n/a"
    t = r["time"]
    digits = 3 if t < 1 else 2 if t < 10 else 1
    return f"{t:.{digits}f} {'µs' if r['unit'] == 'us' else 'ms'}"


def ratio(num, den):
    if num is None or den is None or "time" not in num or "time" not in den or den["time"] <= 0:
        return "—"
    return f"{num['time'] / den['time']:.2f}×"


def check_diff(recs, workload):
    """The largest relative difference of the other sides' result values from Fluxion's."""
    base = recs.get((workload, "fluxion"), {}).get("check")
    if base is None:
        return "—"
    diffs = [abs(r["check"] - base) / max(abs(base), 1e-30)
             for (w, side), r in recs.items() if w == workload and side != "fluxion" and r.get("check") is not None]
    return f"{max(diffs):.1e}" if diffs else "—"


def table(runs):
    """The markdown table of one or more runs (each a dict of records)."""
    sides = [(s, name) for s, name in PEERS if any(side == s for recs in runs for _, side in recs)]
    head = ["workload", "Fluxion"]
    for _, name in sides:
        head += [name, f"{name} ÷ Fluxion"]
    head += ["plain C++ loop, 2 thr (1 thr)", "Fluxion ÷ loop (target)", "max rel. diff of results"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    each = lambda cell: " / ".join(cell(recs) for recs in runs)  # noqa: E731
    for workload, label, target in ROWS:
        if not any(w == workload for recs in runs for w, _ in recs):
            continue
        flux = lambda recs: recs.get((workload, "fluxion"))  # noqa: E731
        row = [label, each(lambda recs: fmt(flux(recs)))]
        for s, _ in sides:
            row += [each(lambda recs: fmt(recs.get((workload, s)))),
                    each(lambda recs: ratio(recs.get((workload, s)), flux(recs)))]
        has_loop = any((workload, "loop") in recs for recs in runs)
        row.append(each(lambda recs: f"{fmt(recs.get((workload, 'loop')))} ({fmt(recs.get((workload, 'loop_1t')))})")
                   if has_loop else "")
        row.append(each(lambda recs: ratio(flux(recs), recs.get((workload, "loop")))) + (f" (≤ {target:g})" if target else "")
                   if has_loop else "")
        row.append(max((check_diff(recs, workload) for recs in runs), key=lambda d: -1 if d == "—" else float(d)))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main():
    args = sys.argv[1:]
    if args and all(os.path.isdir(a) for a in args):
        runs = [load(sorted(glob.glob(os.path.join(d, "*.jsonl")))) for d in args]
    else:
        runs = [load(args)]
    print(table(runs))


if __name__ == "__main__":
    main()
