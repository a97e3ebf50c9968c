// The numpy surface of issue 34 beyond what the op table (tests/op_table_numpy.cpp,
// tests/op_table_sorting.cpp) drives through every transformation: subscripts with fx::ellipsis and
// fx::newaxis, unique without a size (eager only), unique_all, the shapes of split / meshgrid /
// quantile, and numpy's answers written out for a few cases where the values say more than a loop.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/test_helpers.h"

namespace fx = fluxion;

namespace {
fx::Array counting(const fx::Shape& s) { return fx::reshape(fx::arange(0, int(s.numel()), 1, fx::float32), s); }
std::vector<float> values(const fx::Array& a) { return a.to_vector<float>(); }
using test_helpers::error_of;  // the message of the fluxion::Error a call raises
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST_CASE("subscripts: fx::ellipsis is numpy's ..., fx::newaxis its None") {
  fx::Array x = counting({2, 3, 4});
  // x[..., 1] == x[:, :, 1]; x[1, ...] == x[1]; x[..., 1, :] == x[:, 1, :]
  CHECK(values(x[{fx::ellipsis, 1}]) == values(x[{fx::colon, fx::colon, 1}]));
  CHECK(x[{fx::ellipsis, 1}].shape() == fx::Shape{2, 3});
  CHECK(values(x[{1, fx::ellipsis}]) == values(x[1]));
  CHECK(values(x[{fx::ellipsis, 1, fx::colon}]) == values(x[{fx::colon, 1, fx::colon}]));
  CHECK(x[fx::ellipsis].shape() == x.shape());
  CHECK(x[{0, 1, 2, fx::ellipsis}].shape() == fx::Shape{});  // an ellipsis standing for no axes
  // New axes of size 1 where they are written.
  CHECK(x[{fx::newaxis}].shape() == fx::Shape{1, 2, 3, 4});
  CHECK(x[{fx::colon, fx::newaxis}].shape() == fx::Shape{2, 1, 3, 4});
  CHECK(x[{fx::ellipsis, fx::newaxis}].shape() == fx::Shape{2, 3, 4, 1});
  CHECK(x[{fx::newaxis, 1, fx::ellipsis, fx::newaxis, 2}].shape() == fx::Shape{1, 3, 1});
  CHECK(values(x[{fx::newaxis, 1, fx::ellipsis, fx::newaxis, 2}]) == values(x[{1, fx::colon, 2}]));
  // With index arrays: numpy moves the advanced dims in front when a newaxis separates them.
  fx::Array i = fx::array({1, 0});
  CHECK(x[{i, fx::newaxis, i}].shape() == fx::Shape{2, 1, 4});
  CHECK(x[{fx::ellipsis, i}].shape() == fx::Shape{2, 3, 2});
  CHECK(values(x[{fx::ellipsis, i}]) == values(fx::take(x, i, 2)));
  // The row-vector / column-vector idiom: v[:, None] * v[None, :] is the outer product.
  fx::Array v = fx::arange(3.f);
  CHECK(values(v[{fx::colon, fx::newaxis}] * v[{fx::newaxis, fx::colon}]) == values(fx::outer(v, v)));
}

TEST_CASE("x.at(...) with fx::ellipsis and fx::newaxis updates the same elements as numpy") {
  fx::Array x = fx::zeros({2, 3});
  CHECK(values(x.at({fx::ellipsis, 1}).set(5.f)) == std::vector<float>{0, 5, 0, 0, 5, 0});
  CHECK(values(x.at({fx::ellipsis, fx::array({0, 2})}).add(fx::ones({2, 2}))) ==
        std::vector<float>{1, 0, 1, 1, 0, 1});
  fx::Array y = x.at({fx::newaxis, 1}).set(fx::ones({1, 3}));
  CHECK(y.shape() == x.shape());
  CHECK(values(y) == std::vector<float>{0, 0, 0, 1, 1, 1});
  // Traced: under jit and grad the same.
  auto f = [](const fx::Array& a) { return fx::sum(fx::square(a.at({fx::ellipsis, 0}).mul(3.f))); };
  fx::Array g = fx::grad(f)(fx::ones({2, 3}));
  CHECK(values(g) == std::vector<float>{18, 2, 2, 18, 2, 2});
  CHECK(fx::jit(f)(fx::ones({2, 3})).item<float>() == 22.f);
}

TEST_CASE("subscript errors: two ellipses, too many indices around one") {
  fx::Array x = fx::zeros({2, 3});
  const int line = __LINE__ + 1;
  std::string m = error_of([&] { (void)x[{fx::ellipsis, 0, fx::ellipsis}]; });
  CHECK(m.find("ShapeError: getitem(f32[2,3]) at test_numpy_surface.cpp:" + std::to_string(line)) == 0);
  CHECK(m.find("only one fx::ellipsis") != std::string::npos);
  CHECK(error_of([&] { (void)x[{0, 1, 2, fx::ellipsis}]; }).find("too many indices (3)") != std::string::npos);
  CHECK(error_of([&] { (void)x.at({0, fx::ellipsis, 1, 2}).set(1.f); }).find("ShapeError: at(...).set") == 0);
}

TEST_CASE("unique: sorted distinct values, NaNs as one, eager only -- a size makes it traceable") {
  fx::Array x = fx::array({3.f, kNaN, 1.f, kNaN, 3.f, -0.f, 0.f});
  std::vector<float> u = values(fx::unique(x));  // numpy: [-0. 1. 3. nan]
  REQUIRE(u.size() == 4);
  CHECK(u[0] == 0.f);
  CHECK(u[1] == 1.f);
  CHECK(u[2] == 3.f);
  CHECK(std::isnan(u[3]));
  CHECK(fx::unique(fx::array({{2, 2}, {7, 1}})).to_vector<int>() == std::vector<int>{1, 2, 7});
  CHECK(fx::unique(fx::zeros({0}, fx::int32)).shape() == fx::Shape{0});
  // JAX's size= form: padded with fill_value (default: the smallest element), or cut.
  CHECK(fx::unique(fx::array({3, 1, 3}), 4, -1.0).to_vector<int>() == std::vector<int>{1, 3, -1, -1});
  CHECK(fx::unique(fx::array({3, 1, 3}), 4).to_vector<int>() == std::vector<int>{1, 3, 1, 1});
  CHECK(fx::unique(fx::array({3, 1, 2}), 2).to_vector<int>() == std::vector<int>{1, 2});
  auto traced = fx::jit([](const fx::Array& a) { return fx::unique(a, 3, 0.0); });
  CHECK(traced(fx::array({5, 5, 4})).to_vector<int>() == std::vector<int>{4, 5, 0});
  // Without a size under a trace: a ConcretizationError naming unique, the line and the way out.
  const int line = __LINE__ + 1;
  std::string m = error_of([] { (void)fx::jit([](const fx::Array& a) { return fx::unique(a); })(fx::array({1, 2})); });
  CHECK(m.find("ConcretizationError: unique(i32[2]) at test_numpy_surface.cpp:" + std::to_string(line)) == 0);
  CHECK(m.find("fx::unique(x, size, fill_value)") != std::string::npos);
  // Also of a concrete array under a trace: the ops are staged all the same (omnistaging).
  fx::Array c = fx::array({1, 2});
  m = error_of([&] { (void)fx::jit([&](const fx::Array& a) { return fx::unique(c) + a; })(fx::ones({2}, fx::int32)); });
  CHECK(m.find("ConcretizationError: unique(i32[2])") == 0);
  // The kept values carry their gradients (to the first of equal elements' positions).
  fx::Array g = fx::grad([](const fx::Array& a) { return fx::sum(fx::unique(a, 2, 0.0) * fx::array({1.f, 10.f})); })(
      fx::array({2.f, 1.f, 2.f}));
  CHECK(values(g) == std::vector<float>{10, 1, 0});
}

TEST_CASE("unique_all: numpy's values, first indices, inverse and counts") {
  fx::UniqueAll u = fx::unique_all(fx::array({3, 1, 3, 2}));
  CHECK(u.values.to_vector<int>() == std::vector<int>{1, 2, 3});
  CHECK(u.indices.to_vector<int>() == std::vector<int>{1, 3, 0});
  CHECK(u.inverse_indices.to_vector<int>() == std::vector<int>{2, 0, 2, 1});
  CHECK(u.counts.to_vector<int>() == std::vector<int>{1, 1, 2});
  fx::UniqueAll m = fx::unique_all(fx::array({{5.f, 5.f}, {4.f, 5.f}}));
  CHECK(m.inverse_indices.shape() == fx::Shape{2, 2});
  CHECK(m.inverse_indices.to_vector<int>() == std::vector<int>{1, 1, 0, 1});
  CHECK(m.counts.to_vector<int>() == std::vector<int>{1, 3});
}

TEST_CASE("split, array_split and meshgrid: numpy's pieces and grids") {
  fx::Array x = fx::arange(10);
  std::vector<fx::Array> p = fx::split(x, {5, 3});  // numpy: [0..4], [], [3..9]
  REQUIRE(p.size() == 3);
  CHECK(p[0].to_vector<int>() == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(p[1].shape() == fx::Shape{0});
  CHECK(p[2].to_vector<int>() == std::vector<int>{3, 4, 5, 6, 7, 8, 9});
  std::vector<fx::Array> q = fx::array_split(fx::arange(7), 3);
  REQUIRE(q.size() == 3);
  CHECK(q[0].to_vector<int>() == std::vector<int>{0, 1, 2});
  CHECK(q[2].to_vector<int>() == std::vector<int>{5, 6});
  CHECK(fx::split(fx::zeros({4, 6}), 3, -1).size() == 3);
  std::vector<fx::Array> g = fx::meshgrid({fx::arange(2), fx::arange(3), fx::arange(4)});
  for (const fx::Array& a : g) CHECK(a.shape() == fx::Shape{3, 2, 4});  // "xy": the first two exchanged
  std::vector<fx::Array> ij = fx::meshgrid({fx::arange(2), fx::arange(3)}, "ij");
  CHECK(ij[0].shape() == fx::Shape{2, 3});
  CHECK(ij[0].to_vector<int>() == std::vector<int>{0, 0, 0, 1, 1, 1});
  CHECK(ij[1].to_vector<int>() == std::vector<int>{0, 1, 2, 0, 1, 2});
  CHECK(error_of([] { (void)fx::meshgrid({fx::arange(2)}, "yx"); }).find("ValueError: meshgrid") == 0);
}

TEST_CASE("quantile: q's dims lead, keepdims, numpy's values for each method") {
  fx::Array x = fx::array({1.f, 2.f, 3.f, 4.f, 10.f});
  fx::Array q = fx::array({0.1f, 0.3f, 0.5f, 0.625f, 0.9f});
  // numpy.quantile / jnp.quantile (JAX's "nearest" takes the lower element up to a fraction of 0.5).
  const std::vector<std::pair<std::string, std::vector<float>>> want = {
      {"linear", {1.4f, 2.2f, 3.f, 3.5f, 7.6f}}, {"lower", {1, 2, 3, 3, 4}},        {"higher", {2, 3, 3, 4, 10}},
      {"nearest", {1, 2, 3, 3, 10}},            {"midpoint", {1.5f, 2.5f, 3, 3.5f, 7}}};
  for (const auto& [method, v] : want) {
    CAPTURE(method);
    std::vector<float> got = values(fx::quantile(x, q, std::nullopt, method));
    for (size_t k = 0; k < v.size(); ++k) CHECK(got[k] == doctest::Approx(v[k]).epsilon(1e-6));
  }
  fx::Array m = fx::zeros({3, 4});
  CHECK(fx::quantile(m, fx::array({0.1f, 0.5f}), 1).shape() == fx::Shape{2, 3});
  CHECK(fx::quantile(m, fx::array({0.1f, 0.5f}), 1, "linear", true).shape() == fx::Shape{2, 3, 1});
  CHECK(fx::quantile(m, 0.5, std::nullopt, "linear", true).shape() == fx::Shape{1, 1});
  CHECK(fx::median(fx::array({{1.f, kNaN}, {1.f, 2.f}}), 1).to_vector<float>()[1] == 1.5f);
  CHECK(std::isnan(fx::median(fx::array({{1.f, kNaN}, {1.f, 2.f}}), 1).to_vector<float>()[0]));
  CHECK(fx::percentile(fx::arange(101.f), 37.0).item<float>() == doctest::Approx(37.f));
  CHECK(error_of([] { (void)fx::quantile(fx::ones({3}), 1.5); }).find("ValueError: quantile") == 0);
  CHECK(error_of([] { (void)fx::quantile(fx::ones({3}), 0.5, 0, "cubic"); }).find("ValueError: quantile") == 0);
}

TEST_CASE("top_k and searchsorted: JAX's order with ties and NaN") {
  auto [v, i] = fx::top_k(fx::array({1.f, kNaN, 3.f, 3.f, -INFINITY, 2.f}), 4);
  std::vector<float> vs = values(v);
  CHECK(std::isnan(vs[0]));
  CHECK(std::vector<float>(vs.begin() + 1, vs.end()) == std::vector<float>{3, 3, 2});
  CHECK(i.to_vector<int>() == std::vector<int>{1, 2, 3, 5});
  CHECK(fx::top_k(fx::array({2, 5, 5, 1}), 3).second.to_vector<int>() == std::vector<int>{1, 2, 0});
  fx::Array edges = fx::array({1.f, 2.f, 2.f, 3.f, kNaN});
  CHECK(fx::searchsorted(edges, fx::array({2.f, kNaN, 0.f, 5.f})).to_vector<int>() == std::vector<int>{1, 4, 0, 4});
  CHECK(fx::searchsorted(edges, fx::array({2.f, kNaN, 0.f, 5.f}), "right").to_vector<int>() ==
        std::vector<int>{3, 5, 0, 4});
  CHECK(error_of([] { (void)fx::top_k(fx::ones({3}), 4); }).find("ValueError: top_k") == 0);
}

TEST_CASE("the rest of the numpy names: values numpy gives, written out") {
  CHECK(fx::log2(8.f).item<float>() == 3.f);
  CHECK(fx::log10(1000.f).item<float>() == doctest::Approx(3.f));
  CHECK(fx::hypot(3.f, 4.f).item<float>() == 5.f);
  CHECK(fx::hypot(1e30f, 1e30f).item<float>() == doctest::Approx(1.41421356e30f));  // the squares overflow
  CHECK(fx::isclose(fx::array({kNaN}), fx::array({kNaN}), 1e-5, 1e-8, true).to_vector<bool>()[0]);
  CHECK(bool(fx::allclose(fx::array({1.f, 2.f}), fx::array({1.f, 2.000001f}))));
  CHECK(!bool(fx::allclose(fx::array({1.f, 2.f}), fx::array({1.f, 2.1f}))));
  CHECK(fx::diag(fx::array({1, 2}), 1).to_vector<int>() == std::vector<int>{0, 1, 0, 0, 0, 2, 0, 0, 0});
  CHECK(fx::diagonal(fx::reshape(fx::arange(12), {3, 4}), -1).to_vector<int>() == std::vector<int>{4, 9});
  CHECK(fx::diagonal(fx::reshape(fx::arange(12), {3, 4}), 5).shape() == fx::Shape{0});
  CHECK(fx::trace(fx::reshape(fx::arange(12), {3, 4}), 1).item<int>() == 18);
  CHECK(fx::trace(fx::reshape(fx::arange(24), {2, 3, 4}), 0, 1, 2).to_vector<int>() == std::vector<int>{15, 51});
  CHECK(fx::kron(fx::array({{1, 2}, {3, 4}}), fx::array({1, 10})).to_vector<int>() ==
        std::vector<int>{1, 10, 2, 20, 3, 30, 4, 40});
  CHECK(fx::roll(fx::arange(5), -7).to_vector<int>() == std::vector<int>{2, 3, 4, 0, 1});
  CHECK(fx::roll(fx::reshape(fx::arange(6), {2, 3}), 1).to_vector<int>() == std::vector<int>{5, 0, 1, 2, 3, 4});
  CHECK(fx::repeat(fx::array({{1, 2}, {3, 4}}), fx::IntList{1, 2}, 0).to_vector<int>() ==
        std::vector<int>{1, 2, 3, 4, 3, 4});
  CHECK(fx::repeat(fx::array({{1, 2}, {3, 4}}), 2).to_vector<int>() == std::vector<int>{1, 1, 2, 2, 3, 3, 4, 4});
  CHECK(fx::tri(3, 4, 1).to_vector<float>() == std::vector<float>{1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1});
  // jax.lax's names through the umbrella header.
  CHECK(fx::lax::select(fx::array({true, false}), fx::ones({2}), fx::zeros({2})).to_vector<float>() ==
        std::vector<float>{1, 0});
}
