// The inputs of the peer table (bench/bench_peers.cpp): the problem sizes and the deterministic data
// of bench/peers/common.py, bit for bit, so that Fluxion, JAX and PyTorch results can be compared.
// Element i (row-major) of pattern(shape, lo, hi, salt) is lo + (hi - lo) * u with
//   u = (splitmix64(i + salt * 2^40) >> 11) * 2^-53  in [0, 1),
// computed in double and rounded to the array's dtype.
#pragma once
#include <fluxion.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "models.h"

namespace bench::peers {

namespace fx = fluxion;

constexpr int64_t kElementwise = int64_t(16) << 20, kRows = 4096;
constexpr int64_t kMlpBatch = 256, kMlpIn = 784, kMlpHidden = 512, kMlpOut = 10, kPexHidden = 128;
constexpr int64_t kGmmN = 1000, kGmmK = 100, kGmmD = 64;
constexpr int64_t kRnnSteps = 1000, kRnnWidth = 64;
constexpr int64_t kBaCams = 49, kBaPoints = 10000, kBaObs = 30000;
constexpr int64_t kKmN = 10000, kKmK = 100, kKmD = 16;
constexpr int64_t kSmall = 8, kCompileN = 1024;
constexpr int64_t kLaBatch = 256, kLaN = 64, kLaBig = 512, kGpN = 2000;
constexpr int64_t kFftN = int64_t(1) << 20;

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline double pattern_value(int64_t i, double lo, double hi, int64_t salt) {
  const double u = double(splitmix64(uint64_t(i) + (uint64_t(salt) << 40)) >> 11) * 0x1p-53;
  return lo + (hi - lo) * u;
}

template <class T>
std::vector<T> pattern_values(int64_t n, double lo, double hi, int64_t salt) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = T(pattern_value(i, lo, hi, salt));
  return v;
}

inline fx::Array pattern(const fx::Shape& shape, double lo, double hi, int64_t salt, fx::DType dtype = fx::float32) {
  const int64_t n = shape.numel();
  if (dtype == fx::float64) return fx::array(pattern_values<double>(n, lo, hi, salt), shape);
  return fx::array(pattern_values<float>(n, lo, hi, salt), shape);
}

/// A [rows, ranges.size()] float64 table whose column j is pattern(rows, ranges[j], salt + j).
inline std::vector<double> columns(int64_t rows, const std::vector<std::pair<double, double>>& ranges, int64_t salt) {
  const int64_t cols = int64_t(ranges.size());
  std::vector<double> t(size_t(rows * cols));
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) t[size_t(i * cols + j)] = pattern_value(i, ranges[size_t(j)].first, ranges[size_t(j)].second, salt + j);
  return t;
}

/// One-hot float32 labels of class (i * 7) % classes for example i.
inline fx::Array labels_one_hot(int64_t batch, int64_t classes) {
  std::vector<float> y(size_t(batch * classes), 0.f);
  for (int64_t i = 0; i < batch; ++i) y[size_t(i * classes + (i * 7) % classes)] = 1.f;
  return fx::array(y, {batch, classes});
}

struct MlpInputs {
  Mlp p;
  fx::Array x, y;
};
/// The MLP 784-hidden-10 with a batch of 256.
inline MlpInputs mlp_data(int64_t hidden) {
  return {Mlp{pattern({kMlpIn, hidden}, -0.05, 0.05, 1), fx::zeros({hidden}), pattern({hidden, kMlpOut}, -0.1, 0.1, 2),
              fx::zeros({kMlpOut})},
          pattern({kMlpBatch, kMlpIn}, -1, 1, 3), labels_one_hot(kMlpBatch, kMlpOut)};
}

inline std::pair<Gmm, fx::Array> gmm_data() {
  return {Gmm{pattern({kGmmK}, -1, 1, 1), pattern({kGmmK, kGmmD}, -2, 2, 2), pattern({kGmmK, kGmmD}, -0.3, 0.3, 3)},
          pattern({kGmmN, kGmmD}, -2, 2, 4)};
}

struct RnnInputs {
  RnnCell p;
  fx::Array h0, xs;
};
inline RnnInputs rnn_data() {
  return {RnnCell{pattern({kRnnWidth, kRnnWidth}, -0.2, 0.2, 1), pattern({kRnnWidth, kRnnWidth}, -0.2, 0.2, 2),
                  fx::zeros({kRnnWidth})},
          fx::zeros({kRnnWidth}), pattern({kRnnSteps, kRnnWidth}, -1, 1, 3)};
}

/// Bundle adjustment: 49 cameras, 10,000 points, 30,000 observations (observation i sees camera
/// i % 49 and point i % 10,000), as host vectors (the plain loop reads them) and as Arrays.
struct BaData {
  std::vector<double> cams, points, weights, feats;  // [49, 11], [10000, 3], [30000], [30000, 2]
  std::vector<int32_t> cam_idx, point_idx;          // [30000]
  BaData()
      : cams(columns(kBaCams, {{-0.3, 0.3}, {-0.3, 0.3}, {-0.3, 0.3}, {-1, 1}, {-1, 1}, {-1, 1}, {400, 600}, {-5, 5}, {-5, 5},
                               {-0.05, 0.05}, {-0.05, 0.05}},
                     10)),
        points(columns(kBaPoints, {{-2, 2}, {-2, 2}, {8, 12}}, 30)),
        weights(pattern_values<double>(kBaObs, 0.5, 1.5, 40)),
        feats(columns(kBaObs, {{-1, 1}, {-1, 1}}, 41)) {
    for (int32_t i = 0; i < int32_t(kBaObs); ++i) cam_idx.push_back(i % int32_t(kBaCams)), point_idx.push_back(i % int32_t(kBaPoints));
  }
  /// cams, points, weights, feats, cam_idx, point_idx as Arrays.
  std::vector<fx::Array> arrays() const {
    return {fx::array(cams, {kBaCams, 11}), fx::array(points, {kBaPoints, 3}), fx::array(weights, {kBaObs}),
            fx::array(feats, {kBaObs, 2}), fx::array(cam_idx, {kBaObs}), fx::array(point_idx, {kBaObs})};
  }
};

/// k-means: 10,000 points in 16 dimensions; the centroids are every 100th point, so each one is the
/// nearest centroid of at least one point (no zero on the Hessian's diagonal).
struct KmeansData {
  std::vector<double> points, centroids;
  KmeansData() : points(pattern_values<double>(kKmN * kKmD, -1, 1, 1)) {
    for (int64_t j = 0; j < kKmK; ++j)
      for (int64_t d = 0; d < kKmD; ++d) centroids.push_back(points[size_t(j * (kKmN / kKmK) * kKmD + d)]);
  }
};

/// Linear algebra (f64): spd = b b^T + 64 I over 256 matrices b = pattern(-1, 1, salt 11), right-hand
/// sides [256, 64, 1], a general 512x512 matrix and its symmetric part.
struct LinalgInputs {
  fx::Array spd, rhs, a, sym;
};
inline LinalgInputs linalg_data() {
  fx::Array b = pattern({kLaBatch, kLaN, kLaN}, -1, 1, 11, fx::float64);
  fx::Array a = pattern({kLaBig, kLaBig}, -1, 1, 13, fx::float64);
  return {fx::matmul(b, fx::swapaxes(b, -1, -2)) + fx::eye(kLaN, fx::float64) * double(kLaN),
          pattern({kLaBatch, kLaN, 1}, -1, 1, 12, fx::float64), a, (a + fx::transpose(a)) * 0.5};
}

/// The GP's 2000 1-D points: x_i = 10 frac(0.618... i), y_i = sin x_i + 0.1 sin 37 i.
inline std::pair<fx::Array, fx::Array> gp_data() {
  std::vector<double> x(static_cast<size_t>(kGpN)), y(static_cast<size_t>(kGpN));
  for (int64_t i = 0; i < kGpN; ++i) {
    x[size_t(i)] = 10.0 * std::fmod(double(i) * 0.618033988749895, 1.0);
    y[size_t(i)] = std::sin(x[size_t(i)]) + 0.1 * std::sin(37.0 * double(i));
  }
  return {fx::array(x), fx::array(y)};
}

}  // namespace bench::peers
