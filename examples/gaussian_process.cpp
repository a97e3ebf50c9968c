// Gaussian-process regression in Fluxion: the log marginal likelihood through a Cholesky factor
// and triangular solves, its gradient with respect to the (log) hyperparameters by fx::grad, a
// few steps of gradient ascent, and the posterior mean -- each checked against a plain Eigen
// implementation of the textbook formulas (Rasmussen & Williams, eqs. 2.25, 2.30 and 5.9):
//   K = s^2 exp(-|x_i - x_j|^2 / (2 l^2)) + sigma^2 I,   alpha = K^-1 y
//   log p(y) = -1/2 y^T alpha - sum(log diag L) - n/2 log 2 pi
//   d log p / d theta = 1/2 tr((alpha alpha^T - K^-1) dK/dtheta)
// The program exits non-zero if Fluxion and Eigen disagree or the likelihood does not improve
// (examples/meson.build runs it as a test).
#include <fluxion.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstdio>

#include "api/interop_eigen.h"

namespace fx = fluxion;
namespace la = fx::linalg;

namespace {

constexpr int kN = 60;

// theta = (log s, log l, log sigma).
fx::Array kernel(const fx::Array& theta, const fx::Array& x) {
  fx::Array d = fx::expand_dims(x, 1) - fx::expand_dims(x, 0);
  fx::Array s2 = fx::exp(2.0 * theta[0]), l2 = fx::exp(2.0 * theta[1]), noise = fx::exp(2.0 * theta[2]);
  return s2 * fx::exp(-0.5 * d * d / l2) + noise * fx::eye(x.shape()[0], fx::float64);
}

fx::Array log_marginal_likelihood(const fx::Array& theta, const fx::Array& x, const fx::Array& y) {
  fx::Array l = la::cholesky(kernel(theta, x));
  fx::Array z = la::triangular_solve(l, y);  // L z = y, so y^T K^-1 y = |z|^2
  fx::Array log_diag = fx::log(fx::sum(l * fx::eye(kN, fx::float64), {1}));
  return -0.5 * fx::sum(z * z) - fx::sum(log_diag) - 0.5 * kN * std::log(2 * M_PI);
}

// The plain Eigen version: value and gradient by the closed forms.
struct EigenGp {
  Eigen::VectorXd x, y;
  double value(const Eigen::Vector3d& t, Eigen::Vector3d* grad) const {
    const double s2 = std::exp(2 * t[0]), l2 = std::exp(2 * t[1]), noise = std::exp(2 * t[2]);
    Eigen::MatrixXd sq(kN, kN), k(kN, kN);
    for (int i = 0; i < kN; ++i)
      for (int j = 0; j < kN; ++j) sq(i, j) = (x[i] - x[j]) * (x[i] - x[j]);
    Eigen::MatrixXd e = (-0.5 * sq / l2).array().exp();
    k = s2 * e + noise * Eigen::MatrixXd::Identity(kN, kN);
    Eigen::LLT<Eigen::MatrixXd> llt(k);
    Eigen::VectorXd alpha = llt.solve(y);
    Eigen::MatrixXd l = llt.matrixL();
    const double logdet_half = l.diagonal().array().log().sum();
    if (grad) {
      Eigen::MatrixXd w = alpha * alpha.transpose() - llt.solve(Eigen::MatrixXd::Identity(kN, kN));
      const Eigen::MatrixXd dk[3] = {2 * s2 * e, s2 * e.cwiseProduct(sq) / l2, 2 * noise * Eigen::MatrixXd::Identity(kN, kN)};
      for (int p = 0; p < 3; ++p) (*grad)[p] = 0.5 * w.cwiseProduct(dk[p]).sum();
    }
    return -0.5 * y.dot(alpha) - logdet_half - 0.5 * kN * std::log(2 * M_PI);
  }
  Eigen::VectorXd posterior_mean(const Eigen::Vector3d& t, const Eigen::VectorXd& xs) const {
    const double s2 = std::exp(2 * t[0]), l2 = std::exp(2 * t[1]), noise = std::exp(2 * t[2]);
    auto cov = [&](const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
      Eigen::MatrixXd c(a.size(), b.size());
      for (int i = 0; i < a.size(); ++i)
        for (int j = 0; j < b.size(); ++j) c(i, j) = s2 * std::exp(-0.5 * (a[i] - b[j]) * (a[i] - b[j]) / l2);
      return c;
    };
    Eigen::MatrixXd k = cov(x, x) + noise * Eigen::MatrixXd::Identity(kN, kN);
    return cov(xs, x) * k.llt().solve(y);
  }
};

}  // namespace

int main() {
  // Noisy samples of sin(3x) + x/2 at scattered points of [0, 5] (a fixed, reproducible pattern).
  Eigen::VectorXd xe(kN), ye(kN);
  for (int i = 0; i < kN; ++i) {
    xe[i] = 5.0 * std::fmod(i * 0.618033988749895, 1.0);
    ye[i] = std::sin(3 * xe[i]) + 0.5 * xe[i] + 0.05 * std::sin(97.0 * i);
  }
  const EigenGp reference{xe, ye};
  const fx::Array x = fx::from_eigen(Eigen::VectorXd(xe)), y = fx::from_eigen(Eigen::VectorXd(ye));  // no copies

  auto value_and_grad = fx::jit(fx::value_and_grad([&](const fx::Array& t) { return log_marginal_likelihood(t, x, y); }));
  fx::Array theta = fx::array({0.0, 0.0, -1.0});
  double worst = 0, first = 0, last = 0;
  for (int step = 0; step <= 200; ++step) {
    auto [value, grad] = value_and_grad(theta);
    Eigen::Vector3d t = fx::as_eigen<double>(theta), g_ref;
    const double v_ref = reference.value(t, &g_ref);
    const double diff = std::max(std::abs(value.item<double>() - v_ref), (fx::as_eigen<double>(grad) - g_ref).cwiseAbs().maxCoeff());
    worst = std::max(worst, diff / std::max(1.0, std::abs(v_ref)));
    if (step == 0) first = v_ref;
    last = v_ref;
    if (step % 50 == 0)
      std::printf("step %3d  log p(y) = %10.5f (Eigen %10.5f)  theta = (%.4f, %.4f, %.4f)\n", step, value.item<double>(), v_ref,
                  t[0], t[1], t[2]);
    theta = theta + 0.003 * grad;  // gradient ascent on the log marginal likelihood
  }
  // The posterior mean at new points: K(x*, x) K^-1 y through the same Cholesky factor.
  const fx::Array xs = fx::linspace(0.25, 4.75, 10, fx::float64);
  fx::Array k = kernel(theta, x), l = la::cholesky(k);
  fx::Array alpha = la::triangular_solve(l, la::triangular_solve(l, y), {.transpose_a = true});
  fx::Array d = fx::expand_dims(xs, 1) - fx::expand_dims(x, 0);
  fx::Array mean = fx::matmul(fx::exp(2.0 * theta[0]) * fx::exp(-0.5 * d * d / fx::exp(2.0 * theta[1])), alpha);
  const Eigen::VectorXd mean_ref = reference.posterior_mean(fx::as_eigen<double>(theta), fx::as_eigen<double>(xs));
  const double mean_diff = (fx::as_eigen<double>(mean) - mean_ref).cwiseAbs().maxCoeff();
  double fit = 0;
  for (int i = 0; i < 10; ++i) fit = std::max(fit, std::abs(mean_ref[i] - (std::sin(3 * 0.25 + 3 * 0.5 * i) + 0.5 * (0.25 + 0.5 * i))));
  std::printf("log p(y): %.5f -> %.5f; Fluxion vs Eigen: value/gradient %.2e (relative), posterior mean %.2e; |mean - truth| %.3f\n",
              first, last, worst, mean_diff, fit);
  const bool ok = worst < 1e-9 && mean_diff < 1e-9 && last > first + 1.0 && fit < 0.2;
  if (!ok) std::printf("FAILED\n");
  return ok ? 0 : 1;
}
