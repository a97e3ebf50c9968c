"""What the peer scripts share with bench/bench_peers.cpp: the deterministic input data (the same
bits on both sides, so a result value can be compared), the problem sizes, best-of-N timing and the
JSON-lines records that bench/peers/join.py reads.

Every array is `pattern(shape, lo, hi, salt)`: element i (row-major) is lo + (hi - lo) * u with
u = (splitmix64(i + salt * 2^40) >> 11) * 2^-53 in [0, 1), computed in float64 and then rounded to
the array's dtype -- bench/peer_data.h computes the same numbers in C++. (A hash rather than a
short periodic sequence: periodic data gave the k-means points exact ties between centroids, where
the derivative of min is a convention.)
"""
import json
import sys
import time

import numpy as np

# Problem sizes (bench/peer_data.h has the same constants).
N_ELEMENTWISE = 16 << 20          # sin(a*b)+exp(c), softplus
N_ROWS = 4096                     # row sums, softmax: 4096 x 4096
MLP_BATCH, MLP_IN, MLP_HIDDEN, MLP_OUT = 256, 784, 512, 10
GMM_N, GMM_K, GMM_D = 1000, 100, 64
RNN_STEPS, RNN_WIDTH = 1000, 64
PEX_HIDDEN = 128                  # per-example gradients: 784-128-10 over 256 examples
BA_CAMS, BA_POINTS, BA_OBS = 49, 10000, 30000
KM_N, KM_K, KM_D = 10000, 100, 16
SMALL = 8                         # cached jit call and eager add: f32[8]
COMPILE_N = 1024                  # one-op compile: x * c over f32[1024]
CONV_N, CONV_C, CONV_HW = 128, 64, 32  # conv3x3: 3x3, 64 -> 64 features, 32x32, batch 128, NCHW
LA_BATCH, LA_N, LA_BIG = 256, 64, 512  # linalg: 256 SPD 64x64 systems; one 512x512 matrix (f64)
GP_N = 2000                       # GP log marginal likelihood over 2000 1-D points (f64)
FFT_N = 1 << 20                   # FFT of 2^20 complex64 points
POOL_N, POOL_C, POOL_HW = 32, 64, 56   # max pooling: NCHW f32[32, 64, 56, 56]
POOLS = [("maxpool2", 2, 0), ("maxpool3", 3, 1)]  # name, window (k x k, stride 2), padding per side

# Column ranges of the bundle-adjustment tables (camera: rotation 3, center 3, focal 1, principal
# point 2, radial distortion 2; point: 3). Points sit in front of the cameras (z in 8..12).
BA_CAM_RANGES = [(-0.3, 0.3)] * 3 + [(-1.0, 1.0)] * 3 + [(400.0, 600.0)] + [(-5.0, 5.0)] * 2 + [(-0.05, 0.05)] * 2
BA_POINT_RANGES = [(-2.0, 2.0), (-2.0, 2.0), (8.0, 12.0)]


def splitmix64(x):
    """splitmix64 of a uint64 array (wrapping arithmetic)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def pattern(shape, lo, hi, salt=0, dtype=np.float32):
    n = int(np.prod(shape))
    u = (splitmix64(np.arange(n, dtype=np.uint64) + np.uint64(salt << 40)) >> np.uint64(11)) * 2.0**-53
    return (lo + (hi - lo) * u).astype(dtype).reshape(shape)


def columns(rows, ranges, salt):
    """A [rows, len(ranges)] float64 table whose column j is pattern(rows, *ranges[j], salt + j)."""
    return np.stack([pattern((rows,), lo, hi, salt + j, np.float64) for j, (lo, hi) in enumerate(ranges)], axis=1)


def labels_one_hot(batch, classes):
    """One-hot float32 labels of class (i * 7) % classes for example i."""
    return np.eye(classes, dtype=np.float32)[(np.arange(batch) * 7) % classes]


def mlp_data(hidden):
    """(w1, b1, w2, b2), x, y for the MLP of width `hidden` (784-hidden-10, batch 256)."""
    params = (pattern((MLP_IN, hidden), -0.05, 0.05, 1), np.zeros(hidden, np.float32),
              pattern((hidden, MLP_OUT), -0.1, 0.1, 2), np.zeros(MLP_OUT, np.float32))
    return params, pattern((MLP_BATCH, MLP_IN), -1, 1, 3), labels_one_hot(MLP_BATCH, MLP_OUT)


def conv_data():
    """x [N, C, H, W], w [C, C, 3, 3] (OIHW) and the output cotangent g [N, C, H, W]."""
    n, ch, hw = CONV_N, CONV_C, CONV_HW
    return (pattern((n, ch, hw, hw), -1, 1, 1), pattern((ch, ch, 3, 3), -0.1, 0.1, 2),
            pattern((n, ch, hw, hw), -1, 1, 3))


RESNET_N = 128                    # ResNet-18 training step: f32[128, 3, 32, 32] images, 10 classes


def resnet_images():
    return pattern((RESNET_N, 3, 32, 32), -1, 1, 1)


def resnet_labels():
    """int32 labels (i * 7) % 10 of example i."""
    return ((np.arange(RESNET_N) * 7) % 10).astype(np.int32)


def pool_data(k, pad):
    """x [N, C, H, W] and the cotangent of its k x k, stride-2 max pooling with padding `pad`."""
    n, ch, hw = POOL_N, POOL_C, POOL_HW
    out = (hw + 2 * pad - k) // 2 + 1
    return pattern((n, ch, hw, hw), -1, 1, 1), pattern((n, ch, out, out), -1, 1, 3)


def gmm_data():
    """(alphas, means, log_sigmas), x for the GMM log-likelihood."""
    params = (pattern((GMM_K,), -1, 1, 1), pattern((GMM_K, GMM_D), -2, 2, 2), pattern((GMM_K, GMM_D), -0.3, 0.3, 3))
    return params, pattern((GMM_N, GMM_D), -2, 2, 4)


def rnn_data():
    """(w, u, b), h0, xs for the RNN scan."""
    params = (pattern((RNN_WIDTH, RNN_WIDTH), -0.2, 0.2, 1), pattern((RNN_WIDTH, RNN_WIDTH), -0.2, 0.2, 2),
              np.zeros(RNN_WIDTH, np.float32))
    return params, np.zeros(RNN_WIDTH, np.float32), pattern((RNN_STEPS, RNN_WIDTH), -1, 1, 3)


def ba_data():
    """cams f64[49,11], points f64[10000,3], weights f64[30000], feats f64[30000,2], cam and point
    indices int32[30000] (observation i sees camera i % 49 and point i % 10000)."""
    cams = columns(BA_CAMS, BA_CAM_RANGES, 10)
    points = columns(BA_POINTS, BA_POINT_RANGES, 30)
    weights = pattern((BA_OBS,), 0.5, 1.5, 40, np.float64)
    feats = columns(BA_OBS, [(-1.0, 1.0)] * 2, 41)
    obs = np.arange(BA_OBS, dtype=np.int32)
    return cams, points, weights, feats, obs % BA_CAMS, obs % BA_POINTS


def kmeans_data():
    """points f64[10000,16]; centroids f64[100,16] = every 100th point, so that every centroid is the
    nearest one of at least one point (the Hessian diagonal has no zero)."""
    points = pattern((KM_N, KM_D), -1, 1, 1, np.float64)
    return points, points[:: KM_N // KM_K].copy()


def linalg_data():
    """spd f64[256,64,64] (b b^T + 64 I with b = pattern(-1, 1, salt 11)), rhs f64[256,64,1], a general
    f64[512,512] and its symmetric part (a + a^T) / 2."""
    b = pattern((LA_BATCH, LA_N, LA_N), -1, 1, 11, np.float64)
    spd = b @ np.swapaxes(b, -1, -2) + LA_N * np.eye(LA_N)
    a = pattern((LA_BIG, LA_BIG), -1, 1, 13, np.float64)
    return spd, pattern((LA_BATCH, LA_N, 1), -1, 1, 12, np.float64), a, (a + a.T) * 0.5


def gp_data():
    """x, y f64[2000] (x_i = 10 frac(0.618... i), y_i = sin x_i + 0.1 sin 37 i) and the
    log-hyperparameters theta f64[3] = (log signal sd, log length scale, log noise sd)."""
    i = np.arange(GP_N, dtype=np.float64)
    x = 10.0 * np.fmod(i * 0.618033988749895, 1.0)
    return x, np.sin(x) + 0.1 * np.sin(37.0 * i), np.array([0.0, 0.0, -2.0])


def fft_data():
    """complex64[2^20]: real part pattern(-1, 1, salt 21), imaginary part pattern(-1, 1, salt 22)."""
    return (pattern((FFT_N,), -1, 1, 21) + 1j * pattern((FFT_N,), -1, 1, 22)).astype(np.complex64)


def ba_residual(xp, p, feat):
    """The weighted reprojection error (2 values) of one bundle-adjustment observation, in the array
    module xp (jax.numpy or torch); p = camera (Rodrigues rotation 3, center 3, focal 1, principal
    point 2, radial distortion 2), point 3, weight 1. Written component by component, like the
    Fluxion side (bench/peer_models.h) and the plain loop (bench/baseline_peers.cpp)."""
    r0, r1, r2 = p[0], p[1], p[2]
    x0, x1, x2 = p[11] - p[3], p[12] - p[4], p[13] - p[5]
    theta = xp.sqrt(r0 * r0 + r1 * r1 + r2 * r2)
    k0, k1, k2 = r0 / theta, r1 / theta, r2 / theta
    cos, sin = xp.cos(theta), xp.sin(theta)
    kx = (k0 * x0 + k1 * x1 + k2 * x2) * (1.0 - cos)
    y0 = x0 * cos + (k1 * x2 - k2 * x1) * sin + k0 * kx
    y1 = x1 * cos + (k2 * x0 - k0 * x2) * sin + k1 * kx
    y2 = x2 * cos + (k0 * x1 - k1 * x0) * sin + k2 * kx
    u, v = y0 / y2, y1 / y2
    rsq = u * u + v * v
    scale = (1.0 + p[9] * rsq + p[10] * rsq * rsq) * p[6]
    return p[14] * (xp.stack([u * scale + p[7], v * scale + p[8]]) - feat)


class Recorder:
    """Best-of-N wall-clock timing; one JSON line per workload on stdout."""

    def __init__(self, side, repeats):
        self.side, self.repeats = side, repeats

    def best(self, fn, inner=1):
        """Best time of `repeats` runs of `inner` calls of fn (each call blocks until its result is
        ready), in seconds per call."""
        best = float("inf")
        for _ in range(self.repeats):
            t = time.perf_counter()
            for _ in range(inner):
                fn()
            best = min(best, (time.perf_counter() - t) / inner)
        return best

    def emit(self, workload, seconds, check, unit="ms", per=1, note=""):
        """Records `seconds` (divided by `per`, e.g. the scan's steps) in `unit` (ms or us) and a
        result value of the workload (`check`, None where there is none) that the other sides must
        reproduce."""
        scale = 1e3 if unit == "ms" else 1e6
        rec = {"workload": workload, "side": self.side, "time": seconds / per * scale, "unit": unit,
               "check": None if check is None else float(check)}
        if note:
            rec["note"] = note
        print(json.dumps(rec), flush=True)

    def skip(self, workload, reason):
        print(json.dumps({"workload": workload, "side": self.side, "skipped": reason}), flush=True)


def repeats_from_argv(default=10):
    return int(sys.argv[1]) if len(sys.argv) > 1 else default


def abs_sum(*arrays):
    """sum of |x| over every array (the modulus for complex ones), in float64 (the check value of
    multi-output workloads)."""
    def magnitudes(a):
        a = np.asarray(a)
        return np.abs(a).astype(np.float64) if np.iscomplexobj(a) else np.abs(a.astype(np.float64))
    return sum(float(magnitudes(a).sum()) for a in arrays)
