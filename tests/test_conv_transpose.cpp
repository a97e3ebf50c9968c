// fx::nn::ConvTranspose (train/layers.h): JAX's lax.conv_transpose answers written out, a host loop
// of the definition (the input dilated by the strides, padded, correlated with the kernel) for
// several channels, both layouts, gradients against finite differences, vmap against a loop, jit.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <string>
#include <vector>

namespace fx = fluxion;

namespace {
// The definition, channels first: x [N, C, H, W], w [O, C, KH, KW], strides s, kernel dilation d,
// padding (lo, hi) of the dilated input per spatial dim.
std::vector<double> reference(const std::vector<double>& x, fx::Shape xs, const std::vector<double>& w, fx::Shape ws,
                              int64_t sh, int64_t sw, int64_t dh, int64_t dw, std::pair<int64_t, int64_t> ph,
                              std::pair<int64_t, int64_t> pw, fx::Shape* out_shape) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], KH = ws[2], KW = ws[3];
  const int64_t Hd = (H - 1) * sh + 1, Wd = (W - 1) * sw + 1;
  const int64_t OH = Hd + ph.first + ph.second - ((KH - 1) * dh + 1) + 1;
  const int64_t OW = Wd + pw.first + pw.second - ((KW - 1) * dw + 1) + 1;
  *out_shape = fx::Shape{N, O, OH, OW};
  std::vector<double> out(size_t(N * O * OH * OW), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t p = 0; p < OH; ++p)
        for (int64_t q = 0; q < OW; ++q) {
          double acc = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t r = p + kh * dh - ph.first, t = q + kw * dw - pw.first;  // in the dilated input
                if (r < 0 || t < 0 || r >= Hd || t >= Wd || r % sh || t % sw) continue;
                acc += x[size_t(((n * C + c) * H + r / sh) * W + t / sw)] * w[size_t(((o * C + c) * KH + kh) * KW + kw)];
              }
          out[size_t(((n * O + o) * OH + p) * OW + q)] = acc;
        }
  return out;
}

std::vector<double> ramp(int64_t n, double scale, double offset) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(std::sin(double(i) * scale + offset));
  return v;
}
}  // namespace

TEST_CASE("ConvTranspose: jax.lax.conv_transpose's answers, SAME and VALID, channels last") {
  // x NHWC [1, 2, 3, 1] = 1..6, w HWIO [3, 2, 1, 1] = 1..6, strides (2, 2): JAX's outputs.
  fx::nn::ConvTranspose ct{fx::reshape(fx::arange(1.0, 7.0, 1.0, fx::float64), {3, 2, 1, 1}), fx::zeros({1}, fx::float64), true};
  fx::Array x = fx::reshape(fx::arange(1.0, 7.0, 1.0, fx::float64), {1, 2, 3, 1});
  fx::Array same = fx::nn::ConvTranspose::apply(ct, x, {2, 2}, "SAME");
  CHECK(same.shape() == fx::Shape{1, 4, 6, 1});
  CHECK(same.to_vector<double>() == std::vector<double>{6, 5, 12, 10, 18, 15, 4, 3, 8, 6, 12, 9,
                                                        26, 21, 34, 27, 42, 33, 16, 12, 20, 15, 24, 18});
  fx::Array valid = fx::nn::ConvTranspose::apply(ct, x, {2, 2}, "VALID");
  CHECK(valid.shape() == fx::Shape{1, 5, 6, 1});
  const std::vector<double> all = valid.to_vector<double>();
  std::vector<double> last(all.end() - 6, all.end());
  CHECK(last == std::vector<double>{8, 4, 10, 5, 12, 6});
  fx::Array dilated = fx::nn::ConvTranspose::apply(ct, x, {1, 2}, "same", {2, 1});
  CHECK(dilated.to_vector<double>() == std::vector<double>{4, 3, 8, 6, 12, 9, 16, 12, 20, 15, 24, 18});
}

TEST_CASE("ConvTranspose: channels first against the definition, with several channels and a bias") {
  const fx::Shape xs{2, 3, 3, 4}, ws{2, 3, 2, 3};
  std::vector<double> xv = ramp(xs.numel(), 0.7, 0.1), wv = ramp(ws.numel(), 1.3, 0.5);
  fx::nn::ConvTranspose ct{fx::array(wv, ws), fx::array({0.5, -1.0}), false};
  struct Case {
    fx::IntList strides, dilation;
    fx::Padding padding;
    std::pair<int64_t, int64_t> ph, pw;
  };
  // (k, s) = (2, 2) and (3, 3) under SAME: k - 1 before; VALID: k - 1 before, k + s - 2 + max(k - s, 0) in all.
  const std::vector<Case> cases = {
      {{2, 3}, {1, 1}, "SAME", {1, 1}, {2, 2}},
      {{2, 3}, {1, 1}, "VALID", {1, 1}, {2, 2}},
      {{1, 1}, {1, 1}, "SAME", {1, 0}, {1, 1}},  // stride 1: (k - 1) split, the larger half first
      {{2, 1}, {2, 1}, "SAME", {2, 1}, {1, 1}},  // dilated kernel: k = 3 along H
      {{2, 2}, {1, 1}, fx::Padding({{0, 1}, {2, 0}}), {0, 1}, {2, 0}},
  };
  for (const Case& c : cases) {
    fx::Array y = fx::nn::ConvTranspose::apply(ct, fx::array(xv, xs), c.strides, c.padding, c.dilation);
    fx::Shape want_shape;
    std::vector<double> want = reference(xv, xs, wv, ws, c.strides[0], c.strides[1], c.dilation[0], c.dilation[1],
                                         c.ph, c.pw, &want_shape);
    for (size_t i = 0; i < want.size(); ++i) want[i] += i / size_t(want_shape[2] * want_shape[3]) % 2 ? -1.0 : 0.5;
    REQUIRE(y.shape() == want_shape);
    std::vector<double> got = y.to_vector<double>();
    for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-12));
  }
  // SAME upsamples by exactly the stride.
  CHECK(fx::nn::ConvTranspose::apply(ct, fx::array(xv, xs), {2, 3}).shape() == fx::Shape{2, 2, 6, 12});
}

TEST_CASE("ConvTranspose: init, gradients against finite differences, vmap and jit") {
  auto ct = fx::nn::ConvTranspose::init(fx::random::key(0), 2, 3, {3, 3}, false, std::nullopt, fx::nn::initializers::zeros(),
                                        fx::float64);
  CHECK(ct.weight.shape() == fx::Shape{3, 2, 3, 3});
  CHECK(ct.bias.shape() == fx::Shape{3});
  fx::Array x = fx::reshape(fx::sin(fx::arange(0.0, 32.0, 1.0, fx::float64)), {1, 2, 4, 4});
  auto loss = [&](const fx::nn::ConvTranspose& p, const fx::Array& in) {
    return fx::sum(fx::square(fx::nn::ConvTranspose::apply(p, in, {2, 2})));
  };
  auto [gp, gx] = fx::grad<0, 1>(loss)(ct, x);
  const double h = 1e-6;
  for (int64_t k : {0, 7, 30}) {
    fx::Array e = fx::reshape(fx::astype(fx::equal(fx::arange(32), int(k)), fx::float64), {1, 2, 4, 4});
    const double fd = (loss(ct, x + h * e).item<double>() - loss(ct, x - h * e).item<double>()) / (2 * h);
    CHECK(gx.to_vector<double>()[size_t(k)] == doctest::Approx(fd).epsilon(1e-6));
  }
  fx::Array ew = fx::reshape(fx::astype(fx::equal(fx::arange(54), 20), fx::float64), {3, 2, 3, 3});
  fx::nn::ConvTranspose up = ct, down = ct;
  up.weight = ct.weight + h * ew;
  down.weight = ct.weight - h * ew;
  CHECK(gp.weight.to_vector<double>()[20] ==
        doctest::Approx((loss(up, x).item<double>() - loss(down, x).item<double>()) / (2 * h)).epsilon(1e-6));
  // vmap over a batch of images (each [1, 2, 4, 4]) against the loop; jit against eager.
  fx::Array xs = fx::stack({x, 2.0 * x, -x}, 0);
  auto one = [&](const fx::Array& in) { return fx::nn::ConvTranspose::apply(ct, in, {2, 2}); };
  fx::Array batched = fx::vmap(one)(xs);
  for (int b = 0; b < 3; ++b) CHECK(fx::allclose(batched[b], one(xs[b]), 1e-12, 1e-12).item<bool>());
  CHECK(fx::allclose(fx::jit(one)(x), one(x), 1e-12, 1e-12).item<bool>());
  // A channel mismatch names the layer and the user's line.
  try {
    (void)fx::nn::ConvTranspose::apply(ct, fx::zeros({1, 3, 4, 4}, fx::float64));
    FAIL("expected a ShapeError");
  } catch (const fx::ShapeError& err) {
    CHECK(std::string(err.what()).find("ConvTranspose(") != std::string::npos);
    CHECK(std::string(err.what()).find("test_conv_transpose.cpp") != std::string::npos);
  }
  CHECK_THROWS_AS(fx::nn::ConvTranspose::apply(ct, x, {2, 2}, "FULL"), fx::ValueError);
}
