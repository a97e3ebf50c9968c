"""The docs' figures, drawn from benchmark output (never by hand): each figure reads files that a
benchmark printed -- bench/peers/join.py's table, the GPU check's JSON lines, layers_table.py's
table, an example's TensorBoard run -- as committed under bench/results/, and writes an SVG under
docs/figures/.

  /usr/bin/python3 scripts/figures.py [--results DIR] [--out DIR]

Debian's python3-matplotlib (scripts/setup.sh installs it). The SVGs are deterministic (no date,
fixed ids), so re-running on the same results changes no committed file; tests/meson.build runs
this script into the build tree so it keeps working. To refresh a figure after a new run, put the
run's output under bench/results/ (the name says what, where and when) and point FIGURES at it.
"""
import argparse
import glob
import json
import os
import re
import struct

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

from protobuf_wire import fields  # noqa: E402  (scripts/, the script's own directory)

plt.rcParams.update({"svg.hashsalt": "fluxion", "svg.fonttype": "none", "font.size": 9})


def markdown_rows(path):
    """The rows of the first markdown table in `path`, as {column header: cell} dicts."""
    lines = [l.rstrip("\n") for l in open(path, encoding="utf-8") if l.startswith("|")]
    cells = [[c.strip() for c in l.strip().strip("|").split("|")] for l in lines]
    header, body = cells[0], [c for c in cells[2:] if len(c) >= 2]
    return [dict(zip(header, row)) for row in body]


def ratio(cell):
    """'13.12×' or '1.06x' -> 13.12; anything else (n/a, —, empty) -> None."""
    m = re.match(r"^\**([0-9.]+)\s*[×x]", cell or "")
    return float(m.group(1)) if m else None


def ratio_bars(ax, labels, series, title):
    """Horizontal bars on a log axis, one group per label, a line at 1 (parity)."""
    height = 0.8 / len(series)
    for k, (name, values, color) in enumerate(series):
        ys = [i + (k - (len(series) - 1) / 2) * height for i in range(len(labels))]
        xs = [v if v else 0 for v in values]
        ax.barh(ys, xs, height=height, color=color, label=name)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.figure.suptitle(title, x=0.01, ha="left")
    ax.grid(axis="x", which="both", alpha=0.3)
    if len(series) > 1:
        ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(series), frameon=False)


def peers_cpu(results, out):
    """Peer time / Fluxion time per workload, on the host's ISA and on x86-64-v3."""
    runs = sorted(glob.glob(os.path.join(results, "peers_cpu_*.md")))
    if not runs:
        return []
    written = []
    for path in runs:
        rows = markdown_rows(path)
        labels = [r["workload"] for r in rows]
        jax = [ratio(r.get("JAX ÷ Fluxion")) for r in rows]
        torch = [ratio(r.get("PyTorch ÷ Fluxion")) for r in rows]
        fig, ax = plt.subplots(figsize=(9, 0.28 * len(labels) + 1.4))
        what = os.path.basename(path)[len("peers_cpu_"):-3]
        ratio_bars(ax, labels, [("JAX ÷ Fluxion", jax, "#4c72b0"),
                                ("PyTorch ÷ Fluxion", torch, "#dd8452")],
                   f"CPU, 2 threads ({what}): > 1 means Fluxion is faster")
        ax.set_xlabel("peer time / Fluxion time, log scale (no bar: no such peer workload)")
        written.append(save(fig, out, f"peers_cpu_{what}.svg"))
    return written


def json_lines(path):
    return [json.loads(l) for l in open(path) if l.strip().startswith("{")]


def peers_gpu(results, out):
    """Per GPU run directory (the GPU check's output): peer ms / Fluxion ms per workload."""
    written = []
    for run in sorted(glob.glob(os.path.join(results, "gpu_*"))):
        ours = {r["name"]: r for r in json_lines(os.path.join(run, "bench_fluxion.json")) if "ms" in r}
        peers = {}
        for f in sorted(glob.glob(os.path.join(run, "peers_*.json"))):
            for r in json_lines(f):
                if r.get("name") in ours and "ms" in r:
                    peers.setdefault(r["peer"], {})[r["name"]] = r["ms"]
        # One bar per (workload, peer): each workload has its own peers (cuBLAS, torch.compile, eager).
        pairs = [(n, peer) for n in ours for peer in sorted(peers) if n in peers[peer]]
        labels = [f"{n}  vs {peer}" for n, peer in pairs]
        values = [peers[peer][n] / ours[n]["ms"] for n, peer in pairs]
        series = [("peer time / Fluxion time", values, "#4c72b0")]
        gpu = next(iter(ours.values())).get("gpu", "GPU")
        fig, ax = plt.subplots(figsize=(9, 0.3 * len(labels) + 1.2))
        ratio_bars(ax, labels, series, f"{gpu} ({os.path.basename(run)}): > 1 means Fluxion is faster")
        for i, v in enumerate(values):
            ax.text(v, i, f" {v:.2f}", va="center", fontsize=7)
        ax.set_xlabel("peer time / Fluxion time (log scale)")
        written.append(save(fig, out, os.path.basename(run) + ".svg"))
    return written


def resnet_layers(results, out):
    """Where a ResNet-18 step's convolution time goes, per layer and part, Fluxion against PyTorch
    (ms per step = runs/step x ms per call)."""
    written = []
    for path in sorted(glob.glob(os.path.join(results, "resnet_layers_*.md"))):
        rows, layer = [], ""
        for r in markdown_rows(path):
            layer = r["layer"] or layer
            if layer.startswith("all") or not r["runs/step"]:
                continue
            n = int(r["runs/step"])
            ours = r.get("this branch") or r.get("Fluxion ms")
            rows.append((layer, r["part"], n * float(ours), n * float(r.get("PyTorch") or r["PyTorch ms"])))
        layers = list(dict.fromkeys(l for l, *_ in rows))
        parts = list(dict.fromkeys(p for _, p, *_ in rows))
        colors = {"forward": "#4c72b0", "input grad": "#55a868", "kernel grad": "#dd8452"}
        fig, ax = plt.subplots(figsize=(8, 0.5 * len(layers) + 1.4))
        for side, (offset, index, hatch) in {"Fluxion": (-0.2, 2, ""), "PyTorch": (0.2, 3, "//")}.items():
            left = [0.0] * len(layers)
            for part in parts:
                ms = [sum(r[index] for r in rows if r[0] == l and r[1] == part) for l in layers]
                ax.barh([i + offset for i in range(len(layers))], ms, 0.38, left=left, hatch=hatch,
                        color=colors.get(part, "#8172b2"), edgecolor="white",
                        label=f"{part}" if side == "Fluxion" else None)
                left = [a + b for a, b in zip(left, ms)]
            for i, total in enumerate(left):
                ax.text(total, i + offset, f" {side} {total:.0f}", va="center", fontsize=7)
        ax.set_yticks(range(len(layers)), layers)
        ax.invert_yaxis()
        ax.set_xlabel("ms per training step (runs per step x ms per call); upper bar Fluxion, hatched PyTorch")
        what = os.path.basename(path)[len("resnet_layers_"):-3]
        ax.set_title(f"ResNet-18 step, b128, convolutions per layer ({what})", loc="left")
        ax.legend(loc="lower right")
        ax.grid(axis="x", alpha=0.3)
        written.append(save(fig, out, f"resnet_layers_{what}.svg"))
    return written


def scalars(path):
    """{tag: [(step, value)]} of the simple_value summaries in a TensorBoard event file (TFRecord
    framing: length, its CRC, the Event, its CRC; Event.step = 2, .summary = 5; Summary.value = 1;
    Value.tag = 1, .simple_value = 2) -- read here without TensorFlow or tensorboard."""
    data, i, out = open(path, "rb").read(), 0, {}
    while i + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, i)
        event = fields(data[i + 12:i + 12 + n])
        i += 12 + n + 4
        step = next((v for k, v in event if k == 2), 0)
        for k, summary in event:
            if k != 5:
                continue
            for _, value in (f for f in fields(summary) if f[0] == 1):
                v = dict(fields(value))
                if 1 in v and 2 in v:
                    out.setdefault(v[1].decode(), []).append((step, struct.unpack("<f", v[2])[0]))
    return out


def training_curves(results, out):
    """Training loss per step and test accuracy per epoch, from an example's TensorBoard run
    (examples/fashion_mnist --logdir)."""
    written = []
    for run in sorted(glob.glob(os.path.join(results, "training_*"))):
        logs = {}
        for f in sorted(glob.glob(os.path.join(run, "events.out.tfevents.*"))):
            for tag, points in scalars(f).items():
                logs.setdefault(tag, []).extend(points)
        if "train/loss" not in logs:
            continue
        fig, ax = plt.subplots(figsize=(8, 3.6))
        steps, loss = zip(*sorted(logs["train/loss"]))
        ax.plot(steps, loss, color="#c8d4ea", linewidth=0.6, label="loss per step")
        k = 50  # a moving average over 50 steps
        smooth = [sum(loss[max(0, j - k + 1):j + 1]) / (j + 1 - max(0, j - k + 1)) for j in range(len(loss))]
        ax.plot(steps, smooth, color="#4c72b0", label="loss, mean of 50 steps")
        ax.set_xlabel("step")
        ax.set_ylabel("training loss (cross-entropy)")
        ax.grid(alpha=0.3)
        if "test/accuracy" in logs:
            acc = ax.twinx()
            s, a = zip(*sorted(logs["test/accuracy"]))
            acc.plot(s, [100 * x for x in a], "o-", color="#dd8452", label="test accuracy")
            acc.set_ylabel("test accuracy (%)")
            for x, y in zip(s, a):
                acc.annotate(f"{100 * y:.1f}%", (x, 100 * y), textcoords="offset points", xytext=(0, 6),
                             ha="center", fontsize=7)
            acc.legend(loc="center right", frameon=False)
        ax.legend(loc="upper right", frameon=False)
        what = os.path.basename(run)[len("training_"):]
        fig.suptitle(f"examples/fashion_mnist ({what}): its TensorBoard run", x=0.01, ha="left")
        written.append(save(fig, out, f"training_{what}.svg"))
    return written


def save(fig, out, name):
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata={"Date": None, "Creator": "scripts/figures.py"})
    plt.close(fig)
    return path


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default=os.path.join(root, "bench", "results"))
    ap.add_argument("--out", default=os.path.join(root, "docs", "figures"))
    a = ap.parse_args()
    written = (peers_cpu(a.results, a.out) + peers_gpu(a.results, a.out) + resnet_layers(a.results, a.out) +
               training_curves(a.results, a.out))
    if not written:
        raise SystemExit(f"figures.py: no benchmark output under {a.results}")
    for path in written:
        print("wrote", os.path.relpath(path))


if __name__ == "__main__":
    main()
