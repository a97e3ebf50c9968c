// fx::linalg's decompositions against Eigen called directly on the same matrices, in the same run
// (issue 15's linear-algebra benchmarks): batched Cholesky and Cholesky + solve of 256 SPD 64x64
// matrices, and lu, qr, eigh and svd of one 512x512 matrix (float64). Fluxion runs each through
// fx::jit (a library call of its kernel, lowering/lower_library.cpp); the baseline maps the array's
// bytes as row-major Eigen matrices and runs the same Eigen 3.4 decomposition (LLT, PartialPivLU,
// HouseholderQR, SelfAdjointEigenSolver, BDCSVD), writing its factors to preallocated memory as
// Fluxion's kernels do. This file is compiled with the library's own flags (no -march=native), so
// both sides run the same Eigen code. Ratio = Eigen time / Fluxion time (above 1: Fluxion faster).
//
// Run: build/bench/fluxion_bench_linalg [repeats].
#include <fluxion.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "api/interop_eigen.h"
#include "best_of.h"

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
  return 0;
}
