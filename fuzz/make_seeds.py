#!/usr/bin/env python3
"""Writes the seeds of fuzz/corpus/ that tools other than Fluxion make: .npy files as NumPy writes
them (versions 1.0 and 2.0, big-endian, Fortran order, a 0-d array), .npz as np.savez_compressed
does (deflated members), IDX files as MNIST's (plain and gzip), and CIFAR-10 records. Standard
library only (no NumPy needed). fuzz/make_seeds.cpp writes the rest. Usage: make_seeds.py fuzz/corpus
"""
import gzip
import io
import os
import struct
import sys
import zipfile


def npy(descr, shape, data, fortran=False, version=1):
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    d = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape_text}, }}"
    size_field = 2 if version == 1 else 4
    prefix = 6 + 2 + size_field  # magic, version, header length
    d = d + " " * ((-(prefix + len(d) + 1)) % 64) + "\n"  # NumPy pads the whole to 64 bytes
    head = b"\x93NUMPY" + bytes([version, 0]) + len(d).to_bytes(size_field, "little")
    return head + d.encode("latin1") + data


def put(root, folder, name, data):
    os.makedirs(os.path.join(root, folder), exist_ok=True)
    with open(os.path.join(root, folder, name), "wb") as f:
        f.write(data)


def main(root):
    f4 = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    put(root, "npy", "numpy_v1.npy", npy("<f4", (2, 3), f4))
    put(root, "npy", "numpy_v2.npy", npy("<f4", (2, 3), f4, version=2))
    # Valid NumPy files Fluxion refuses on purpose (an IOError naming why): kept as "refused-".
    put(root, "npy", "refused-big_endian.npy", npy(">i4", (3,), struct.pack(">3i", 1, -2, 3)))
    put(root, "npy", "refused-fortran.npy", npy("<f4", (2, 3), f4, fortran=True))
    put(root, "npy", "scalar.npy", npy("<f8", (), struct.pack("<d", 2.5)))
    put(root, "npy", "bool.npy", npy("|b1", (4,), bytes([1, 0, 0, 1])))
    members = {"w.npy": npy("<f4", (2, 3), f4), "i.npy": npy("<i8", (2,), struct.pack("<2q", 7, -7))}
    for name, method in (("deflated.npz", zipfile.ZIP_DEFLATED), ("stored.npz", zipfile.ZIP_STORED)):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", method) as z:
            for member, data in members.items():
                z.writestr(member, data)
        put(root, "npz", name, buf.getvalue())
    images = bytes([0, 0, 0x08, 3]) + struct.pack(">3i", 2, 2, 2) + bytes(range(8))
    put(root, "idx", "u8_rank3.idx", images)
    put(root, "idx", "u8_rank3.idx.gz", gzip.compress(images, mtime=0))
    put(root, "idx", "i32_rank1.idx", bytes([0, 0, 0x0C, 1]) + struct.pack(">i3i", 3, 1, -2, 70000))
    put(root, "idx", "f32_rank2.idx", bytes([0, 0, 0x0D, 2]) + struct.pack(">2i4f", 2, 2, 1.5, -2, 0, 8))
    put(root, "idx", "f64_rank1.idx", bytes([0, 0, 0x0E, 1]) + struct.pack(">i2d", 2, 0.25, -1e300))
    put(root, "idx", "i8_rank0.idx", bytes([0, 0, 0x09, 0, 0xFE]))
    records = b"".join(bytes([label]) + bytes((label * 7 + i) % 256 for i in range(3072)) for label in (3, 9))
    put(root, "cifar", "two_records.bin", records)
    put(root, "cifar", "empty.bin", b"")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "fuzz/corpus")
