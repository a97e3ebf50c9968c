"""Joins the per-layer convolution timings of bench/bench_conv_layers.cpp (Fluxion) and
`peers_torch.py N layers` (PyTorch), measured in the same pause, into the markdown table of
docs/resnet_step.md: per layer and part, both times, the speed ratio (PyTorch time / Fluxion time) and the
time one training step spends there more than PyTorch (count x difference), with the totals.

Run: python3 layers_table.py FLUXION_OUTPUT TORCH_OUTPUT [BASELINE_OUTPUT] (BASELINE: another
Fluxion library's run of the same pause, for an A/B column). Where a file holds several runs (A/B
alternated), the best time of each row is kept.
"""
import sys


def read(path):
    """{(layer, dtype, part): (best ms, count)} from the "layer NAME DTYPE PART MS COUNT" lines."""
    rows = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) != 6 or fields[0] != "layer":
                continue
            key, ms, count = tuple(fields[1:4]), float(fields[4]), int(fields[5])
            rows[key] = (min(ms, rows.get(key, (ms, count))[0]), count)
    return rows


def main():
    ours, theirs = read(sys.argv[1]), read(sys.argv[2])
    base = read(sys.argv[3]) if len(sys.argv) > 3 else None
    for dtype in sorted({k[1] for k in ours}, reverse=True):
        print(f"\n{dtype}: ms per call, best of the runs; speed = PyTorch / Fluxion; step = runs per step x "
              "(Fluxion - PyTorch) ms\n")
        print("| layer | part | runs/step |" + (" baseline ms |" if base else "") + " Fluxion ms | PyTorch ms | speed | step +ms |")
        print("|---|---|---|" + ("---|" if base else "") + "---|---|---|---|")
        total_ours = total_theirs = total_base = 0.0
        for (layer, dt, part), (ms, count) in ours.items():
            if dt != dtype or count == 0 or (layer, dt, part) not in theirs:
                continue
            peer = theirs[(layer, dt, part)][0]
            total_ours, total_theirs = total_ours + count * ms, total_theirs + count * peer
            b = base[(layer, dt, part)][0] if base else 0.0
            total_base += count * b
            col = f" {b:.2f} |" if base else ""
            print(f"| {layer} | {part} | {count} |{col} {ms:.2f} | {peer:.2f} | {peer / ms:.2f}x | {count * (ms - peer):+.1f} |")
        col = f" {total_base:.1f} |" if base else ""
        print(f"| all | weighted | |{col} {total_ours:.1f} | {total_theirs:.1f} | {total_theirs / max(total_ours, 1e-9):.2f}x "
              f"| {total_ours - total_theirs:+.1f} |")


if __name__ == "__main__":
    main()
