#!/usr/bin/env python3
"""Times the GPU benchmark programs (tests/test_gpu_bundle.cpp, FLUXION_TEST_GPU_BENCH) on a GPU with
nothing but its driver (libcuda.so.1 through ctypes), as docs/performance.md's GPU section reports
them: inputs filled on the device (0.5f in every float32 element; never zeros), 3 warm-up runs,
then CUDA events around each of `reps` runs of the whole launch sequence, the median kept. Beside
them, the baseline of the same run: a device-to-device copy of 1 GiB (bytes read + written).

    gpu_bench_run.py BENCH.tgz OUT.json [reps]

prints one line per program and writes the figures as JSON lines.
"""
import ctypes
import json
import os
import statistics
import sys
import tarfile
import tempfile

cu = ctypes.CDLL(os.environ.get("FLUXION_TEST_CUDA_DRIVER", "libcuda.so.1"))


def check(code, call):
    if code != 0:
        name = ctypes.c_char_p()
        cu.cuGetErrorName(code, ctypes.byref(name))
        raise RuntimeError(f"{call}: {name.value.decode() if name.value else 'CUDA error'} ({code})")


def alloc(n):
    p = ctypes.c_uint64()
    check(cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n)), "cuMemAlloc")
    return p.value


class Events:
    def __init__(self):
        self.a, self.b = ctypes.c_void_p(), ctypes.c_void_p()
        check(cu.cuEventCreate(ctypes.byref(self.a), 0), "cuEventCreate")
        check(cu.cuEventCreate(ctypes.byref(self.b), 0), "cuEventCreate")

    def time(self, fn, reps):
        for _ in range(3):
            fn()
        check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
        ms = []
        for _ in range(reps):
            check(cu.cuEventRecord(self.a, None), "cuEventRecord")
            fn()
            check(cu.cuEventRecord(self.b, None), "cuEventRecord")
            check(cu.cuEventSynchronize(self.b), "cuEventSynchronize")
            t = ctypes.c_float()
            check(cu.cuEventElapsedTime(ctypes.byref(t), self.a, self.b), "cuEventElapsedTime")
            ms.append(t.value)
        return statistics.median(ms)


def load(case_dir):
    plan = [line.split() for line in open(os.path.join(case_dir, "plan.txt"))]
    buffers, temps, modules, launches, moved = [], [], [], [], 0
    for f in plan:
        if f[0] == "in":
            p = alloc(int(f[2]))
            check(cu.cuMemsetD32_v2(ctypes.c_uint64(p), ctypes.c_uint(0x3F000000), ctypes.c_size_t(int(f[2]) // 4)), "cuMemsetD32")
            buffers.append(p)
            moved += int(f[2])
        elif f[0] in ("out", "temp"):
            p = alloc(int(f[2]))
            (buffers if f[0] == "out" else temps).append(p)
            moved += int(f[2]) if f[0] == "out" else 0
        elif f[0] == "module":
            m = ctypes.c_void_p()
            ptx = open(os.path.join(case_dir, f[2]), "rb").read() + b"\0"
            check(cu.cuModuleLoadData(ctypes.byref(m), ptx), "cuModuleLoadData")
            modules.append(m)
    for f in plan:
        if f[0] != "launch":
            continue
        fn = ctypes.c_void_p()
        check(cu.cuModuleGetFunction(ctypes.byref(fn), modules[int(f[1])], f[2].encode()), "cuModuleGetFunction")
        values = [ctypes.c_uint64((buffers if p[0] == "b" else temps)[int(p[1:])]) for p in f[11:]]
        params = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
        launches.append((fn, [ctypes.c_uint(int(x)) for x in f[3:9]], ctypes.c_uint(int(f[9])), params, values))

    def run():
        for fn, dims, shared, params, _ in launches:
            check(cu.cuLaunchKernel(fn, *dims, shared, None, params, None), "cuLaunchKernel")
    return run, moved, len(launches)


def main():
    archive, out = sys.argv[1], sys.argv[2]
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    check(cu.cuInit(0), "cuInit")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    name = ctypes.create_string_buffer(256)
    cu.cuDeviceGetName(name, 256, dev)
    work = tempfile.mkdtemp(prefix="fluxion_gpu_bench_")
    tarfile.open(archive).extractall(work)
    bundle = os.path.join(work, next(d for d in os.listdir(work) if os.path.isfile(os.path.join(work, d, "cases.txt"))))
    ev = Events()
    rows = []
    n = 1 << 30
    src, dst = alloc(n), alloc(n)
    check(cu.cuMemsetD32_v2(ctypes.c_uint64(src), ctypes.c_uint(0x3F000000), ctypes.c_size_t(n // 4)), "cuMemsetD32")
    copy_ms = ev.time(lambda: check(cu.cuMemcpyDtoD_v2(ctypes.c_uint64(dst), ctypes.c_uint64(src), ctypes.c_size_t(n)), "cuMemcpyDtoD"), reps)
    copy_gbs = 2 * n / copy_ms / 1e6
    rows.append({"gpu": name.value.decode(), "name": "d2d_copy_1GiB", "ms": copy_ms, "GB/s": copy_gbs})
    print(f"{name.value.decode()}: device-to-device copy of 1 GiB {copy_ms:.3f} ms, {copy_gbs:.0f} GB/s (read + written)")
    cu.cuMemFree_v2(ctypes.c_uint64(src))
    cu.cuMemFree_v2(ctypes.c_uint64(dst))
    for line in open(os.path.join(bundle, "cases.txt")):
        case, what = line.split()
        try:
            run, moved, launches = load(os.path.join(bundle, case))
            ms = ev.time(run, reps)
            gbs = moved / ms / 1e6
            rows.append({"gpu": name.value.decode(), "name": what, "ms": ms, "GB/s": gbs, "launches": launches,
                         "of_copy_bandwidth": gbs / copy_gbs})
            print(f"fluxion {what}: {ms:.3f} ms over {launches} launch(es), {gbs:.0f} GB/s = {gbs / copy_gbs:.2f}x the copy's")
        except RuntimeError as e:
            rows.append({"gpu": name.value.decode(), "name": what, "error": str(e)})
            print(f"fluxion {what}: {e}")
    with open(out, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
