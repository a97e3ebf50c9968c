// fx::linalg's decompositions against Eigen called directly on the same matrices, in the same run
// (issue 15's linear-algebra benchmarks): batched Cholesky and Cholesky + solve of 256 SPD 64x64
// matrices, and lu, qr, eigh and svd of one 512x512 matrix (float64). Fluxion runs each through
// fx::jit (a library call of its kernel, lowering/lower_library.cpp); the baseline maps the array's
// bytes as row-major Eigen matrices and runs the same Eigen 3.4 decomposition (LLT, PartialPivLU,
// HouseholderQR, SelfAdjointEigenSolver, BDCSVD), writing its factors to preallocated memory as
// Fluxion's kernels do. This file is compiled -O3 -march=native, as an Eigen user builds; Fluxion
// runs Eigen built for the host's x86-64 level (prims/linalg_eigen.cpp), so both sides get the
// CPU's widest vectors. Ratio = Eigen time / Fluxion time (above 1: Fluxion faster).
//
// Run: build/bench/fluxion_bench_linalg [repeats].
#include <fluxion.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "api/interop_eigen.h"
#include "bench/timing.h"

namespace fx = fluxion;
namespace la = fx::linalg;
using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CMap = Eigen::Map<const Mat>;

namespace {

int g_repeats = 5;

double best_ms(const std::function<void()>& f) {
  f();  // warm-up (and the jit's compile)
  return fluxion_bench::best_ms(f, g_repeats);
}

void row(const char* name, double fluxion_ms, double eigen_ms) {
  std::printf("%-34s fluxion %9.3f ms   eigen %9.3f ms   ratio %5.2fx\n", name, fluxion_ms, eigen_ms, eigen_ms / fluxion_ms);
}

const double* cptr(const fx::Array& a) { return static_cast<const double*>(a.data()); }

// The GP row: the log marginal likelihood of n 1-D points and its gradient w.r.t. three
// log-hyperparameters -- Fluxion: jit(value_and_grad) through cholesky and triangular_solve;
// Eigen: the closed forms (LLT, K^-1 by the factor, 1/2 tr((alpha alpha^T - K^-1) dK)).
void gp_row(int n) {
  std::vector<double> xs(static_cast<size_t>(n)), ys(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    xs[size_t(i)] = 10.0 * std::fmod(i * 0.618033988749895, 1.0);
    ys[size_t(i)] = std::sin(xs[size_t(i)]) + 0.1 * std::sin(37.0 * i);
  }
  fx::Array x = fx::array(xs), y = fx::array(ys), theta = fx::array({0.0, 0.0, -2.0});
  auto loglik = [&](const fx::Array& t) {
    fx::Array d = fx::expand_dims(x, 1) - fx::expand_dims(x, 0);
    fx::Array k = fx::exp(2.0 * t[0]) * fx::exp(-0.5 * d * d / fx::exp(2.0 * t[1])) + fx::exp(2.0 * t[2]) * fx::eye(n, fx::float64);
    fx::Array l = la::cholesky(k);
    fx::Array z = la::triangular_solve(l, y);
    return -0.5 * fx::sum(z * z) - fx::sum(fx::log(fx::sum(l * fx::eye(n, fx::float64), {1})));
  };
  auto vg = fx::jit(fx::value_and_grad(loglik));
  Eigen::Map<const Eigen::VectorXd> xe(xs.data(), n), ye(ys.data(), n);
  double sink = 0;
  const double eigen_ms = best_ms([&] {
    const double s2 = 1.0, l2 = 1.0, noise = std::exp(-4.0);
    Eigen::MatrixXd sq = (xe.replicate(1, n) - xe.transpose().replicate(n, 1)).array().square();
    Eigen::MatrixXd e = (-0.5 * sq / l2).array().exp();
    Eigen::MatrixXd k = s2 * e + noise * Eigen::MatrixXd::Identity(n, n);
    Eigen::LLT<Eigen::MatrixXd> llt(k);
    Eigen::VectorXd alpha = llt.solve(ye);
    Eigen::MatrixXd w = alpha * alpha.transpose() - llt.solve(Eigen::MatrixXd::Identity(n, n));
    const double value = -0.5 * ye.dot(alpha) - Eigen::MatrixXd(llt.matrixL()).diagonal().array().log().sum();
    const double g0 = w.cwiseProduct(s2 * e).sum(), g1 = 0.5 * w.cwiseProduct(s2 * e.cwiseProduct(sq) / l2).sum();
    const double g2 = noise * w.trace();
    sink += value + g0 + g1 + g2;
  });
  const double fluxion_ms = best_ms([&] { std::get<1>(vg(theta)).block_until_ready(); });
  row("GP log-lik value_and_grad n=2000", fluxion_ms, eigen_ms);
  if (sink == 0.123) std::printf("%g\n", sink);  // keeps the baseline's work observable
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_repeats = std::max(1, std::atoi(argv[1]));
  // 256 SPD 64x64 matrices and right-hand sides; one 512x512 general and one symmetric matrix.
  const int batch = 256, n = 64, big = 512;
  fx::Array x = fx::random::normal(fx::random::key(1), {batch, n, n}, fx::float64);
  fx::Array spd = fx::matmul(x, fx::swapaxes(x, -1, -2)) + fx::eye(n, fx::float64) * double(n);
  fx::Array rhs = fx::random::normal(fx::random::key(2), {batch, n, 1}, fx::float64);
  fx::Array a = fx::random::normal(fx::random::key(3), {big, big}, fx::float64);
  fx::Array sym = (a + fx::transpose(a)) * 0.5;
  Mat out(big, big), out2(big, big);
  Eigen::VectorXd vec(big);
  std::vector<double> batch_out(size_t(batch * n * n));

  auto chol = fx::jit([](const fx::Array& m) { return la::cholesky(m); });
  row("cholesky 256 x 64x64", best_ms([&] { chol(spd).block_until_ready(); }), best_ms([&] {
        for (int b = 0; b < batch; ++b) {
          Eigen::LLT<Mat> llt(CMap(cptr(spd) + b * n * n, n, n));
          Eigen::Map<Mat>(batch_out.data() + b * n * n, n, n) = llt.matrixL().toDenseMatrix();
        }
      }));
  auto chol_solve = fx::jit([](const fx::Array& m, const fx::Array& r) {
    fx::Array l = la::cholesky(m);
    return la::triangular_solve(l, la::triangular_solve(l, r), {.transpose_a = true});
  });
  row("cholesky + solve 256 x 64x64", best_ms([&] { chol_solve(spd, rhs).block_until_ready(); }), best_ms([&] {
        for (int b = 0; b < batch; ++b) {
          Eigen::LLT<Mat> llt(CMap(cptr(spd) + b * n * n, n, n));
          Eigen::Map<Eigen::VectorXd>(batch_out.data() + b * n, n) = llt.solve(Eigen::Map<const Eigen::VectorXd>(cptr(rhs) + b * n, n));
        }
      }));
  auto solve = fx::jit([](const fx::Array& m, const fx::Array& r) { return la::solve(m, r); });
  row("solve (lu) 256 x 64x64", best_ms([&] { solve(spd, rhs).block_until_ready(); }), best_ms([&] {
        for (int b = 0; b < batch; ++b) {
          Eigen::PartialPivLU<Mat> lu(CMap(cptr(spd) + b * n * n, n, n));
          Eigen::Map<Eigen::VectorXd>(batch_out.data() + b * n, n) = lu.solve(Eigen::Map<const Eigen::VectorXd>(cptr(rhs) + b * n, n));
        }
      }));
  auto lu = fx::jit([](const fx::Array& m) { return std::get<0>(la::lu(m)); });
  row("lu 512x512", best_ms([&] { lu(a).block_until_ready(); }), best_ms([&] {
        Eigen::PartialPivLU<Mat> f(fx::as_eigen<double>(a));
        out = f.matrixLU();
      }));
  auto qr = fx::jit([](const fx::Array& m) { return la::qr(m); });
  row("qr 512x512 (reduced, q and r)", best_ms([&] { qr(a).first.block_until_ready(); }), best_ms([&] {
        Eigen::HouseholderQR<Mat> f(fx::as_eigen<double>(a));
        out = f.householderQ() * Mat::Identity(big, big);
        out2 = f.matrixQR().triangularView<Eigen::Upper>();
      }));
  auto eigh = fx::jit([](const fx::Array& m) { return la::eigh(m); });
  row("eigh 512x512 (w and v)", best_ms([&] { eigh(sym).first.block_until_ready(); }), best_ms([&] {
        Eigen::SelfAdjointEigenSolver<Mat> f(fx::as_eigen<double>(sym));
        out = f.eigenvectors();
        vec = f.eigenvalues();
      }));
  auto svd = fx::jit([](const fx::Array& m) { return la::svd(m); });
  row("svd 512x512 (u, s, vt)", best_ms([&] { std::get<1>(svd(a)).block_until_ready(); }), best_ms([&] {
        Eigen::BDCSVD<Mat> f(fx::as_eigen<double>(a), Eigen::ComputeThinU | Eigen::ComputeThinV);
        out = f.matrixU();
        vec = f.singularValues();
        out2 = f.matrixV().transpose();
      }));
  gp_row(2000);
  return 0;
}
