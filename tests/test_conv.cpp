// Focused tests of the convolution family (prims/conv.cpp, prims/reduce_window.cpp, kernels/conv.cpp)
// and of the fx::nn compositions built on it (api/nn.cpp): bad input, the jit's GEMM paths against
// the reference kernel (forward and both gradients, each layout), and batch norm, layer norm, group
// norm, dropout, pooling and attention against hand-computed values and through grad, vmap and jit.
// The per-transform checks of the primitives are op-table entries (tests/op_table_conv.cpp).
#include <doctest/doctest.h>

#include <fluxion.h>

#include "tests/test_helpers.h"

#include <cmath>
#include <string>

#include "op_table.h"
#include "kernels/conv.h"
#include "kernels/pool.h"

namespace {
namespace fx = fluxion;
using test_helpers::max_abs_diff;
namespace rt = fluxion::runtime;

fx::Array wave(const fx::Shape& s, double phase, fx::DType d = fx::float32) {
  std::vector<double> v(size_t(s.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37 * double(i) + phase) + 0.1 * std::cos(1.3 * double(i));
  return fx::astype(fx::array(v, s), d);
}


// max |a - b| relative to the largest |b| (float32 sums of many terms).
double rel_diff(const fx::Array& a, const fx::Array& b) {
  auto y = fx::astype(b, fx::float64).to_vector<double>();
  double scale = 1e-30;
  for (double v : y) scale = std::max(scale, std::abs(v));
  return max_abs_diff(a, b) / scale;
}

// Runs `f`, expecting a ShapeError that names `op` and this file's line `line`.
template <class F>
void expect_shape_error(F f, const std::string& op, int line) {
  try {
    f();
    FAIL("no error");
  } catch (const fx::ShapeError& e) {
    const std::string msg = e.what();
    CAPTURE(msg);
    CHECK(msg.find(op) != std::string::npos);
    CHECK(msg.find("test_conv.cpp:" + std::to_string(line)) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("conv errors: mismatched features, a kernel larger than the padded input, bad strides") {
  const fx::Array x = wave({1, 3, 5, 5}, 0), w = wave({4, 2, 3, 3}, 1);
  expect_shape_error([&] { fx::conv_general_dilated(x, w, {1, 1}, "SAME"); }, "conv_general_dilated", __LINE__);
  const fx::Array w3 = wave({4, 3, 7, 3}, 1);
  expect_shape_error([&] { fx::conv_general_dilated(x, w3, {1, 1}, "VALID"); }, "conv_general_dilated", __LINE__);
  CHECK(fx::conv_general_dilated(x, w3, {1, 1}, {{1, 1}, {0, 0}}).shape() == fx::Shape{1, 4, 1, 3});
  expect_shape_error([&] { fx::conv_general_dilated(x, w3, {-1, 1}, {{1, 1}, {0, 0}}); }, "conv_general_dilated", __LINE__);
  expect_shape_error([&] { fx::conv_general_dilated(x, w3, {1}, {{1, 1}, {0, 0}}); }, "conv_general_dilated", __LINE__);
  expect_shape_error([&] { fx::reduce_window_max(x, {1, 1, 2, 2}, {1, 1, 0, 2}, "VALID"); }, "reduce_window_max", __LINE__);
  // Under tracing the error names the same line.
  auto traced = [&] { fx::make_ir([&](const fx::Array& a) { return fx::conv_general_dilated(a, w, {1, 1}, "SAME"); })(x); };
  expect_shape_error(traced, "conv_general_dilated", __LINE__ - 1);
  CHECK_THROWS_AS(fx::conv_dimension_numbers("NCHW", "OIHW", "NCH"), fx::ValueError);
}

TEST_CASE("conv dimension numbers: layout strings as jax.lax.conv_dimension_numbers") {
  fx::ConvDimensionNumbers dn = fx::conv_dimension_numbers("NHWC", "HWIO", "NCHW");
  CHECK(dn.lhs_spec == fx::IntList{0, 3, 1, 2});
  CHECK(dn.rhs_spec == fx::IntList{3, 2, 0, 1});
  CHECK(dn.out_spec == fx::IntList{0, 1, 2, 3});
  // SAME keeps ceil(in / stride), the odd pixel of padding going last.
  const fx::Array y = fx::conv_general_dilated(wave({2, 3, 7, 8}, 0), wave({5, 3, 2, 3}, 1), {2, 3}, "SAME");
  CHECK(y.shape() == fx::Shape{2, 5, 4, 3});
}

// The jit's library call against the reference kernel: forward, input gradient and kernel gradient,
// in each layout the GEMM paths treat differently, and with groups.
TEST_CASE("conv jit: the GEMM paths equal the reference kernel, forward and both gradients") {
  struct Case {
    const char* label;
    fx::Shape x, w;
    fx::IntList strides;
    const char* lhs;
    const char* rhs;
    const char* out;
    int64_t groups;
  };
  const Case cases[] = {
      {"NCHW 3x3 SAME", {4, 8, 10, 10}, {16, 8, 3, 3}, {1, 1}, "NCHW", "OIHW", "NCHW", 1},
      {"NHWC stride 2", {3, 9, 11, 6}, {3, 3, 6, 8}, {2, 2}, "NHWC", "HWIO", "NHWC", 1},
      {"NCHW groups 2 stride 2", {2, 8, 9, 9}, {6, 4, 3, 3}, {2, 1}, "NCHW", "OIHW", "NCHW", 2},
  };
  for (const Case& c : cases) {
    CAPTURE(c.label);
    const fx::Array x = wave(c.x, 0.3), w = wave(c.w, 1.1);
    const auto dn = fx::conv_dimension_numbers(c.lhs, c.rhs, c.out);
    auto f = [&](const fx::Array& a, const fx::Array& b) {
      return fx::conv_general_dilated(a, b, c.strides, "SAME", {}, {}, dn, c.groups);
    };
    auto loss = [&](const std::vector<fx::Array>& p) { return fx::sum(fx::square(f(p[0], p[1]))); };
    const uint64_t gemm_before = rt::conv_runs(rt::ConvAlgorithm::im2col) + rt::conv_runs(rt::ConvAlgorithm::im2col_by_feature);
    const fx::Array y_jit = fx::jit(f)(x, w);
    const std::vector<fx::Array> g_jit = fx::jit(fx::grad(loss))(std::vector<fx::Array>{x, w});
    CHECK(rt::conv_runs(rt::ConvAlgorithm::im2col) + rt::conv_runs(rt::ConvAlgorithm::im2col_by_feature) >= gemm_before + 3);
    const fx::Array y = f(x, w);
    const std::vector<fx::Array> g = fx::grad(loss)(std::vector<fx::Array>{x, w});
    CHECK(rel_diff(y_jit, y) < 1e-5);
    CHECK(rel_diff(g_jit[0], g[0]) < 1e-5);
    CHECK(rel_diff(g_jit[1], g[1]) < 1e-5);
  }
  // The kernel gradient of the benchmark's shape family takes the by-feature form.
  const uint64_t by_feature = rt::conv_runs(rt::ConvAlgorithm::im2col_by_feature);
  const fx::Array x = wave({8, 4, 12, 12}, 0), w = wave({4, 4, 3, 3}, 1);
  auto kernel_loss = [&](const fx::Array& k) { return fx::sum(fx::conv_general_dilated(x, k, {1, 1}, "SAME")); };
  CHECK(rel_diff(fx::jit(fx::grad(kernel_loss))(w), fx::grad(kernel_loss)(w)) < 1e-5);
  CHECK(rt::conv_runs(rt::ConvAlgorithm::im2col_by_feature) > by_feature);
}

TEST_CASE("max pool gradient: the whole cotangent goes to each window's first maximum") {
  const fx::Array x = fx::array(std::vector<double>{1, 5, 2, 5, 0, 3, 3, 1}, fx::Shape{2, 4});
  auto f = [](const fx::Array& a) { return fx::sum(fx::multiply(fx::nn::max_pool(a, {2}, {1}), fx::array({1.0, 10.0, 100.0}))); };
  // Row 0 windows [1 5] [5 2] [2 5]: maxima at 1, 1, 3. Row 1 windows [0 3] [3 3] [3 1]: at 1, 1, 2.
  const std::vector<double> want{0, 11, 0, 100, 0, 11, 100, 0};
  CHECK(fx::grad(f)(x).to_vector<double>() == want);
  CHECK(fx::jit(fx::grad(f))(x).to_vector<double>() == want);
}

TEST_CASE("nn batch norm: training statistics, running averages, inference") {
  // Features along axis 1: feature 0 holds 1, 3, 5, 7 and feature 1 holds 2, 2, 2, 6.
  const fx::Array x = fx::array(std::vector<double>{1, 2, 3, 2, 5, 2, 7, 6}, fx::Shape{4, 2});
  const fx::Array scale = fx::array({2.0, 1.0}), bias = fx::array({0.5, -1.0});
  const fx::Array rm = fx::array({0.0, 1.0}), rv = fx::array({1.0, 1.0});
  fx::nn::BatchNormResult r = fx::nn::batch_norm(x, scale, bias, rm, rv, /*training=*/true, 0.9, 0.0);
  // Feature 0: mean 4, variance 5; feature 1: mean 3, variance 3.
  const std::vector<double> y = r.out.to_vector<double>();
  CHECK(y[0] == doctest::Approx(2 * (1 - 4) / std::sqrt(5.0) + 0.5));
  CHECK(y[7] == doctest::Approx((6 - 3) / std::sqrt(3.0) - 1));
  CHECK(r.running_mean.to_vector<double>()[0] == doctest::Approx(0.4));
  CHECK(r.running_mean.to_vector<double>()[1] == doctest::Approx(1.2));
  CHECK(r.running_var.to_vector<double>()[0] == doctest::Approx(0.9 + 0.5));
  fx::nn::BatchNormResult inf = fx::nn::batch_norm(x, scale, bias, rm, rv, /*training=*/false, 0.9, 0.0);
  CHECK(inf.out.to_vector<double>()[1] == doctest::Approx((2 - 1) - 1.0));
  CHECK(inf.running_mean.to_vector<double>() == rm.to_vector<double>());
  // Through jit and grad: the running statistics carry no gradient, the output does.
  auto loss = [&](const fx::Array& a) {
    fx::nn::BatchNormResult b = fx::nn::batch_norm(a, scale, bias, rm, rv, true);
    return fx::add(fx::sum(fx::multiply(b.out, a)), fx::sum(b.running_mean));
  };
  CHECK(max_abs_diff(fx::jit(fx::grad(loss))(x), fx::grad(loss)(x)) < 1e-12);
}

TEST_CASE("nn layer norm and group norm: against the normalisation written out") {
  const fx::Array x = wave({2, 4, 3}, 0.2, fx::float64);
  const fx::Array ln = fx::nn::layer_norm(x, fx::ones({3}), fx::zeros({3}), -1, 1e-5);
  const std::vector<double> xv = x.to_vector<double>(), lv = ln.to_vector<double>();
  for (size_t row = 0; row < 8; ++row) {
    const double m = (xv[3 * row] + xv[3 * row + 1] + xv[3 * row + 2]) / 3;
    double v = 0;
    for (size_t j = 0; j < 3; ++j) v += (xv[3 * row + j] - m) * (xv[3 * row + j] - m) / 3;
    for (size_t j = 0; j < 3; ++j) CHECK(lv[3 * row + j] == doctest::Approx((xv[3 * row + j] - m) / std::sqrt(v + 1e-5)));
  }
  // group norm with one feature per group is instance norm; with every feature in one group, layer
  // norm over (C, spatial).
  const fx::Array g1 = fx::nn::group_norm(x, 1, fx::ones({4}), fx::zeros({4}), 1e-5);
  CHECK(max_abs_diff(g1, fx::nn::layer_norm(x, fx::ones({4, 3}), fx::zeros({4, 3}), 1, 1e-5)) < 1e-12);
  const fx::Array g4 = fx::nn::group_norm(x, 4, fx::ones({4}), fx::zeros({4}), 1e-5);
  CHECK(max_abs_diff(g4, ln) < 1e-12);
  // vmap over the batch equals the per-example call; jit equals eager.
  auto per_example = [](const fx::Array& a) { return fx::nn::layer_norm(a, fx::ones({3}), fx::zeros({3})); };
  CHECK(max_abs_diff(fx::vmap(per_example)(x), per_example(x)) < 1e-12);
  auto gn = [](const fx::Array& a) { return fx::nn::group_norm(a, 2, fx::full({4}, 1.5), fx::full({4}, 0.25)); };
  CHECK(max_abs_diff(fx::jit(gn)(x), gn(x)) < 1e-12);
}

TEST_CASE("nn dropout: deterministic per key, scales what it keeps, identity in inference") {
  const fx::Array x = fx::ones({1000});
  const fx::Array k = fx::random::key(3);
  const fx::Array a = fx::nn::dropout(k, x, 0.25), b = fx::nn::dropout(k, x, 0.25);
  CHECK(max_abs_diff(a, b) == 0);
  int kept = 0;
  for (double v : a.to_vector<float>()) {
    CHECK((v == 0 || std::abs(v - 1 / 0.75) < 1e-6));
    kept += v != 0;
  }
  CHECK(kept > 700);
  CHECK(kept < 800);
  CHECK(max_abs_diff(fx::nn::dropout(k, x, 0.25, /*training=*/false), x) == 0);
  CHECK(max_abs_diff(fx::jit([&](const fx::Array& y) { return fx::nn::dropout(k, y, 0.25); })(x), a) == 0);
}

TEST_CASE("nn dot-product attention: one head written out, causal masking, jit and grad") {
  // T = 2 queries, S = 3 keys, one head, H = 2.
  const fx::Array q = fx::array(std::vector<double>{1, 0, 0, 1}, fx::Shape{2, 1, 2});
  const fx::Array k = fx::array(std::vector<double>{1, 0, 0, 1, 1, 1}, fx::Shape{3, 1, 2});
  const fx::Array v = fx::array(std::vector<double>{1, 2, 3, 4, 5, 6}, fx::Shape{3, 1, 2});
  const fx::Array out = fx::nn::dot_product_attention(q, k, v, std::nullopt, 1.0);
  // Query 0 scores keys (1, 0, 1); query 1 scores (0, 1, 1).
  const double e = std::exp(1.0), z0 = 2 * e + 1;
  const std::vector<double> got = out.to_vector<double>();
  CHECK(got[0] == doctest::Approx((e * 1 + 3 + e * 5) / z0));
  CHECK(got[3] == doctest::Approx((2 + e * 4 + e * 6) / z0));
  // Causal: query 0 sees key 0 only, query 1 keys 0 and 1.
  const std::vector<double> causal = fx::nn::dot_product_attention(q, k, v, std::nullopt, 1.0, true).to_vector<double>();
  CHECK(causal[0] == doctest::Approx(1));
  CHECK(causal[3] == doctest::Approx((2 + e * 4) / (1 + e)));
  auto loss = [&](const fx::Array& qq) { return fx::sum(fx::nn::dot_product_attention(qq, k, v, std::nullopt, std::nullopt, true)); };
  CHECK(max_abs_diff(fx::jit(fx::grad(loss))(q), fx::grad(loss)(q)) < 1e-12);
}

TEST_CASE("conv mixed precision: bfloat16 operands accumulate in float32, to a float32 output when asked") {
  const fx::Array x = wave({2, 8, 9, 9}, 0.5, fx::bfloat16), w = wave({8, 8, 3, 3}, 0.7, fx::bfloat16);
  auto f = [](const fx::Array& a, const fx::Array& k) {
    return fx::conv_general_dilated(a, k, {1, 1}, "SAME", {}, {}, std::nullopt, 1, 1, fx::float32);
  };
  const fx::Array want = fx::conv_general_dilated(fx::astype(x, fx::float32), fx::astype(w, fx::float32), {1, 1}, "SAME");
  const fx::Array eager = f(x, w), compiled = fx::jit(f)(x, w);
  CHECK(eager.dtype() == fx::float32);
  CHECK(compiled.dtype() == fx::float32);
  CHECK(rel_diff(eager, want) < 1e-6);
  CHECK(rel_diff(compiled, want) < 1e-6);
  // Without the preference the output is bfloat16: the float32 sums rounded once.
  auto g = [](const fx::Array& a, const fx::Array& k) { return fx::conv_general_dilated(a, k, {1, 1}, "SAME"); };
  CHECK(rel_diff(fx::jit(g)(x, w), fx::astype(want, fx::bfloat16)) < 1e-2);
  CHECK(rel_diff(fx::jit(g)(x, w), g(x, w)) < 1e-2);
}

// The jit's strided pooling loops (kernels/pool.cpp) against the reference kernels, bit for bit:
// forward, JVP (select_and_gather_add) and gradient (select_and_scatter_add) over NCHW and NHWC
// windows, overlapping windows, padding and both dilations, with ties, NaN and -inf in the data
// (the first maximum, the NaN rule and the scatter's sums must be the reference's exactly).
TEST_CASE("pool jit: the strided loops equal the reference kernels, ties and NaN included") {
  struct Case {
    const char* label;
    fx::Shape x;
    fx::IntList window, strides;
    std::vector<std::pair<int64_t, int64_t>> pad;
    fx::IntList base_dil, window_dil;
  };
  const Case cases[] = {
      {"NCHW 2x2/2", {2, 3, 6, 8}, {1, 1, 2, 2}, {1, 1, 2, 2}, {{0, 0}, {0, 0}, {0, 0}, {0, 0}}, {1, 1, 1, 1}, {1, 1, 1, 1}},
      {"NCHW 3x3/2 padded", {2, 2, 7, 9}, {1, 1, 3, 3}, {1, 1, 2, 2}, {{0, 0}, {0, 0}, {1, 1}, {1, 1}}, {1, 1, 1, 1}, {1, 1, 1, 1}},
      {"NHWC 3x3/2 padded", {2, 7, 6, 5}, {1, 3, 3, 1}, {1, 2, 2, 1}, {{0, 0}, {1, 1}, {1, 0}, {0, 0}}, {1, 1, 1, 1}, {1, 1, 1, 1}},
      {"dilations, overlapping", {3, 9, 8}, {1, 2, 3}, {1, 1, 2}, {{0, 0}, {1, 0}, {1, 2}}, {1, 1, 2}, {1, 2, 1}},
      {"window over every dim", {5, 6}, {2, 3}, {1, 2}, {{1, 0}, {0, 1}}, {1, 1}, {1, 1}},
  };
  for (const Case& c : cases) {
    for (fx::DType d : {fx::float32, fx::bfloat16, fx::float64}) {
      CAPTURE(c.label);
      CAPTURE(fx::dtype_name(d));
      // Values from a small set (ties), with a NaN and a -inf somewhere.
      std::vector<double> v(size_t(c.x.numel()));
      for (size_t i = 0; i < v.size(); ++i) v[i] = double((i * 7) % 5) - 2.0;
      v[v.size() / 3] = NAN;
      v[v.size() / 2] = -INFINITY;
      const fx::Array x = fx::astype(fx::array(v, c.x), d), t = wave(c.x, 0.7, d);
      const fx::Padding pad(c.pad);
      auto pool = [&](const fx::Array& a) { return fx::reduce_window_max(a, c.window, c.strides, pad, c.base_dil, c.window_dil); };
      auto minpool = [&](const fx::Array& a) { return fx::reduce_window_min(a, c.window, c.strides, pad, c.base_dil, c.window_dil); };
      auto sumpool = [&](const fx::Array& a) { return fx::reduce_window_sum(a, c.window, c.strides, pad, c.base_dil, c.window_dil); };
      auto jvp = [&](const fx::Array& a, const fx::Array& da) { return fx::jvp(pool, std::tuple{a}, std::tuple{da}).second; };
      const fx::Array s = wave(pool(x).shape(), 1.9, d);
      auto vjp = [&](const fx::Array& a, const fx::Array& ct) { return fx::vjp(minpool, a).second(ct); };
      auto same = [](const fx::Array& a, const fx::Array& b) {  // equal bits, NaN where NaN
        auto p = fx::astype(a, fx::float64).to_vector<double>(), q = fx::astype(b, fx::float64).to_vector<double>();
        for (size_t i = 0; i < p.size(); ++i)
          if (!(p[i] == q[i] || (std::isnan(p[i]) && std::isnan(q[i])))) return false;
        return p.size() == q.size();
      };
      const uint64_t before = rt::fast_window_runs();
      CHECK(same(fx::jit(pool)(x), pool(x)));
      CHECK(same(fx::jit(minpool)(x), minpool(x)));
      CHECK(same(fx::jit(sumpool)(t), sumpool(t)));
      CHECK(same(fx::jit(jvp)(x, t), jvp(x, t)));
      CHECK(same(fx::jit(vjp)(x, s), vjp(x, s)));
      CHECK(rt::fast_window_runs() >= before + 5);
    }
  }
  // Integers take the loops too (max and sum); their sums wrap as the reference's do.
  const fx::Array xi = fx::astype(fx::array(std::vector<double>{3, -1, 7, 7, 2, 9, -4, 0, 5, 1, 8, 6}, fx::Shape{3, 4}), fx::int32);
  auto ipool = [](const fx::Array& a) { return fx::reduce_window_max(a, {2, 2}, {1, 2}, "VALID"); };
  CHECK(fx::jit(ipool)(xi).to_vector<int32_t>() == ipool(xi).to_vector<int32_t>());
}
