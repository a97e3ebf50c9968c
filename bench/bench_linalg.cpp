// fx::linalg's decompositions against the libraries called directly on the same matrices, in the
// same run (issue 15's linear-algebra benchmarks): batched Cholesky and Cholesky + solve of 256 SPD
// 64x64 matrices, lu, qr, eigh and svd of one 512x512 matrix, and a GP log-likelihood's gradient at
// n = 2000 (float64). Fluxion runs each through fx::jit (a library call of its kernel,
// lowering/lower_library.cpp). Two baselines: Eigen 3.4 (LLT, PartialPivLU, HouseholderQR,
// SelfAdjointEigenSolver, BDCSVD), mapping the arrays' bytes as row-major matrices, and LAPACK
// through LAPACKE's row-major interface (potrf/potrs/potri, geqrf + orgqr, syevd, gesdd) over the
// OpenBLAS Fluxion links; both write their factors to preallocated memory as Fluxion's kernels do.
// This file is compiled -O3 -march=native, as an Eigen user builds; Fluxion runs Eigen built for the
// host's x86-64 level (prims/linalg_eigen.cpp) or OpenBLAS's LAPACK for large matrices
// (prims/linalg_lapack.cpp). Ratio = baseline time / Fluxion time (above 1: Fluxion faster); the
// library Fluxion calls at that size is marked with '*'.
//
// `sweep` times Fluxion's two kernels on the same single matrices from 32 to 1024 (and 2048 when one op
// is named), eager calls, FLUXION_LINALG-style forcing through set_linalg_kernels: the crossovers
// prims/linalg.cpp uses.
//
// Run: build/bench/fluxion_bench_linalg [repeats] [sweep [op] | gp | eigh] (sweep: only the sweep, of
// the ops whose name starts with `op` if given; gp: only the GP row; eigh: only the eigh row).
#include <fluxion.h>

#include <lapacke.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string_view>

#include "api/interop_eigen.h"
#include "bench/timing.h"
#include "prims/linalg.h"

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

// lapack_ms < 0: no LAPACK baseline (Fluxion runs Eigen there). `on_lapack`: what Fluxion ran.
void row(const char* name, double fluxion_ms, double eigen_ms, double lapack_ms = -1, bool on_lapack = false) {
  std::printf("%-34s fluxion %9.3f ms   eigen%s %9.3f ms (%5.2fx)", name, fluxion_ms, on_lapack ? " " : "*", eigen_ms,
              eigen_ms / fluxion_ms);
  if (lapack_ms >= 0) std::printf("   lapack%s %9.3f ms (%5.2fx)", on_lapack ? "*" : " ", lapack_ms, lapack_ms / fluxion_ms);
  std::printf("\n");
}

const double* cptr(const fx::Array& a) { return static_cast<const double*>(a.data()); }

// The GP row: the log marginal likelihood of n 1-D points and its gradient w.r.t. three
// log-hyperparameters -- Fluxion: jit(value_and_grad) through cholesky and triangular_solve;
// the baselines: the closed forms (one factorization, K^-1 by the factor, 1/2 tr((alpha alpha^T -
// K^-1) dK)), with Eigen's LLT or LAPACK's potrf/potrs.
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
  // The closed forms from K's factor: `factor` factors k and returns alpha = K^-1 y and K^-1 (in
  // kinv) and log det L; the rest is shared by both baselines.
  auto closed_form = [&](const std::function<double(Eigen::MatrixXd& k, Eigen::VectorXd& alpha, Eigen::MatrixXd& kinv)>& factor) {
    const double s2 = 1.0, l2 = 1.0, noise = std::exp(-4.0);
    Eigen::MatrixXd sq = (xe.replicate(1, n) - xe.transpose().replicate(n, 1)).array().square();
    Eigen::MatrixXd e = (-0.5 * sq / l2).array().exp();
    Eigen::MatrixXd k = s2 * e + noise * Eigen::MatrixXd::Identity(n, n), kinv;
    Eigen::VectorXd alpha;
    const double logdet_l = factor(k, alpha, kinv);
    Eigen::MatrixXd w = alpha * alpha.transpose() - kinv;
    const double value = -0.5 * ye.dot(alpha) - logdet_l;
    const double g0 = w.cwiseProduct(s2 * e).sum(), g1 = 0.5 * w.cwiseProduct(s2 * e.cwiseProduct(sq) / l2).sum();
    const double g2 = noise * w.trace();
    sink += value + g0 + g1 + g2;
  };
  const double eigen_ms = best_ms([&] {
    closed_form([&](Eigen::MatrixXd& k, Eigen::VectorXd& alpha, Eigen::MatrixXd& kinv) {
      Eigen::LLT<Eigen::MatrixXd> llt(k);
      alpha = llt.solve(ye);
      kinv = llt.solve(Eigen::MatrixXd::Identity(n, n));
      return Eigen::MatrixXd(llt.matrixL()).diagonal().array().log().sum();
    });
  });
  const double lapack_ms = best_ms([&] {  // potrf, then potrs for alpha and for K^-1 (as llt.solve)
    closed_form([&](Eigen::MatrixXd& k, Eigen::VectorXd& alpha, Eigen::MatrixXd& kinv) {
      LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, k.data(), n);
      alpha = ye;
      kinv = Eigen::MatrixXd::Identity(n, n);
      LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', n, 1, k.data(), n, alpha.data(), n);
      LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', n, n, k.data(), n, kinv.data(), n);
      return k.diagonal().array().log().sum();
    });
  });
  const double fluxion_ms = best_ms([&] { std::get<1>(vg(theta)).block_until_ready(); });
  row("GP log-lik value_and_grad n=2000", fluxion_ms, eigen_ms, lapack_ms, true);
  if (sink == 0.123) std::printf("%g\n", sink);  // keeps the baseline's work observable
}

// Whether Fluxion's kernel for a float64 [m, n] matrix of qr (0), eigh (1) or svd (2) is LAPACK's.
bool on_lapack(int64_t m, int64_t n, int which) {
  const fluxion::linalg_rules::LinalgOp ops[] = {fluxion::linalg_rules::LinalgOp::qr,
                                                 fluxion::linalg_rules::LinalgOp::eigh,
                                                 fluxion::linalg_rules::LinalgOp::svd};
  fluxion::linalg_rules::LinalgBlock b{};
  b.op = ops[which];
  b.m = m;
  b.n = n;
  return fluxion::linalg_rules::uses_lapack(b);
}

// Eigen's kernel against LAPACK's inside Fluxion, one eager call on one n x n float64 matrix each.
void sweep(std::string_view only) {
  using fluxion::linalg_rules::LinalgKernels;
  std::printf("\nsweep (OpenBLAS core %s): eager, one matrix; ratio = eigen / lapack\n",
              fluxion::linalg_rules::lapack_core_name());
  const std::pair<const char*, std::function<fx::Array(const fx::Array& spd, const fx::Array& l, const fx::Array& g)>> ops[] = {
      {"cholesky", [](const fx::Array& spd, const fx::Array&, const fx::Array&) { return la::cholesky(spd); }},
      {"triangular_solve (n rhs)", [](const fx::Array&, const fx::Array& l, const fx::Array& g) { return la::triangular_solve(l, g); }},
      {"triangular_solve (1 rhs)",
       [](const fx::Array&, const fx::Array& l, const fx::Array& g) { return la::triangular_solve(l, g[{fx::colon, fx::Slice(0, 1)}]); }},
      {"qr", [](const fx::Array&, const fx::Array&, const fx::Array& g) { return la::qr(g).first; }},
      {"eigh", [](const fx::Array& spd, const fx::Array&, const fx::Array&) { return la::eigh(spd).first; }},
      {"svd", [](const fx::Array&, const fx::Array&, const fx::Array& g) { return std::get<0>(la::svd(g)); }},
  };
  for (int n : {32, 64, 128, 256, 512, 1024, 2048}) {
    if (n == 2048 && only.empty()) break;  // 2048 only for a chosen op (eigh and svd take seconds there)
    fx::Array g = fx::random::normal(fx::random::key(7), {n, n}, fx::float64);
    fx::Array spd = fx::matmul(g, fx::transpose(g)) + fx::eye(n, fx::float64) * double(n);
    fx::Array l = la::cholesky(spd);
    for (const auto& [name, f] : ops) {
      if (!only.empty() && std::string_view(name).substr(0, only.size()) != only) continue;
      double ms[2];
      for (int k = 0; k < 2; ++k) {
        fluxion::linalg_rules::set_linalg_kernels(k == 0 ? LinalgKernels::eigen : LinalgKernels::lapack);
        ms[k] = best_ms([&] { f(spd, l, g).block_until_ready(); });
      }
      std::printf("  %-26s n=%5d  eigen %9.3f ms  lapack %9.3f ms  ratio %5.2fx\n", name, n, ms[0], ms[1], ms[0] / ms[1]);
    }
    fluxion::linalg_rules::set_linalg_kernels(LinalgKernels::by_size);
  }
}

// eigh of one symmetric 512 x 512 float64 matrix: Fluxion (jit), Eigen, and LAPACKE's dsyevd called
// directly ("fluxion_bench_linalg 5 eigh" runs this row alone, for A/B pauses).
void eigh_row(const fx::Array& sym, Mat& out, Eigen::VectorXd& vec) {
  const int big = int(sym.shape()[0]);
  auto eigh = fx::jit([](const fx::Array& m) { return la::eigh(m); });
  row("eigh 512x512 (w and v)", best_ms([&] { eigh(sym).first.block_until_ready(); }), best_ms([&] {
        Eigen::SelfAdjointEigenSolver<Mat> f(fx::as_eigen<double>(sym));
        out = f.eigenvectors();
        vec = f.eigenvalues();
      }), best_ms([&] {
        out = fx::as_eigen<double>(sym);
        LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'L', big, out.data(), big, vec.data());
      }), on_lapack(big, big, 1));
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
  Mat out(big, big), out2(big, big), work(big, big);
  Eigen::VectorXd vec(big);
  std::vector<double> batch_out(size_t(batch * n * n));

  if (argc > 2 && std::string_view(argv[2]) == "sweep") return sweep(argc > 3 ? argv[3] : ""), 0;
  if (argc > 2 && std::string_view(argv[2]) == "gp") return gp_row(2000), 0;
  if (argc > 2 && std::string_view(argv[2]) == "eigh") return eigh_row(sym, out, vec), 0;
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
      }), best_ms([&] {
        out = fx::as_eigen<double>(a);
        LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, big, big, out.data(), big, vec.data());
        out2 = out.triangularView<Eigen::Upper>();
        LAPACKE_dorgqr(LAPACK_ROW_MAJOR, big, big, big, out.data(), big, vec.data());
      }), on_lapack(big, big, 0));
  eigh_row(sym, out, vec);
  auto svd = fx::jit([](const fx::Array& m) { return la::svd(m); });
  row("svd 512x512 (u, s, vt)", best_ms([&] { std::get<1>(svd(a)).block_until_ready(); }), best_ms([&] {
        Eigen::BDCSVD<Mat> f(fx::as_eigen<double>(a), Eigen::ComputeThinU | Eigen::ComputeThinV);
        out = f.matrixU();
        vec = f.singularValues();
        out2 = f.matrixV().transpose();
      }), best_ms([&] {
        work = fx::as_eigen<double>(a);
        LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', big, big, work.data(), big, vec.data(), out.data(), big, out2.data(), big);
      }), on_lapack(big, big, 2));
  gp_row(2000);
  return 0;
}
