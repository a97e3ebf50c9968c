// Mixed precision: policies parse and cast trees; the dynamic loss scale grows after `period`
// finite steps, shrinks and skips the step on overflow -- checked in a jitted float16 step.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <vector>

namespace fx = fluxion;
namespace mp = fx::mixed_precision;

TEST_CASE("mixed precision: policies parse and cast float leaves only") {
  auto p = mp::policy("params=float32,compute=bfloat16,output=float32");
  CHECK(p.param_dtype == fx::float32);
  CHECK(p.compute_dtype == fx::bfloat16);
  CHECK(mp::policy("compute=half").compute_dtype == fx::float16);
  CHECK(mp::policy("c=f16,o=f16").output_dtype == fx::float16);
  CHECK_THROWS_AS(mp::policy("compute=int8"), fx::ValueError);
  CHECK_THROWS_AS(mp::policy("speed=float16"), fx::ValueError);
  CHECK_THROWS_AS(mp::policy("float16"), fx::ValueError);
  std::pair<fx::Array, fx::Array> tree{fx::ones({2}), fx::array({1, 2})};
  auto cast = p.cast_to_compute(tree);
  CHECK(cast.first.dtype() == fx::bfloat16);
  CHECK(cast.second.dtype() == fx::int32);
  CHECK(p.cast_to_param(cast).first.dtype() == fx::float32);
}

TEST_CASE("mixed precision: a bfloat16 compute policy trains a Linear layer with float32 master weights") {
  auto policy = mp::policy("params=float32,compute=bfloat16,output=float32");
  auto lin = fx::nn::Linear::init(fx::random::key(0), 4, 1);
  fx::Array x = fx::random::normal(fx::random::key(1), {64, 4});
  fx::Array y = fx::sum(x * fx::array({1.f, -2.f, 0.5f, 3.f}), {1}, true);
  auto loss = [&](const fx::nn::Linear& p) {
    fx::Array out = policy.cast_to_output(fx::nn::Linear::apply(policy.cast_to_compute(p), policy.cast_to_compute(x)));
    return fx::nn::mse(out, y);
  };
  auto opt = fx::optim::adam(0.05);
  auto step = fx::jit([&](const fx::nn::Linear& p, const fx::optim::State& s) {
    auto [l, g] = fx::value_and_grad(loss)(p);
    auto [u, next] = opt.update(g, s, p);
    return std::tuple{fx::optim::apply_updates(p, u), next, l};
  });
  auto state = opt.init(lin);
  float first = 0, last = 0;
  for (int i = 0; i < 150; ++i) {
    fx::Array l;
    std::tie(lin, state, l) = step(lin, state);
    (i == 0 ? first : last) = l.item<float>();
  }
  CHECK(lin.weight.dtype() == fx::float32);  // master weights stay float32
  CHECK(last < first * 0.02f);
}

TEST_CASE("mixed precision: dynamic loss scale grows, shrinks, and skips float16 overflow steps under jit") {
  // Growth: period 2, factor 2.
  auto s = mp::dynamic_loss_scale(4.0, 2, 2.0);
  fx::Array yes = fx::scalar(true), no = fx::scalar(false);
  s = s.adjust(yes);
  CHECK(s.loss_scale.item<float>() == 4.f);
  CHECK(s.counter.item<int32_t>() == 1);
  s = s.adjust(yes);
  CHECK(s.loss_scale.item<float>() == 8.f);
  CHECK(s.counter.item<int32_t>() == 0);
  s = s.adjust(no);
  CHECK(s.loss_scale.item<float>() == 4.f);
  CHECK(mp::dynamic_loss_scale(1.0).adjust(no).loss_scale.item<float>() == 1.f);  // not below min_scale

  // A float16 model whose scaled loss overflows at the initial scale 2^24: steps are skipped (the
  // parameters stay put) and the scale halves until the gradients are finite again.
  fx::Array w0 = fx::array({0.5f, -0.25f, 1.f});
  fx::Array x = fx::array({3.f, 2.f, 1.f});
  auto loss = [&](const fx::Array& w) { return fx::sum(fx::square(fx::astype(w, fx::float16) * fx::astype(x, fx::float16))); };
  auto step = fx::jit([&](const fx::Array& w, const mp::DynamicLossScale& scaler) {
    fx::Array g = scaler.unscale(fx::grad([&](const fx::Array& p) { return fx::astype(scaler.scale(loss(p)), fx::float32); })(w));
    fx::Array finite = mp::all_finite(g);
    fx::Array stepped = w - g * 0.01f;
    return std::tuple{mp::select_tree(finite, stepped, w), scaler.adjust(finite), finite};
  });
  auto scaler = mp::dynamic_loss_scale(std::ldexp(1.0, 24), 2000, 2.0);
  fx::Array w = w0;
  int skipped = 0;
  for (int i = 0; i < 30; ++i) {
    fx::Array finite;
    float before = scaler.loss_scale.item<float>();
    std::tie(w, scaler, finite) = step(w, scaler);
    if (!finite.item<bool>()) {
      ++skipped;
      CHECK(scaler.loss_scale.item<float>() == before / 2);
    }
  }
  // loss = 2.25 + 0.25 + 1 = 3.5 and its gradient at most 9: the scaled values fit float16
  // (max 65504) from a scale of about 2^12 down, so roughly a dozen steps were skipped.
  CHECK(skipped >= 8);
  CHECK(skipped <= 14);
  CHECK(step.compilations() == 1);
  std::vector<float> wv = w.to_vector<float>();
  CHECK(std::abs(wv[0]) < 0.5f);  // the later steps trained
  for (float v : wv) CHECK(std::isfinite(v));
}

// preferred_element_type: bfloat16 operands whose exact product sum (1 + 2^-8) a bfloat16 result
// cannot hold (its spacing at 1 is 2^-7): the float32 result keeps it, eagerly, under jit, and the
// gradients come back in the operands' dtype.
TEST_CASE("mixed precision: matmul with preferred_element_type accumulates and returns float32") {
  const fx::Array a = fx::astype(fx::array(std::vector<float>{1.f, 1.f}, fx::Shape{1, 2}), fx::bfloat16);
  const fx::Array b = fx::astype(fx::array(std::vector<float>{1.f, 1.f / 256}, fx::Shape{2, 1}), fx::bfloat16);
  const fx::Array wide = fx::matmul(a, b, fx::float32);
  CHECK(wide.dtype() == fx::float32);
  CHECK(wide.to_vector<float>()[0] == 1.f + 1.f / 256);
  CHECK(fx::matmul(a, b).to_vector<float>()[0] == 1.f);  // rounded to bfloat16
  auto f = [](const fx::Array& x, const fx::Array& y) { return fx::matmul(x, y, fx::float32); };
  CHECK(fx::jit(f)(a, b).to_vector<float>()[0] == 1.f + 1.f / 256);
  CHECK(fx::dot(fx::reshape(a, {2}), b, fx::float32).to_vector<float>()[0] == 1.f + 1.f / 256);
  auto [ga, gb] = fx::grad<0, 1>([&](const fx::Array& x, const fx::Array& y) { return fx::sum(f(x, y)); })(a, b);
  CHECK(ga.dtype() == fx::bfloat16);
  CHECK(gb.dtype() == fx::bfloat16);
  CHECK(ga.to_vector<float>() == std::vector<float>{1.f, 1.f / 256});
  CHECK(gb.to_vector<float>() == std::vector<float>{1.f, 1.f});
}
