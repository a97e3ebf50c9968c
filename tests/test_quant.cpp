// int8 quantization and pruning (train/quant.h, train/prune.h; issue 33): the array functions
// against their formulas written out (round half to even, saturation, per channel), fake_quant's
// straight-through gradient, post-training quantization of an MLP and a padded convolution
// against the float function (and under jit), calibration errors, and magnitude / n:m pruning.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <vector>

#include "test_helpers.h"

namespace fx = fluxion;

struct QuantMlp {
  fx::nn::Linear l1, l2;
};
FLUXION_TREE(QuantMlp, l1, l2);
struct QuantNet {
  fx::nn::Conv conv;
  fx::nn::Linear head;
};
FLUXION_TREE(QuantNet, conv, head);
namespace {

using Mlp = QuantMlp;
using Net = QuantNet;

Mlp mlp_init() {
  auto [k1, k2] = fx::random::split(fx::random::key(7));
  return {fx::nn::Linear::init(k1, 64, 32), fx::nn::Linear::init(k2, 32, 10)};
}
fx::Array mlp_forward(const Mlp& p, const fx::Array& x) {
  return fx::nn::Linear::apply(p.l2, fx::nn::relu(fx::nn::Linear::apply(p.l1, x)));
}

double rel_err(const fx::Array& got, const fx::Array& want) {
  return test_helpers::max_abs_diff(got, want) / double(fx::max(fx::abs(want)).item<float>());
}

std::vector<fx::Array> batches(int n, const fx::Shape& shape, float offset, uint32_t seed) {
  std::vector<fx::Array> out;
  for (int i = 0; i < n; ++i) out.push_back(fx::random::normal(fx::random::key(seed + uint32_t(i)), shape) + offset);
  return out;
}

}  // namespace

TEST_CASE("quant: quantize_array rounds half to even, saturates, and goes per channel") {
  const fx::Array x = fx::array({-1.f, -0.5f, 0.f, 0.25f, 0.75f, 0.26f, 100.f, -100.f});
  // round(x / 0.5) + 3, clamped to int8: 0.25/0.5 = 0.5 -> 0 and 0.75/0.5 = 1.5 -> 2 (to even).
  const fx::Array q = fx::quant::quantize_array(x, 0.5f, 3.f);
  CHECK(q.dtype() == fx::int8);
  CHECK(q.to_vector<int8_t>() == std::vector<int8_t>{1, 2, 3, 3, 5, 4, 127, -128});
  const fx::Array u = fx::quant::quantize_array(x, 0.5f, 3.f, fx::uint8);
  CHECK(u.to_vector<uint8_t>() == std::vector<uint8_t>{1, 2, 3, 3, 5, 4, 203, 0});
  // Per channel along axis 1: column 0 scale 1, column 1 scale 0.1.
  const fx::Array m = fx::array({{1.f, 1.f}, {-2.f, 0.35f}});
  const fx::Array qc = fx::quant::quantize_array(m, fx::array({1.f, 0.1f}), fx::array({0.f, 0.f}), fx::int8, 1);
  CHECK(qc.to_vector<int8_t>() == std::vector<int8_t>{1, 10, -2, 4});  // 3.5 -> 4 (to even)
  const fx::Array back = fx::quant::dequantize_array(qc, fx::array({1.f, 0.1f}), fx::array({0.f, 0.f}), 1);
  CHECK(test_helpers::max_abs_diff(back, fx::array({{1.f, 1.f}, {-2.f, 0.4f}})) < 1e-6);
  // Wrong per-channel lengths name the op and the shapes.
  const std::string e = test_helpers::error_of<fx::ShapeError>(
      [&] { (void)fx::quant::quantize_array(m, fx::array({1.f, 2.f, 3.f}), fx::array({0.f, 0.f, 0.f}), fx::int8, 1); });
  CHECK_MESSAGE(e.find("quantize_array") != std::string::npos, e);
  CHECK_MESSAGE(e.find("f32[3]") != std::string::npos, e);
  CHECK(test_helpers::error_of<fx::TypeError>([&] { (void)fx::quant::quantize_array(x, 1.f, 0.f, fx::float16); })
            .find("not a quantized dtype") != std::string::npos);
}

TEST_CASE("quant: affine ranges keep zero exact; fake_quant's value and straight-through gradient") {
  const fx::quant::Affine a = fx::quant::affine_for_range(-0.3, 2.0);
  CHECK(a.scale == doctest::Approx(2.3 / 255).epsilon(1e-6));
  CHECK(fx::quant::dequantize_array(fx::quant::quantize_array(0.f, a.scale, float(a.zero_point)), a.scale,
                                    float(a.zero_point)).item<float>() == 0.f);
  const fx::Array x = fx::linspace(-1.f, 3.f, 41);
  const fx::Array fq = fx::quant::fake_quant(x, a.scale, float(a.zero_point));
  const fx::Array rt = fx::quant::dequantize_array(fx::quant::quantize_array(x, a.scale, float(a.zero_point)), a.scale,
                                                   float(a.zero_point));
  CHECK(test_helpers::max_abs_diff(fq, rt) < 1e-6);
  const fx::Array g = fx::grad([&](const fx::Array& v) { return fx::sum(fx::quant::fake_quant(v, a.scale, float(a.zero_point))); })(x);
  const float lo = (-128 - a.zero_point) * a.scale, hi = (127 - a.zero_point) * a.scale;
  const std::vector<float> xs = x.to_vector<float>(), gs = g.to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(xs[i]);
    CHECK(gs[i] == (xs[i] >= lo && xs[i] <= hi ? 1.f : 0.f));
  }
}

TEST_CASE("quant: post-training quantization of an MLP -- close to float, jit-able, 4x smaller weights") {
  const Mlp p = mlp_init();
  const std::vector<fx::Array> calib = batches(4, {32, 64}, 0.f, 100);
  const fx::quant::Stats stats = fx::quant::calibrate(mlp_forward, p, calib);
  CHECK(stats.ranges.size() == 2);
  const fx::quant::Quantized q = fx::quant::quantize(mlp_forward, p, stats);
  const fx::Array x = fx::random::normal(fx::random::key(999), {16, 64});
  const fx::Array want = mlp_forward(p, x), got = q(x);
  CHECK(got.aval() == want.aval());
  CHECK(rel_err(got, want) < 0.03);
  CHECK(rel_err(fx::jit(q)(x), got) < 1e-5);
  const std::string report = q.report();
  CHECK_MESSAGE(report.find("layer 1 dot_general: int8 x int8 -> int32") != std::string::npos, report);
  // Float parameters: 64*32 + 32 + 32*10 + 10 floats; quantized: int8 weights plus their scales,
  // corrections and the float biases.
  const int64_t float_bytes = (64 * 32 + 32 + 32 * 10 + 10) * 4;
  CHECK(q.parameter_bytes() * 3 < float_bytes);
  CHECK(q.parameter_bytes() > (64 * 32 + 32 * 10));
}

TEST_CASE("quant: a padded convolution with an affine activation -- the zero point's border terms") {
  auto [k1, k2] = fx::random::split(fx::random::key(3));
  const Net net{fx::nn::Conv::init(k1, 3, 8, {3, 3}), fx::nn::Linear::init(k2, 8 * 6 * 6, 5)};
  auto forward = [](const Net& n, const fx::Array& x) {
    const fx::Array h = fx::nn::relu(fx::nn::Conv::apply(n.conv, x, {1, 1}, "SAME"));
    return fx::nn::Linear::apply(n.head, fx::reshape(h, {x.shape()[0], 8 * 6 * 6}));
  };
  // Inputs centred at 1.5: the activation range is far from symmetric, its zero point far from 0.
  const fx::quant::Stats stats = fx::quant::calibrate(forward, net, batches(3, {4, 3, 6, 6}, 1.5f, 200));
  const fx::quant::Quantized q = fx::quant::quantize(forward, net, stats);
  const fx::Array x = fx::random::normal(fx::random::key(5), {4, 3, 6, 6}) + 1.5f;
  CHECK(rel_err(q(x), forward(net, x)) < 0.03);
  CHECK(q.report().find("conv_general_dilated: int8") != std::string::npos);
  // The input is padded with the zero point, so its correction is one float per output channel:
  // the parameters shrink to about a quarter (int8 weights, float scales, corrections and biases).
  const int64_t float_bytes = (8 * 3 * 9 + 8 + 8 * 6 * 6 * 5 + 5) * 4;
  CHECK(q.parameter_bytes() * 3.5 < float_bytes);
}

TEST_CASE("quant: calibration errors name the batch; unquantizable products stay float and say why") {
  const Mlp p = mlp_init();
  std::vector<fx::Array> calib = batches(3, {8, 64}, 0.f, 300);
  calib[1] = fx::where(fx::arange(64) == 5, NAN, calib[1]);
  const std::string e = test_helpers::error_of<fx::ValueError>([&] { (void)fx::quant::calibrate(mlp_forward, p, calib); });
  CHECK_MESSAGE(e.find("calibration batch 1") != std::string::npos, e);
  CHECK(test_helpers::error_of<fx::ValueError>([&] { (void)fx::quant::calibrate(mlp_forward, p, {}); })
            .find("no calibration batches") != std::string::npos);
  // A weight computed from the parameters is not a parameter: that product stays float.
  auto scaled = [](const Mlp& m, const fx::Array& x) { return fx::matmul(x, m.l1.weight * 2.f); };
  const fx::quant::Quantized q = fx::quant::quantize(scaled, p, fx::quant::calibrate(scaled, p, batches(1, {8, 64}, 0.f, 1)));
  CHECK(q.report().find("float (its weight (rhs) is not a parameter)") != std::string::npos);
  const fx::Array x = fx::ones({2, 64});
  CHECK(test_helpers::max_abs_diff(q(x), scaled(p, x)) < 1e-5);
}

TEST_CASE("prune: magnitude masks, global and per layer; n:m; the polynomial schedule") {
  const Mlp p = mlp_init();
  const Mlp half = fx::prune::magnitude(p, 0.5f);
  CHECK(fx::prune::weight_sparsity(half) == doctest::Approx(0.5).epsilon(1e-3));
  CHECK(test_helpers::max_abs_diff(half.l1.bias, p.l1.bias) == 0);  // vectors are kept
  // Global: the smallest magnitudes model-wide; every kept weight is at least every pruned one.
  const std::vector<float> w1 = p.l1.weight.to_vector<float>(), h1 = half.l1.weight.to_vector<float>();
  float kept_min = 1e9f, pruned_max = 0;
  for (size_t i = 0; i < w1.size(); ++i) {
    if (h1[i] == 0) pruned_max = std::max(pruned_max, std::abs(w1[i]));
    else kept_min = std::min(kept_min, std::abs(w1[i]));
  }
  CHECK(pruned_max <= kept_min);
  const Mlp layer = fx::prune::magnitude(p, 0.9f, fx::prune::Scope::per_layer);
  CHECK(fx::prune::weight_sparsity(Mlp{layer.l1, p.l2}) == doctest::Approx((0.9 * 2048 + 0) / (2048 + 320)).epsilon(1e-3));
  REQUIRE(p.l2.weight.shape()[1] == 10);
  CHECK_THROWS_AS((void)fx::prune::n_of_m_masks(p, 2, 4), fx::ValueError);  // l2's last axis 10: not a multiple of 4
  CHECK(fx::prune::polynomial_sparsity(0, 0, 100, 0.9f) == 0.f);
  CHECK(fx::prune::polynomial_sparsity(100, 0, 100, 0.9f) == doctest::Approx(0.9));
  CHECK(fx::prune::polynomial_sparsity(50, 0, 100, 0.8f) == doctest::Approx(0.8 - 0.8 * 0.125));
  CHECK_THROWS_AS((void)fx::prune::magnitude(p, 1.f), fx::ValueError);
}

TEST_CASE("prune: 2:4 keeps the two largest of every four along the last axis") {
  const fx::Array w = fx::array({{0.1f, -0.9f, 0.5f, 0.2f, 3.f, 2.f, -1.f, 0.f}});
  const fx::Array m = fx::prune::detail::n_of_m({w}, 2, 4)[0];
  CHECK(m.to_vector<float>() == std::vector<float>{0, 1, 1, 0, 1, 1, 0, 0});
}

struct FoldNet {
  fx::nn::Conv conv;
  fx::nn::BatchNorm bn;
  fx::nn::BatchNorm::State stats;
  fx::nn::Linear head;
};
FLUXION_TREE(FoldNet, conv, bn, stats, head);

TEST_CASE("quant: batch norm folded into the convolution -- the same float function, then quantized") {
  const fx::Array key = fx::random::key(21);
  auto normal = [&](uint32_t i, fx::Shape s) { return fx::random::normal(fx::random::fold_in(key, i), s); };
  // Statistics far from the identity (mean 0, var 1, scale 1), as after training.
  const FoldNet net{fx::nn::Conv::init(fx::random::fold_in(key, 1), 3, 8, {3, 3}),
                    fx::nn::BatchNorm{normal(2, {8}) * 0.5f + 1.f, normal(3, {8})},
                    fx::nn::BatchNorm::State{normal(4, {8}), fx::exp(normal(5, {8}))},
                    fx::nn::Linear::init(fx::random::fold_in(key, 6), 8 * 6 * 6, 5)};
  auto head = [](const fx::nn::Linear& l, const fx::Array& h) {
    return fx::nn::Linear::apply(l, fx::reshape(fx::nn::relu(h), {h.shape()[0], 8 * 6 * 6}));
  };
  auto unfolded = [&](const FoldNet& n, const fx::Array& x) {
    const fx::Array h = fx::nn::Conv::apply(n.conv, x, {1, 1}, "SAME");
    return head(n.head, fx::nn::BatchNorm::apply(n.bn, n.stats, h, /*training=*/false).first);
  };
  QuantNet folded{fx::quant::fold_batch_norm(net.conv, net.bn, net.stats), net.head};
  auto folded_forward = [&](const QuantNet& n, const fx::Array& x) {
    return head(n.head, fx::nn::Conv::apply(n.conv, x, {1, 1}, "SAME"));
  };
  const fx::Array x = fx::random::normal(fx::random::key(8), {4, 3, 6, 6});
  const fx::Array want = unfolded(net, x);
  CHECK(rel_err(folded_forward(folded, x), want) < 1e-5);
  const fx::quant::Quantized q =
      fx::quant::quantize(folded_forward, folded, fx::quant::calibrate(folded_forward, folded, batches(3, {4, 3, 6, 6}, 0.f, 9)));
  CHECK(rel_err(q(x), want) < 0.03);
  // One entry per output channel, or a ShapeError naming the function.
  const std::string e = test_helpers::error_of<fx::ShapeError>(
      [&] { (void)fx::quant::fold_batch_norm(net.conv, fx::nn::BatchNorm::init(4), fx::nn::BatchNorm::init_state(4)); });
  CHECK_MESSAGE(e.find("fold_batch_norm") != std::string::npos, e);
}

TEST_CASE("quant: a transposed convolution (input dilation) keeps the border-aware zero-point correction") {
  auto [k1, k2] = fx::random::split(fx::random::key(13));
  const fx::nn::ConvTranspose up = fx::nn::ConvTranspose::init(k1, 3, 4, {3, 3});
  auto forward = [](const fx::nn::ConvTranspose& p, const fx::Array& x) {
    return fx::nn::ConvTranspose::apply(p, x, {2, 2}, "SAME");
  };
  // Calibrated on x too: a value of x beyond the calibrated range would saturate (an error of
  // another kind than the one checked here).
  const fx::Array x = fx::random::normal(k2, {2, 3, 5, 5}) + 1.5f;
  std::vector<fx::Array> calib = batches(2, {2, 3, 5, 5}, 1.5f, 40);
  calib.push_back(x);
  const fx::quant::Quantized q = fx::quant::quantize(forward, up, fx::quant::calibrate(forward, up, calib));
  CHECK(q.report().find("conv_general_dilated: int8") != std::string::npos);
  CHECK(rel_err(q(x), forward(up, x)) < 0.03);
}
