#!/usr/bin/env python3
"""Runs a bundle of GPU programs (tests/test_gpu_bundle.cpp writes it) on a GPU with nothing but
its driver (libcuda.so.1, through ctypes) and Python: per case, the PTX modules are loaded, the
inputs copied in, the outputs filled with 0xFF bytes, each launch queued and synchronised, and the
outputs written to <results>/<n>/out<i>.bin; <results>/status.txt gets "<n> ok" or "<n> <error>".

    gpu_bundle_run.py BUNDLE.tgz OUT [SECONDS]

unpacks the bundle, runs it within SECONDS (default 300) and leaves OUT/results.tgz (the results
directory, for FLUXION_TEST_GPU_RESULTS). A fatal error (an illegal address, a launch failure: the
context is lost, as on any GPU) ends the worker process, and a fresh one goes on from the next case
(docs/gpu.md, "Checking on a GPU").
"""
import ctypes
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

FATAL = {700, 701, 702, 714, 715, 716, 717, 718, 719, 720}  # the context is unusable after these

cu = ctypes.CDLL(os.environ.get("FLUXION_TEST_CUDA_DRIVER", "libcuda.so.1"))  # a stand-in, to test this script


class CudaError(Exception):
    def __init__(self, code, call, log=""):
        name = ctypes.c_char_p()
        cu.cuGetErrorName(code, ctypes.byref(name))
        super().__init__(f"{call}: {name.value.decode() if name.value else 'CUDA error'} ({code}){log}")
        self.code = code


def check(code, call):
    if code != 0:
        raise CudaError(code, call)


def load_module(path):
    ptx = open(path, "rb").read() + b"\0"
    log = ctypes.create_string_buffer(8192)
    options = (ctypes.c_int * 2)(5, 6)  # CU_JIT_ERROR_LOG_BUFFER, its size
    values = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(8192))
    module = ctypes.c_void_p()
    r = cu.cuModuleLoadDataEx(ctypes.byref(module), ptx, 2, options, values)
    if r != 0:
        raise CudaError(r, "cuModuleLoadDataEx", ": " + log.value.decode(errors="replace"))
    return module


def alloc(n):
    p = ctypes.c_uint64()
    check(cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n)), "cuMemAlloc")
    return p.value


def run_case(case_dir, out_dir):
    plan = [line.split() for line in open(os.path.join(case_dir, "plan.txt"))]
    buffers, temps, modules, owned = [], [], [], []
    try:
        for f in plan:
            if f[0] == "in":
                p = alloc(int(f[2]))
                owned.append(p)
                buffers.append(p)
                if int(f[3]):
                    data = open(os.path.join(case_dir, f"in{f[1]}.bin"), "rb").read()
                    check(cu.cuMemcpyHtoD_v2(ctypes.c_uint64(p), data, ctypes.c_size_t(len(data))), "cuMemcpyHtoD")
            elif f[0] in ("out", "temp"):
                p = alloc(int(f[2]))
                owned.append(p)
                check(cu.cuMemsetD8_v2(ctypes.c_uint64(p), ctypes.c_ubyte(0xFF), ctypes.c_size_t(int(f[2]))), "cuMemsetD8")
                (buffers if f[0] == "out" else temps).append(p)
            elif f[0] == "module":
                modules.append(load_module(os.path.join(case_dir, f[2])))
        for f in plan:
            if f[0] != "launch":
                continue
            fn = ctypes.c_void_p()
            check(cu.cuModuleGetFunction(ctypes.byref(fn), modules[int(f[1])], f[2].encode()), "cuModuleGetFunction")
            dims = [ctypes.c_uint(int(x)) for x in f[3:9]]
            values = [ctypes.c_uint64((buffers if p[0] == "b" else temps)[int(p[1:])]) for p in f[11:]]
            params = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
            check(cu.cuLaunchKernel(fn, *dims, ctypes.c_uint(int(f[9])), None, params, None), "cuLaunchKernel")
            check(cu.cuCtxSynchronize(), "cuCtxSynchronize after " + f[2])
        os.makedirs(out_dir, exist_ok=True)
        outs = [f for f in plan if f[0] == "out"]
        n_in = sum(1 for f in plan if f[0] == "in")
        for i, f in enumerate(outs):
            host = ctypes.create_string_buffer(int(f[2]))
            check(cu.cuMemcpyDtoH_v2(host, ctypes.c_uint64(buffers[n_in + i]), ctypes.c_size_t(int(f[2]))), "cuMemcpyDtoH")
            open(os.path.join(out_dir, f"out{i}.bin"), "wb").write(host.raw)
    finally:
        for p in owned:
            cu.cuMemFree_v2(ctypes.c_uint64(p))
        for m in modules:
            cu.cuModuleUnload(m)


def worker(bundle, out, first):
    """Runs cases from `first` until the end or a fatal error (exit status 3)."""
    check(cu.cuInit(0), "cuInit")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    cases = [line.rstrip("\n").split(" ", 1) for line in open(os.path.join(bundle, "cases.txt"))]
    status = open(os.path.join(out, "status.txt"), "a")
    for n, what in cases[first:]:
        try:
            run_case(os.path.join(bundle, n), os.path.join(out, n))
            status.write(f"{n} ok\n")
        except CudaError as e:
            status.write(f"{n} " + str(e).replace("\n", " ") + "\n")
            status.flush()
            print(f"case {n} ({what}): {e}", file=sys.stderr)
            if e.code in FATAL:
                sys.exit(3)


def main():
    if sys.argv[1] == "--worker":
        return worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    archive, out = sys.argv[1], sys.argv[2]
    budget = float(sys.argv[3]) if len(sys.argv) > 3 else 300
    t0 = time.time()
    work = tempfile.mkdtemp(prefix="fluxion_gpu_bundle_")  # not under OUT: only results.tgz goes back
    results = os.path.join(work, "results")
    os.makedirs(results, exist_ok=True)
    tarfile.open(archive).extractall(work)
    bundle = os.path.join(work, next(d for d in os.listdir(work) if os.path.isfile(os.path.join(work, d, "cases.txt"))))
    first, total = 0, sum(1 for _ in open(os.path.join(bundle, "cases.txt")))
    while first < total and time.time() - t0 < budget:
        try:
            subprocess.run([sys.executable, __file__, "--worker", bundle, results, str(first)], timeout=budget - (time.time() - t0))
        except subprocess.TimeoutExpired:
            pass
        done = [line.split()[0] for line in open(os.path.join(results, "status.txt"))] if os.path.exists(
            os.path.join(results, "status.txt")) else []
        first = int(done[-1]) + 1 if done else total
    lines = open(os.path.join(results, "status.txt")).read().splitlines() if os.path.exists(
        os.path.join(results, "status.txt")) else []
    bad = [line for line in lines if not line.endswith(" ok")]
    name = ctypes.create_string_buffer(256)
    cu.cuInit(0)
    cu.cuDeviceGetName(name, 256, 0)
    print(f"{name.value.decode()}: {len(lines)} of {total} cases ran in {time.time() - t0:.0f} s, {len(bad)} failed")
    for line in bad[:40]:
        print(line)
    with tarfile.open(os.path.join(out, "results.tgz"), "w:gz") as t:
        t.add(results, arcname="results")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
