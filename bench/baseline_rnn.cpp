#include "baseline_rnn.h"

#include <Eigen/Core>
#include <cmath>
#include <utility>
#include <vector>

namespace fluxion_bench {

double rnn_hand_loop(const float* w, const float* u, const float* b, const float* xs, int64_t steps, int64_t width) {
  std::vector<float> h(static_cast<size_t>(width), 0.f), next(static_cast<size_t>(width));
  double ysum = 0;
  for (int64_t t = 0; t < steps; ++t) {
    const float* x = xs + t * width;
    for (int64_t i = 0; i < width; ++i) {
      float a = b[i];
      for (int64_t j = 0; j < width; ++j) a += w[i * width + j] * h[size_t(j)] + u[i * width + j] * x[j];
      next[size_t(i)] = std::tanh(a);
      ysum += next[size_t(i)];
    }
    std::swap(h, next);
  }
  double s = 0;
  for (float v : h) s += v;
  return s + ysum / double(steps * width);
}

double rnn_hand_eigen(const float* w, const float* u, const float* b, const float* xs, int64_t steps, int64_t width) {
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const Mat> W(w, width, width), U(u, width, width);
  Eigen::Map<const Eigen::VectorXf> B(b, width);
  Eigen::VectorXf h = Eigen::VectorXf::Zero(width), pre(width);
  double ysum = 0;
  for (int64_t t = 0; t < steps; ++t) {
    pre.noalias() = W * h;
    pre.noalias() += U * Eigen::Map<const Eigen::VectorXf>(xs + t * width, width);
    h = (pre + B).array().tanh().matrix();
    ysum += double(h.sum());
  }
  return double(h.sum()) + ysum / double(steps * width);
}

}  // namespace fluxion_bench
