"""Times one ONNX model in onnxruntime for fluxion_bench_quant (the int8 peer row):

    python ort_time.py MODEL INPUT.bin SHAPE THREADS REPEATS [OUTPUT.bin]

INPUT.bin holds float32 in0 of SHAPE ("256,1,28,28"). Prints the best time of REPEATS runs in ms
(after two warm-up runs) and the kernels onnxruntime chose for the graph after its optimisations
(the QDQ pattern fused into integer kernels, or left as float ones); writes out0 to OUTPUT.bin."""
import sys, time, collections
import numpy as np
import onnxruntime as ort

model, data, shape, threads, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
x = np.fromfile(data, dtype=np.float32).reshape(tuple(int(d) for d in shape.split(",")))
opts = ort.SessionOptions()
opts.intra_op_num_threads = threads
opts.inter_op_num_threads = 1
opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
opts.optimized_model_filepath = model + ".optimized.onnx"
s = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
for _ in range(2):
    y = s.run(["out0"], {"in0": x})[0]
best = float("inf")
for _ in range(repeats):
    t = time.perf_counter()
    s.run(["out0"], {"in0": x})
    best = min(best, time.perf_counter() - t)
if len(sys.argv) > 6:
    np.asarray(y, dtype=np.float32).tofile(sys.argv[6])
import onnx_ops  # noqa: E402  (the optimised graph's node kinds, without the onnx package)
ops = collections.Counter(onnx_ops.op_types(opts.optimized_model_filepath))
print(f"{best * 1e3:.4f} ms; onnxruntime {ort.__version__}, after its graph optimisations: " + ", ".join(f"{k} x{v}" if v > 1 else k for k, v in sorted(ops.items())))
