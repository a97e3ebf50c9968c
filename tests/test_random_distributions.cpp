// fx::random's gumbel, categorical, gamma and choice: their distributions checked by moments and
// frequencies against the closed forms (bounds of five standard errors, so a correct sampler fails
// about once in a million runs; the keys are fixed, so a run is reproducible), their shapes and
// dtypes, and that they trace: the same values under jit.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <set>
#include <string>
#include <vector>

namespace fx = fluxion;

namespace {
struct Moments {
  double mean = 0, var = 0, skew = 0;
};
Moments moments(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.mean += x / double(v.size());
  double m2 = 0, m3 = 0;
  for (double x : v) {
    m2 += (x - m.mean) * (x - m.mean) / double(v.size());
    m3 += std::pow(x - m.mean, 3) / double(v.size());
  }
  m.var = m2;
  m.skew = m3 / std::pow(m2, 1.5);
  return m;
}
// Counts of each value in [0, k).
std::vector<double> frequencies(const std::vector<int>& v, int k) {
  std::vector<double> f(size_t(k), 0.0);
  for (int x : v) f[size_t(x)] += 1.0 / double(v.size());
  return f;
}
// |observed - p| within five standard errors of a frequency out of n draws.
void check_frequency(double observed, double p, size_t n) {
  CHECK(std::fabs(observed - p) <= 5 * std::sqrt(p * (1 - p) / double(n)) + 1e-12);
}
constexpr int64_t kDraws = 40000;
}  // namespace

TEST_CASE("random.gamma: mean a, variance a, skewness 2/sqrt(a), for a below and above 1") {
  for (double a : {0.3, 1.0, 3.5}) {
    CAPTURE(a);
    std::vector<double> v = fx::random::gamma(fx::random::key(7), a, fx::Shape{kDraws}, fx::float64).to_vector<double>();
    for (double x : v) REQUIRE((x >= 0 && std::isfinite(x)));
    Moments m = moments(v);
    const double n = double(kDraws);
    CHECK(std::fabs(m.mean - a) <= 5 * std::sqrt(a / n));
    CHECK(std::fabs(m.var - a) <= 5 * std::sqrt(a * a * (2 + 6 / a) / n));
    CHECK(std::fabs(m.skew - 2 / std::sqrt(a)) <= 0.15 * 2 / std::sqrt(a) + 0.05);
  }
  // An array of shapes broadcasts against `shape`; float32 by default; a <= 0 gives NaN (JAX).
  fx::Array g = fx::random::gamma(fx::random::key(1), fx::array({0.5f, 2.f, 9.f}), fx::Shape{kDraws / 4, 3});
  CHECK(g.shape() == fx::Shape{kDraws / 4, 3});
  CHECK(g.dtype() == fx::float32);
  std::vector<float> col = fx::mean(g, {0}).to_vector<float>();
  CHECK(col[0] == doctest::Approx(0.5).epsilon(0.05));
  CHECK(col[2] == doctest::Approx(9.0).epsilon(0.05));
  CHECK(std::isnan(fx::random::gamma(fx::random::key(1), -1.0).item<float>()));
  auto jitted = fx::jit([](const fx::Array& k) { return fx::random::gamma(k, 2.0, fx::Shape{5}); });
  CHECK(jitted(fx::random::key(3)).to_vector<float>() == fx::random::gamma(fx::random::key(3), 2.0, fx::Shape{5}).to_vector<float>());
}

TEST_CASE("random.gumbel: mean Euler's gamma, variance pi^2 / 6") {
  std::vector<double> v = fx::random::gumbel(fx::random::key(2), {kDraws}, fx::float64).to_vector<double>();
  Moments m = moments(v);
  const double var = std::numbers::pi * std::numbers::pi / 6, n = double(kDraws);
  CHECK(std::fabs(m.mean - std::numbers::egamma) <= 5 * std::sqrt(var / n));
  CHECK(std::fabs(m.var - var) <= 5 * std::sqrt(var * var * (2 + 12.0 / 5) / n));  // excess kurtosis 12/5
  for (double x : v) REQUIRE(std::isfinite(x));
}

TEST_CASE("random.categorical: frequencies follow softmax(logits); batches and axes") {
  const std::vector<double> p = {0.2, 0.5, 0.3};
  fx::Array logits = fx::log(fx::array(p));
  fx::Array s = fx::random::categorical(fx::random::key(4), logits, -1, fx::Shape{kDraws});
  CHECK(s.dtype() == fx::int32);
  std::vector<double> f = frequencies(s.to_vector<int>(), 3);
  for (int k = 0; k < 3; ++k) check_frequency(f[size_t(k)], p[size_t(k)], kDraws);
  // Logits [classes, batch] with axis 0: one draw per column; column 1 is certain.
  fx::Array cols = fx::transpose(fx::array({{0.0, 0.0, 0.0}, {-HUGE_VAL, 0.0, -HUGE_VAL}}));
  fx::Array d = fx::random::categorical(fx::random::key(5), cols, 0, fx::Shape{1000, 2});
  CHECK(d.shape() == fx::Shape{1000, 2});
  std::vector<int> dv = d.to_vector<int>();
  for (size_t i = 1; i < dv.size(); i += 2) REQUIRE(dv[i] == 1);
  CHECK_THROWS_AS(fx::random::categorical(fx::random::key(5), cols, 0, fx::Shape{4, 3}), fx::ShapeError);
}

TEST_CASE("random.choice: with and without replacement, uniform and with p") {
  const std::vector<double> p = {0.1, 0.6, 0.3};
  // Uniform with replacement.
  std::vector<double> f = frequencies(fx::random::choice(fx::random::key(6), 5, {kDraws}).to_vector<int>(), 5);
  for (double x : f) check_frequency(x, 0.2, kDraws);
  // With p, with replacement (inverse CDF).
  fx::Array pa = fx::array(p);
  f = frequencies(fx::random::choice(fx::random::key(7), 3, {kDraws}, true, pa).to_vector<int>(), 3);
  for (int k = 0; k < 3; ++k) check_frequency(f[size_t(k)], p[size_t(k)], kDraws);
  // Without replacement: distinct draws; all of them is a permutation.
  std::vector<int> perm = fx::random::choice(fx::random::key(8), 6, {6}, false).to_vector<int>();
  std::sort(perm.begin(), perm.end());
  CHECK(perm == std::vector<int>{0, 1, 2, 3, 4, 5});
  // Without replacement and with p (Gumbel top-k): the first draw follows p, the two draws differ.
  std::vector<int> first;
  auto draw = fx::jit(fx::vmap([&](const fx::Array& k) { return fx::random::choice(k, 3, {2}, false, pa); }));
  fx::Array pairs = draw(fx::random::split(fx::random::key(9), 8000));
  std::vector<int> pv = pairs.to_vector<int>();
  for (size_t i = 0; i < pv.size(); i += 2) {
    REQUIRE(pv[i] != pv[i + 1]);
    first.push_back(pv[i]);
  }
  f = frequencies(first, 3);
  for (int k = 0; k < 3; ++k) check_frequency(f[size_t(k)], p[size_t(k)], first.size());
  // From an array along an axis: rows of a matrix.
  fx::Array rows = fx::random::choice(fx::random::key(10), fx::reshape(fx::arange(8.f), {4, 2}), {3}, false);
  CHECK(rows.shape() == fx::Shape{3, 2});
  std::vector<float> rv = rows.to_vector<float>();
  for (size_t i = 0; i < rv.size(); i += 2) CHECK(rv[i + 1] == rv[i] + 1);
  CHECK(fx::random::choice(fx::random::key(10), fx::reshape(fx::arange(8.f), {4, 2}), {5}, true, std::nullopt, 1).shape() ==
        fx::Shape{4, 5});
  CHECK_THROWS_AS(fx::random::choice(fx::random::key(1), 3, {4}, false), fx::ValueError);
  CHECK_THROWS_AS(fx::random::choice(fx::random::key(1), 3, {2}, true, fx::array({0.5, 0.5})), fx::ShapeError);
}
