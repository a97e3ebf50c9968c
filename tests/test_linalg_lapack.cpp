// The two kernels behind the linear-algebra primitives (prims/linalg.h: Eigen's per-level builds and
// OpenBLAS's LAPACK, chosen by size) against each other on the same matrices: forced one way, then
// the other, in one process. Factors that are unique must agree (cholesky's L, triangular solves,
// eigenvalues, singular values, qr's r up to the signs of its rows); the rest is checked by its
// identities (q r = a, v diag(w) v^T = a, u diag(s) vt = a, orthonormal columns). The op table runs
// whole under FLUXION_LINALG=lapack too (tests/meson.build: linalg_lapack), so every transform's
// cases (JVP against finite differences, VJP, vmap, jit) see the LAPACK kernels.
#include <doctest/doctest.h>

#include <fluxion.h>

#include "prims/isa_level.h"
#include "prims/linalg.h"
#include "tests/test_helpers.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

namespace fx = fluxion;
namespace la = fx::linalg;
namespace rules = fx::linalg_rules;
using test_helpers::max_abs_diff;

namespace {

// Runs f with the kernels forced to `k`, restoring the setting after (also when f throws).
template <class F>
auto with_kernels(rules::LinalgKernels k, F&& f) {
  struct Restore {
    rules::LinalgKernels old = rules::linalg_kernels();
    ~Restore() { rules::set_linalg_kernels(old); }
  } restore;
  rules::set_linalg_kernels(k);
  return f();
}

fx::Array mT(const fx::Array& a) { return fx::swapaxes(a, -1, -2); }
// max |a^T a - I| over the batch: how far a's columns are from orthonormal.
double orthonormality_error(const fx::Array& a) {
  fx::Array gram = fx::matmul(mT(a), a);
  return max_abs_diff(gram, fx::zeros_like(gram) + fx::eye(a.shape()[a.ndim() - 1], a.dtype()));
}
double tolerance(fx::DType d) { return d == fx::float64 ? 1e-9 : 2e-3; }

}  // namespace

TEST_CASE("linalg kernels: LAPACK and Eigen agree on every op, both precisions, batched, all shapes") {
  const uint64_t lapack_before = rules::linalg_lapack_blocks_computed();
  for (fx::DType d : {fx::float64, fx::float32}) {
    const double tol = tolerance(d);
    for (auto [m, n] : {std::pair<int64_t, int64_t>{6, 6}, {7, 4}, {4, 7}, {33, 33}}) {
      CAPTURE(m);
      CAPTURE(n);
      CAPTURE(std::string(fx::dtype_name(d)));
      fx::Array a = fx::random::normal(fx::random::key(uint64_t(m * 100 + n)), {2, m, n}, d);
      fx::Array sq = fx::random::normal(fx::random::key(uint64_t(m + 1)), {2, m, m}, d);
      fx::Array spd = fx::matmul(sq, mT(sq)) + fx::eye(m, d) * double(m);
      fx::Array rhs = fx::random::normal(fx::random::key(9), {2, m, 3}, d);
      for (bool full : {false, true}) {
        auto qr_lapack = with_kernels(rules::LinalgKernels::lapack, [&] { return la::qr(a, full); });
        auto qr_eigen = with_kernels(rules::LinalgKernels::eigen, [&] { return la::qr(a, full); });
        CHECK(max_abs_diff(fx::matmul(qr_lapack.first, qr_lapack.second), a) < tol);
        CHECK(orthonormality_error(qr_lapack.first) < tol);
        CHECK(max_abs_diff(fx::abs(qr_lapack.second), fx::abs(qr_eigen.second)) < tol * 10);  // rows' signs differ
        CHECK(qr_lapack.first.shape() == qr_eigen.first.shape());
        auto [u, s, vt] = with_kernels(rules::LinalgKernels::lapack, [&] { return la::svd(a, full); });
        auto [u_e, s_e, vt_e] = with_kernels(rules::LinalgKernels::eigen, [&] { return la::svd(a, full); });
        CHECK(max_abs_diff(s, s_e) < tol);
        CHECK(u.shape() == u_e.shape());
        CHECK(vt.shape() == vt_e.shape());
        CHECK(orthonormality_error(u) < tol);
        CHECK(orthonormality_error(mT(vt)) < tol);
        const int64_t k = std::min(m, n);
        fx::Array uk = u[{fx::colon, fx::colon, fx::Slice(0, k)}], vtk = vt[{fx::colon, fx::Slice(0, k), fx::colon}];
        CHECK(max_abs_diff(fx::matmul(uk * fx::expand_dims(s, -2), vtk), a) < tol);
      }
      auto [w, v] = with_kernels(rules::LinalgKernels::lapack, [&] { return la::eigh(spd); });
      auto [w_e, v_e] = with_kernels(rules::LinalgKernels::eigen, [&] { return la::eigh(spd); });
      CHECK(max_abs_diff(w, w_e) < tol * double(m));
      CHECK(max_abs_diff(fx::matmul(spd, v), v * fx::expand_dims(w, -2)) < tol * double(m));
      CHECK(orthonormality_error(v) < tol);
      fx::Array l = with_kernels(rules::LinalgKernels::lapack, [&] { return la::cholesky(spd); });
      fx::Array l_e = with_kernels(rules::LinalgKernels::eigen, [&] { return la::cholesky(spd); });
      CHECK(max_abs_diff(l, l_e) < tol);
      CHECK(max_abs_diff(l, rules::tril(l)) == 0.0);
      // Every triangular_solve variant, on a well-conditioned triangle (the factor).
      for (bool left : {true, false})
        for (bool lower : {true, false})
          for (bool trans : {false, true})
            for (bool unit : {false, true}) {
              fx::Array t = lower ? l : mT(l);
              fx::Array b = left ? rhs : mT(rhs);
              la::Triangular o{.left_side = left, .lower = lower, .transpose_a = trans, .unit_diagonal = unit};
              fx::Array x = with_kernels(rules::LinalgKernels::lapack, [&] { return la::triangular_solve(t, b, o); });
              fx::Array x_e = with_kernels(rules::LinalgKernels::eigen, [&] { return la::triangular_solve(t, b, o); });
              CHECK(max_abs_diff(x, x_e) < tol);
            }
    }
  }
  CHECK(rules::linalg_lapack_blocks_computed() > lapack_before);
}

TEST_CASE("linalg kernels: eigh symmetrizes its operand, on both kernels") {
  // The primitive itself, on a matrix that is not symmetric: both kernels must decompose
  // (a + a^T) / 2, so reading one triangle only, or a as it is, fails the reconstruction.
  for (fx::DType d : {fx::float64, fx::float32}) {
    for (int64_t n : {5, 33, 64}) {
      CAPTURE(n);
      CAPTURE(std::string(fx::dtype_name(d)));
      fx::Array a = fx::random::normal(fx::random::key(uint64_t(n)), {2, n, n}, d);
      fx::Array sym = (a + mT(a)) * 0.5;
      auto eigh_prim = [&] { return fx::bind(fx::Prim::eigh, {a}, {}, std::source_location::current()); };
      std::vector<fx::Array> lapack = with_kernels(rules::LinalgKernels::lapack, eigh_prim);
      std::vector<fx::Array> eigen = with_kernels(rules::LinalgKernels::eigen, eigh_prim);
      const double tol = tolerance(d) * double(n);
      CHECK(max_abs_diff(lapack[1], eigen[1]) < tol);
      for (const std::vector<fx::Array>& vw : {lapack, eigen}) {
        CHECK(max_abs_diff(fx::matmul(sym, vw[0]), vw[0] * fx::expand_dims(vw[1], -2)) < tol);
        CHECK(orthonormality_error(vw[0]) < tolerance(d));
      }
    }
  }
}

TEST_CASE("linalg kernels: LAPACK's failures are NaN as Eigen's (not positive definite, NaN input)") {
  fx::Array bad = fx::array({{1.0, 2.0}, {2.0, 1.0}});
  CHECK_THROWS_AS(with_kernels(rules::LinalgKernels::lapack, [&] { return la::cholesky(bad); }), fx::ValueError);
  fx::Array l = with_kernels(rules::LinalgKernels::lapack, [&] {
    return fx::jit([](const fx::Array& a) { return la::cholesky(a); })(bad);
  });
  for (double x : l.to_vector<double>()) CHECK(std::isnan(x));
}

TEST_CASE("linalg kernels: by size, small matrices run Eigen and large ones LAPACK") {
  if (rules::linalg_kernels() != rules::LinalgKernels::by_size) return;  // FLUXION_LINALG forces one
  rules::LinalgBlock small = rules::block_of(rules::LinalgOp::eigh, fx::float64);
  small.m = small.n = 8;
  rules::LinalgBlock large = small;
  large.m = large.n = 512;
  // Below AVX2 (FLUXION_CPU=x86-64-v2 in kernels_x86_64_v2) eigh and svd have no Eigen build and run
  // LAPACK at every size (prims/linalg.cpp).
  const bool spectral_eigen = rules::linalg_eigen_build(rules::LinalgOp::eigh, fx::kernel_isa_level()) != 0;
  CHECK(rules::uses_lapack(small) == !spectral_eigen);
  CHECK(rules::uses_lapack(large));
  rules::LinalgBlock lu = rules::block_of(rules::LinalgOp::lu, fx::float64);
  lu.m = lu.n = 512;
  CHECK_FALSE(rules::uses_lapack(lu));  // Eigen's PartialPivLU gives getrf's pivots
  // Triangular solves go to OpenBLAS only for large triangles with many right-hand sides; qr never
  // (docs/linalg.md).
  rules::LinalgBlock trsm = rules::block_of(rules::LinalgOp::triangular_solve, fx::float64);
  trsm.left = true;
  trsm.n = trsm.rows = trsm.cols = 2000;
  CHECK(rules::uses_lapack(trsm));
  trsm.cols = 1;
  CHECK_FALSE(rules::uses_lapack(trsm));
  trsm.n = trsm.rows = trsm.cols = 512;
  CHECK_FALSE(rules::uses_lapack(trsm));
  rules::LinalgBlock qr = rules::block_of(rules::LinalgOp::qr, fx::float64);
  qr.m = qr.n = 2000;
  CHECK_FALSE(rules::uses_lapack(qr));
  rules::LinalgBlock chol = rules::block_of(rules::LinalgOp::cholesky, fx::float64);
  chol.m = chol.n = 2000;
  CHECK(rules::uses_lapack(chol));
  const uint64_t before = rules::linalg_lapack_blocks_computed();
  fx::Array g = fx::random::normal(fx::random::key(1), {300, 300}, fx::float64);
  auto [w, v] = la::eigh(fx::matmul(g, fx::transpose(g)));
  CHECK(rules::linalg_lapack_blocks_computed() == before + 1);
  // OPENBLAS_CORETYPE (set with FLUXION_CPU by the kernels_x86_64_v2/_v3 tests) is the core used.
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  std::string core = rules::lapack_core_name(), want = forced ? forced : core;
  for (std::string* s : {&core, &want})
    for (char& c : *s) c = char(std::tolower(c));
  CHECK(core == want);
}

TEST_CASE("linalg kernels: a batch split over threads gives every matrix the result it has alone") {
  // 48 matrices of 24 x 24 hold enough work to be split (prims/linalg.cpp, split_batch) when Fluxion
  // has two threads or more; one matrix alone never is. Same kernel on the same bytes: bit-equal.
  const int64_t batch = 48, n = 24;
  fx::Array g = fx::random::normal(fx::random::key(11), {batch, n, n}, fx::float64);
  fx::Array spd = fx::matmul(g, mT(g)) + fx::eye(n, fx::float64) * double(n);
  fx::Array rhs = fx::random::normal(fx::random::key(12), {batch, n, 5}, fx::float64);
  const uint64_t split_before = rules::linalg_batches_split();
  with_kernels(rules::LinalgKernels::eigen, [&] {
    fx::Array l = la::cholesky(spd), x = la::triangular_solve(l, rhs, {.transpose_a = true});
    auto [lu, pivots, perm] = la::lu(g);
    auto [q, r] = la::qr(g);
    auto [w, v] = la::eigh(spd);
    auto [u, s, vt] = la::svd(g);
    for (int64_t k : {int64_t(0), int64_t(17), batch - 1}) {
      CAPTURE(k);
      fx::Array gk = g[k], spdk = spd[k];
      fx::Array lk = la::cholesky(spdk);
      CHECK(max_abs_diff(l[k], lk) == 0.0);
      CHECK(max_abs_diff(x[k], la::triangular_solve(lk, rhs[k], {.transpose_a = true})) == 0.0);
      auto [lu_k, pivots_k, perm_k] = la::lu(gk);
      CHECK(max_abs_diff(lu[k], lu_k) == 0.0);
      CHECK(pivots[k].to_vector<int32_t>() == pivots_k.to_vector<int32_t>());
      CHECK(perm[k].to_vector<int32_t>() == perm_k.to_vector<int32_t>());
      auto [q_k, r_k] = la::qr(gk);
      CHECK(max_abs_diff(q[k], q_k) == 0.0);
      CHECK(max_abs_diff(r[k], r_k) == 0.0);
      auto [w_k, v_k] = la::eigh(spdk);
      CHECK(max_abs_diff(w[k], w_k) == 0.0);
      CHECK(max_abs_diff(v[k], v_k) == 0.0);
      auto [u_k, s_k, vt_k] = la::svd(gk);
      CHECK(max_abs_diff(u[k], u_k) == 0.0);
      CHECK(max_abs_diff(s[k], s_k) == 0.0);
      CHECK(max_abs_diff(vt[k], vt_k) == 0.0);
    }
    return 0;
  });
  if (fx::linalg_rules::linalg_kernels() == rules::LinalgKernels::by_size && std::thread::hardware_concurrency() > 1 &&
      !std::getenv("FLUXION_NUM_THREADS"))
    CHECK(rules::linalg_batches_split() >=
          split_before + (rules::linalg_eigen_build(rules::LinalgOp::eigh, fx::kernel_isa_level()) != 0 ? 6 : 4));
    // the six batched calls; LAPACK's eigh and svd (below AVX2) are not split: OpenBLAS threads them
}

// cholesky's VJP is cholesky_linear's adjoint, on OpenBLAS Murray's blocked reverse-mode Cholesky
// (prims/linalg_lapack.cpp): both kernels, and fx::vjp through cholesky, against the closed form that
// transposing the JVP op by op gave before, sym(L^-T Phi(L^T tril(g)) L^-1) -- on sizes of one
// block, exactly one, and several with a ragged last one. The tangent map likewise.
TEST_CASE("cholesky's derivative map: blocked adjoint and both kernels equal the closed forms") {
  for (fx::DType d : {fx::float64, fx::float32}) {
    for (int64_t n : {5, 128, 200, 300}) {
      CAPTURE(n);
      CAPTURE(std::string(fx::dtype_name(d)));
      fx::Array sq = fx::random::normal(fx::random::key(uint64_t(n)), {n, n}, d);
      fx::Array spd = fx::matmul(sq, mT(sq)) + fx::eye(n, d) * double(n);
      fx::Array l = la::cholesky(spd);
      fx::Array g = fx::random::normal(fx::random::key(uint64_t(n + 1)), {n, n}, d);  // its upper triangle is ignored
      fx::Array rows = fx::expand_dims(fx::arange(n), -1), cols = fx::arange(n);
      auto phi = [&](const fx::Array& a) { return fx::where(rows > cols, a, fx::where(rows == cols, a * 0.5, a * 0.0)); };
      auto sym = [](const fx::Array& a) { return (a + mT(a)) * 0.5; };
      auto solve_l = [&](const fx::Array& b, bool transpose) { return la::triangular_solve(l, b, {.transpose_a = transpose}); };
      // Closed forms: the adjoint sym(L^-T Phi(L^T tril(g)) L^-1); the tangent L Phi(L^-1 sym(g) L^-T).
      fx::Array adjoint = sym(mT(solve_l(mT(solve_l(phi(fx::matmul(mT(l), fx::where(rows >= cols, g, g * 0.0))), true)), true)));
      fx::Array tangent = fx::matmul(l, phi(mT(solve_l(mT(solve_l(sym(g), false)), false))));
      const double scale = fx::max(fx::abs(adjoint)).item<double>() + fx::max(fx::abs(tangent)).item<double>();
      const double tol = (d == fx::float64 ? 1e-12 : 1e-4) * scale * double(n);
      for (rules::LinalgKernels k : {rules::LinalgKernels::eigen, rules::LinalgKernels::lapack}) {
        for (bool adj : {false, true}) {
          fx::Array r = with_kernels(k, [&] {
            return fx::bind1(fx::Prim::cholesky_linear, {l, g}, fx::Params{{"adjoint", adj}}, std::source_location::current());
          });
          CHECK(max_abs_diff(r, adj ? adjoint : tangent) < tol);
        }
        fx::Array by_vjp = with_kernels(k, [&] { return fx::vjp([](const fx::Array& a) { return la::cholesky(a); }, spd).second(g); });
        CHECK(max_abs_diff(by_vjp, adjoint) < tol);
      }
    }
  }
}

// eigh's LAPACK kernel runs syevd's steps with a back-transformation of its own, in blocks of 64
// reflectors (prims/linalg_eigh_lapack.cpp): sizes of one reflector, less than a block, exactly one
// (n - 1 = 64), one more, two and a ragged third, both sides of the size the default kernels start
// sending to LAPACK (192) and of the one from which the tridiagonal problem is split in two halves
// solved on two threads (256; with one thread it is not split). Eigenvalues against Eigen's, the reconstruction and orthonormal
// columns, on a random matrix, on one whose eigenvalues are -1, 0 and 1 each about n / 3 times, on a
// diagonal one (every reflector the identity: tau = 0), and the random one scaled far below and
// above what sytrd's sums of squares survive (syevd's scaling, kept).
TEST_CASE("linalg kernels: eigh's back-transformation at block edges, on degenerate and extreme matrices") {
  for (fx::DType d : {fx::float64, fx::float32}) {
    for (int64_t n : {2, 33, 64, 65, 66, 129, 191, 193, 255, 257}) {
      CAPTURE(n);
      CAPTURE(std::string(fx::dtype_name(d)));
      fx::Array g = fx::random::normal(fx::random::key(uint64_t(n + 40)), {n, n}, d);
      fx::Array q = la::qr(g).first, i = fx::astype(fx::arange(n), d);
      fx::Array repeated = fx::matmul(q * fx::expand_dims(fx::remainder(i, 3.0) - 1.0, -2), mT(q));
      fx::Array diagonal = fx::eye(n, d) * fx::remainder(i * 7.0, double(n));
      fx::Array random = (g + mT(g)) * 0.5;
      for (const fx::Array& a : {random, repeated, diagonal}) {
        auto [w, v] = with_kernels(rules::LinalgKernels::lapack, [&] { return la::eigh(a); });
        fx::Array w_e = with_kernels(rules::LinalgKernels::eigen, [&] { return la::eigh(a).first; });
        const double scale = std::max(1.0, fx::max(fx::abs(w_e)).item<double>()), tol = tolerance(d) * scale;
        CHECK(max_abs_diff(w, w_e) < tol);
        CHECK(max_abs_diff(fx::matmul(a, v), v * fx::expand_dims(w, -2)) < tol);
        CHECK(orthonormality_error(v) < tolerance(d));
      }
      fx::Array w_random = with_kernels(rules::LinalgKernels::lapack, [&] { return la::eigh(random).first; });
      for (double s : d == fx::float64 ? std::vector<double>{1e-300, 1e300} : std::vector<double>{1e-30, 1e30}) {
        CAPTURE(s);
        auto [w, v] = with_kernels(rules::LinalgKernels::lapack, [&] { return la::eigh(random * s); });
        CHECK(max_abs_diff(fx::astype(w, fx::float64) / s, fx::astype(w_random, fx::float64)) < tolerance(d) * double(n));
        CHECK(orthonormality_error(v) < tolerance(d));
      }
    }
  }
}
