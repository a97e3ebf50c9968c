// Focused tests of fx::linalg's decompositions (api/linalg_decomp.h): the typed errors eagerly and
// the documented NaN under jit, lu's pivots, a Gaussian-process log-likelihood and its gradient
// against finite differences, norms, lstsq and matrix_power against direct formulas. Values of
// every op through every transformation: tests/op_table_decomp.cpp.
#include <doctest/doctest.h>

#include <fluxion.h>

#include "prims/isa_level.h"
#include "prims/linalg.h"
#include "tests/test_helpers.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace fx = fluxion;
using test_helpers::max_abs_diff;
using test_helpers::error_of;
namespace la = fx::linalg;

namespace {

// -1/2 y^T K^-1 y - 1/2 log det K - n/2 log 2 pi with K = s^2 exp(-|xi - xj|^2 / 2 l^2) + noise I.
fx::Array gp_loglik(const fx::Array& theta, const fx::Array& x, const fx::Array& y) {
  const int64_t n = x.shape()[0];
  fx::Array d = fx::expand_dims(x, 1) - fx::expand_dims(x, 0);
  fx::Array k = fx::exp(theta[0]) * fx::exp(-0.5 * d * d / fx::exp(2.0 * theta[1])) + fx::eye(n, fx::float64) * 0.1;
  fx::Array l = la::cholesky(k);
  fx::Array alpha = la::triangular_solve(l, y);
  fx::Array logdet = 2.0 * fx::sum(fx::log(fx::sum(l * fx::eye(n, fx::float64), {1})));
  return -0.5 * fx::sum(alpha * alpha) - 0.5 * logdet - 0.5 * double(n) * std::log(2 * M_PI);
}
}  // namespace

TEST_CASE("linalg errors: typed eagerly, NaN/inf under jit (as in JAX)") {
  fx::Array bad = fx::array({{1.0, 2.0}, {2.0, 1.0}});  // symmetric, not positive definite
  const int line = __LINE__ + 1;
  std::string m = error_of([&] { la::cholesky(bad); });
  CHECK(m.find("ValueError: linalg.cholesky(f64[2,2]) at test_linalg_decomp.cpp:" + std::to_string(line)) == 0);
  CHECK(m.find("not positive definite") != std::string::npos);
  fx::Array jl = fx::jit([](const fx::Array& a) { return la::cholesky(a); })(bad);
  CHECK(std::isnan(jl.to_vector<double>()[0]));
  fx::Array singular = fx::array({{1.0, 2.0}, {2.0, 4.0}});
  CHECK(error_of([&] { la::solve(singular, fx::array({1.0, 1.0})); }).find("ValueError: linalg.solve") == 0);
  CHECK(error_of([&] { la::inv(singular); }).find("singular") != std::string::npos);
  fx::Array js = fx::jit([](const fx::Array& a) { return la::solve(a, fx::ones({2}, fx::float64)); })(singular);
  bool finite = true;
  for (double v : js.to_vector<double>()) finite = finite && std::isfinite(v);
  CHECK_FALSE(finite);
  CHECK(error_of([&] { la::cholesky(fx::zeros({2, 3})); }).find("ShapeError: cholesky(f32[2,3])") == 0);
  CHECK(error_of([&] { la::det(fx::zeros({3})); }).find("ShapeError: linalg.det(f32[3])") == 0);
  CHECK(error_of([&] { la::cholesky(fx::zeros({2, 2}, fx::float16)); }).find("TypeError: cholesky") == 0);
  CHECK(error_of([&] { la::norm(fx::zeros({3}), "fro"); }).find("is a matrix norm") != std::string::npos);
}

TEST_CASE("lu: pivots as LAPACK's getrf, P a = L U; det and slogdet agree") {
  fx::Array a = fx::array({{1.0, 2.0, 0.0}, {4.0, 1.0, 1.0}, {2.0, 8.0, 3.0}});
  auto [packed, pivots, perm] = la::lu(a);
  CHECK(pivots.to_vector<int32_t>() == std::vector<int32_t>{1, 2, 2});
  CHECK(perm.to_vector<int32_t>() == std::vector<int32_t>{1, 2, 0});
  fx::Array l = packed * fx::array({{0.0, 0.0, 0.0}, {1.0, 0.0, 0.0}, {1.0, 1.0, 0.0}}) + fx::eye(3, fx::float64);
  fx::Array u = packed * fx::array({{1.0, 1.0, 1.0}, {0.0, 1.0, 1.0}, {0.0, 0.0, 1.0}});
  CHECK(max_abs_diff(fx::matmul(l, u), fx::take(a, perm, 0)) < 1e-12);
  CHECK(la::det(a).item<double>() == doctest::Approx(-25.0));  // 1(3-8) - 2(12-2) + 0
  auto [sign, logabs] = la::slogdet(a);
  CHECK(sign.item<double>() == -1.0);
  CHECK(logabs.item<double>() == doctest::Approx(std::log(25.0)));
}

TEST_CASE("a Gaussian-process log-likelihood and its gradient (finite differences, jit)") {
  fx::Array x = fx::linspace(0.0, 3.0, 12, fx::float64);
  fx::Array y = fx::sin(2.0 * x) + 0.1 * fx::cos(7.0 * x);
  fx::Array theta = fx::array({0.2, -0.3});
  auto f = [&](const fx::Array& t) { return gp_loglik(t, x, y); };
  auto [value, g] = fx::value_and_grad(f)(theta);
  const double h = 1e-6;
  for (int i = 0; i < 2; ++i) {
    fx::Array e = fx::zeros({2}, fx::float64).at(i).set(h);
    const double fd = (f(theta + e).item<double>() - f(theta - e).item<double>()) / (2 * h);
    CHECK(g[i].item<double>() == doctest::Approx(fd).epsilon(1e-6));
  }
  auto [jv, jg] = fx::jit(fx::value_and_grad(f))(theta);
  CHECK(jv.item<double>() == doctest::Approx(value.item<double>()).epsilon(1e-12));
  CHECK(max_abs_diff(jg, g) < 1e-9);
  // The same with solve and slogdet instead of the Cholesky factor.
  auto f2 = [&](const fx::Array& t) {
    const int64_t n = 12;
    fx::Array d = fx::expand_dims(x, 1) - fx::expand_dims(x, 0);
    fx::Array k = fx::exp(t[0]) * fx::exp(-0.5 * d * d / fx::exp(2.0 * t[1])) + fx::eye(n, fx::float64) * 0.1;
    return -0.5 * fx::sum(y * la::solve(k, y)) - 0.5 * la::slogdet(k).second - 0.5 * double(n) * std::log(2 * M_PI);
  };
  CHECK(f2(theta).item<double>() == doctest::Approx(value.item<double>()).epsilon(1e-10));
  CHECK(max_abs_diff(fx::grad(f2)(theta), g) < 1e-8);
}

TEST_CASE("batched decompositions: vmap against the batch dims, jit against eager") {
  fx::Array a = fx::random::normal(fx::random::key(3), {5, 4, 4}, fx::float64);
  fx::Array spd = fx::matmul(a, fx::swapaxes(a, -1, -2)) + fx::eye(4, fx::float64) * 4.0;
  fx::Array b = fx::random::normal(fx::random::key(4), {5, 4, 2}, fx::float64);
  fx::Array direct = la::solve(spd, b);
  fx::Array mapped = fx::vmap([](const fx::Array& m, const fx::Array& r) { return la::solve(m, r); })(spd, b);
  CHECK(max_abs_diff(direct, mapped) < 1e-12);
  CHECK(max_abs_diff(fx::matmul(spd, direct), b) < 1e-10);
  auto chol_solve = [](const fx::Array& m, const fx::Array& r) {
    fx::Array l = la::cholesky(m);
    return la::triangular_solve(l, la::triangular_solve(l, r), {.transpose_a = true});
  };
  CHECK(max_abs_diff(fx::jit(chol_solve)(spd, b), direct) < 1e-10);
  auto [w, v] = la::eigh(spd);
  CHECK(max_abs_diff(fx::matmul(spd, v), v * fx::expand_dims(w, -2)) < 1e-10);
  auto [u, s, vt] = fx::jit([](const fx::Array& m) { return la::svd(m); })(a);
  CHECK(max_abs_diff(fx::matmul(u * fx::expand_dims(s, -2), vt), a) < 1e-10);
}

TEST_CASE("norm, lstsq, matrix_power against direct formulas") {
  fx::Array m = fx::array({{1.0, -2.0}, {3.0, 4.0}});
  CHECK(la::norm(m).item<double>() == doctest::Approx(std::sqrt(30.0)));
  CHECK(la::norm(m, 1).item<double>() == doctest::Approx(6.0));
  CHECK(la::norm(m, INFINITY).item<double>() == doctest::Approx(7.0));
  auto [u, s, vt] = la::svd(m);
  CHECK(la::norm(m, 2).item<double>() == doctest::Approx(s[0].item<double>()));
  CHECK(la::norm(m, "nuc").item<double>() == doctest::Approx(fx::sum(s).item<double>()));
  CHECK(la::norm(fx::array({3.0, -4.0})).item<double>() == doctest::Approx(5.0));
  CHECK(la::norm(fx::array({3.0, -4.0}), 1).item<double>() == doctest::Approx(7.0));
  CHECK(la::norm(fx::array({{3.0, 4.0}, {6.0, 8.0}}), {}, {1}).to_vector<double>() == std::vector<double>{5, 10});
  fx::Array a = fx::array({{1.0, 0.0}, {1.0, 1.0}, {1.0, 2.0}});
  fx::Array yv = fx::array({1.0, 2.0, 2.0});
  fx::Array normal = la::solve(fx::matmul(fx::transpose(a), a), fx::matmul(fx::transpose(a), yv));
  CHECK(max_abs_diff(la::lstsq(a, yv), normal) < 1e-12);
  CHECK(max_abs_diff(la::matrix_power(m, 3), fx::matmul(m, fx::matmul(m, m))) < 1e-12);
  CHECK(max_abs_diff(la::matrix_power(m, -2), la::inv(fx::matmul(m, m))) < 1e-12);
  CHECK(max_abs_diff(la::matrix_power(m, 0), fx::eye(2, fx::float64)) == 0);
}

// The kernels run Eigen built for kernel_isa_level() (prims/linalg_block.h), eagerly and under jit;
// meson runs this file's cases also with FLUXION_CPU=x86-64-v2 and -v3, so an AVX-512 host checks
// the builds that AVX2 and SSE4 machines run (SSE4 machines run the baseline build, and LAPACK for
// eigh and svd; the op table checks their values).
TEST_CASE("linalg levels: every small matrix runs the Eigen build for kernel_isa_level()") {
  namespace rules = fx::linalg_rules;
  const int level = fx::kernel_isa_level();
  CHECK(level >= 1);
  CHECK(level <= fx::host_isa_level());
  const char* cpu = std::getenv("FLUXION_CPU");
  const std::string name = cpu ? cpu : "";
  if (name.size() == 9 && name.starts_with("x86-64-v")) CHECK(level == std::min(name[8] - '0', fx::host_isa_level()));
  uint64_t before[5];
  for (int l = 1; l <= 4; ++l) before[l] = rules::linalg_blocks_computed(l);
  const uint64_t lapack_before = rules::linalg_lapack_blocks_computed();
  fx::Array x = fx::random::normal(fx::random::key(4), {3, 5, 5}, fx::float64);
  fx::Array spd = fx::matmul(x, fx::swapaxes(x, -1, -2)) + fx::eye(5, fx::float64) * 5.0;
  fx::Array l_eager = la::cholesky(spd);
  fx::Array l_jit = fx::jit([](const fx::Array& a) { return la::cholesky(a); })(spd);
  CHECK(max_abs_diff(l_eager, l_jit) == 0.0);
  CHECK(max_abs_diff(fx::matmul(l_jit, fx::swapaxes(l_jit, -1, -2)), spd) < 1e-12);
  // 3 matrices, twice, on Eigen's build for the level -- or on LAPACK when FLUXION_LINALG=lapack.
  // Level 2 runs level 1's build; every other level its own.
  const bool lapack = rules::linalg_kernels() == rules::LinalgKernels::lapack;
  const int build = rules::linalg_eigen_build(rules::LinalgOp::cholesky, level);
  CHECK(build == (level == 2 ? 1 : level));
  for (int l = 1; l <= 4; ++l)
    CHECK(rules::linalg_blocks_computed(l) - before[l] == (l == build && !lapack ? 6u : 0u));
  CHECK(rules::linalg_lapack_blocks_computed() - lapack_before == (lapack ? 6u : 0u));

  // eigh and svd have one build on x86-64, level 3's (kernels/meson.build): level 4 runs it, and
  // levels 1 and 2 run LAPACK (0: no build).
  const int spectral = rules::linalg_eigen_build(rules::LinalgOp::eigh, level);
#if defined(__x86_64__)
  CHECK(spectral == (level >= 3 ? 3 : 0));
#else
  CHECK(spectral == 1);
#endif
  CHECK(rules::linalg_eigen_build(rules::LinalgOp::svd, level) == spectral);
  for (int l = 1; l <= 4; ++l) before[l] = rules::linalg_blocks_computed(l);
  const uint64_t lapack_spectral_before = rules::linalg_lapack_blocks_computed();
  auto [w, v] = la::eigh(spd);
  auto [u, s, vt] = la::svd(x);
  CHECK(max_abs_diff(fx::matmul(v * fx::expand_dims(w, -2), fx::swapaxes(v, -1, -2)), spd) < 1e-11);
  CHECK(max_abs_diff(fx::matmul(u * fx::expand_dims(s, -2), vt), x) < 1e-12);
  for (int l = 1; l <= 4; ++l)
    CHECK(rules::linalg_blocks_computed(l) - before[l] == (l == spectral && !lapack ? 6u : 0u));
  CHECK(rules::linalg_lapack_blocks_computed() - lapack_spectral_before == (lapack || spectral == 0 ? 6u : 0u));
}
