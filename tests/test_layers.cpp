// fx::nn layers: values against loops written out by hand, gradients against finite differences,
// vmap against a loop over examples, jit against eager; initializers' statistics; shape errors
// naming the layer and the user's line.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

namespace fx = fluxion;

namespace {

std::vector<double> values(const fx::Array& a) { return fx::astype(a, fx::float64).to_vector<double>(); }

void check_close(const fx::Array& got, const std::vector<double>& want, double tol = 1e-9) {
  std::vector<double> g = values(got);
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]).epsilon(tol));
}

// d/de f(p + e v) at 0 by central differences against <grad f(p), v>, for a random direction v.
template <class T, class F>
void check_grad(const F& f, const T& p, double tol = 1e-6) {
  T g = fx::grad(f)(p);
  std::vector<fx::Array> leaves = fx::tree::leaves(p);
  std::vector<fx::Array> dirs;
  for (size_t i = 0; i < leaves.size(); ++i)
    dirs.push_back(fx::random::normal(fx::random::key(int64_t(i) + 7), leaves[i].shape(), fx::float64));
  const fx::Array* it = dirs.data();
  T v = fx::tree::rebuild(p, it);
  const double eps = 1e-6;
  auto shifted = [&](double e) {
    return fx::tree::map([e](const fx::Array& a, const fx::Array& d) { return a + d * e; }, p, v);
  };
  double fd = (f(shifted(eps)).template item<double>() - f(shifted(-eps)).template item<double>()) / (2 * eps);
  double analytic = 0;
  std::vector<fx::Array> gl = fx::tree::leaves(g), vl = fx::tree::leaves(v);
  for (size_t i = 0; i < gl.size(); ++i) analytic += fx::sum(gl[i] * vl[i]).item<double>();
  CHECK(analytic == doctest::Approx(fd).epsilon(tol));
}

}  // namespace

TEST_CASE("nn layers: Linear against a hand loop, through grad, vmap and jit") {
  auto lin = fx::nn::Linear::init(fx::random::key(1), 3, 2, fx::nn::initializers::lecun_normal(),
                                  fx::nn::initializers::normal(0.5), fx::float64);
  CHECK(lin.weight.shape() == fx::Shape{3, 2});
  fx::Array x = fx::random::normal(fx::random::key(2), {4, 3}, fx::float64);
  std::vector<double> xv = values(x), w = values(lin.weight), b = values(lin.bias), want;
  for (int r = 0; r < 4; ++r)
    for (int o = 0; o < 2; ++o) {
      double acc = b[size_t(o)];
      for (int i = 0; i < 3; ++i) acc += xv[size_t(r * 3 + i)] * w[size_t(i * 2 + o)];
      want.push_back(acc);
    }
  check_close(fx::nn::Linear::apply(lin, x), want);
  auto loss = [&](const fx::nn::Linear& p) { return fx::sum(fx::tanh(fx::nn::Linear::apply(p, x))); };
  check_grad(loss, lin);
  // vmap over examples against the batched call; jit against eager.
  auto one = [&](const fx::Array& row) { return fx::nn::Linear::apply(lin, row); };
  check_close(fx::vmap(one)(x), want);
  check_close(fx::jit([](const fx::nn::Linear& p, const fx::Array& xs) { return fx::nn::Linear::apply(p, xs); })(lin, x),
              want);
  // The per-example gradients (vmap of grad) sum to the batch gradient.
  auto example_loss = [](const fx::nn::Linear& p, const fx::Array& row) {
    return fx::sum(fx::tanh(fx::nn::Linear::apply(p, row)));
  };
  auto per = fx::vmap(fx::grad(example_loss), fx::in_axes(fx::none, 0))(lin, x);
  check_close(fx::sum(per.weight, {0}), values(fx::grad(loss)(lin).weight));
}

TEST_CASE("nn layers: a shape mismatch names the layer and the user's line") {
  auto lin = fx::nn::Linear::init(fx::random::key(0), 3, 2);
  try {
    fx::nn::Linear::apply(lin, fx::ones({4, 5}));
    FAIL("expected a ShapeError");
  } catch (const fx::ShapeError& e) {
    std::string m = e.what();
    CHECK(m.find("Linear") != std::string::npos);
    CHECK(m.find("test_layers.cpp") != std::string::npos);
  }
  CHECK_THROWS_AS(fx::nn::LayerNorm::apply(fx::nn::LayerNorm::init(4), fx::ones({2, 3})), fx::ShapeError);
  CHECK_THROWS_AS(fx::nn::MultiHeadAttention::init(fx::random::key(0), 6, 4), fx::ShapeError);
}

TEST_CASE("nn layers: Embedding looks up rows; its gradient counts them") {
  auto emb = fx::nn::Embedding::init(fx::random::key(3), 5, 3, std::nullopt, fx::float64);
  fx::Array ids = fx::array({4, 1, 4});
  std::vector<double> table = values(emb.table), want;
  for (int id : {4, 1, 4})
    for (int d = 0; d < 3; ++d) want.push_back(table[size_t(id * 3 + d)]);
  check_close(fx::nn::Embedding::apply(emb, ids), want);
  auto g = fx::grad([&](const fx::nn::Embedding& p) { return fx::sum(fx::nn::Embedding::apply(p, ids)); })(emb);
  check_close(g.table, {0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 2, 2, 2});
  CHECK_THROWS_AS(fx::nn::Embedding::apply(emb, fx::array({5})), fx::ValueError);
  CHECK_THROWS_AS(fx::nn::Embedding::apply(emb, fx::array({1.f})), fx::TypeError);
}

TEST_CASE("nn layers: LayerNorm against a hand loop and finite differences") {
  fx::nn::LayerNorm ln{fx::array({1.0, 2.0, 0.5}), fx::array({0.0, -1.0, 0.25})};
  fx::Array x = fx::array({{1.0, 2.0, 4.0}, {-1.0, 0.0, 3.0}});
  std::vector<double> xv = values(x), want;
  for (int r = 0; r < 2; ++r) {
    double m = 0, v = 0;
    for (int i = 0; i < 3; ++i) m += xv[size_t(r * 3 + i)] / 3;
    for (int i = 0; i < 3; ++i) v += std::pow(xv[size_t(r * 3 + i)] - m, 2) / 3;
    const double sc[] = {1.0, 2.0, 0.5}, bi[] = {0.0, -1.0, 0.25};
    for (int i = 0; i < 3; ++i) want.push_back((xv[size_t(r * 3 + i)] - m) / std::sqrt(v + 1e-5) * sc[i] + bi[i]);
  }
  check_close(fx::nn::LayerNorm::apply(ln, x), want);
  check_grad([&](const fx::nn::LayerNorm& p) { return fx::sum(fx::sin(fx::nn::LayerNorm::apply(p, x))); }, ln);
  check_grad([&](const fx::Array& xs) { return fx::sum(fx::sin(fx::nn::LayerNorm::apply(ln, xs))); }, x, 1e-5);
}

TEST_CASE("nn layers: RMSNorm against a hand loop (no centring, no bias) and finite differences") {
  fx::nn::RMSNorm rn = fx::nn::RMSNorm::init(3, fx::float64);
  rn.scale = fx::array({1.0, 2.0, 0.5});
  fx::Array x = fx::array({{1.0, 2.0, 4.0}, {-1.0, 0.0, 3.0}});
  std::vector<double> xv = values(x), want;
  for (int r = 0; r < 2; ++r) {
    double ms = 0;
    for (int i = 0; i < 3; ++i) ms += xv[size_t(r * 3 + i)] * xv[size_t(r * 3 + i)] / 3;
    const double sc[] = {1.0, 2.0, 0.5};
    for (int i = 0; i < 3; ++i) want.push_back(xv[size_t(r * 3 + i)] / std::sqrt(ms + 1e-6) * sc[i]);
  }
  check_close(fx::nn::RMSNorm::apply(rn, x), want);
  check_grad([&](const fx::nn::RMSNorm& p) { return fx::sum(fx::sin(fx::nn::RMSNorm::apply(p, x))); }, rn);
  check_grad([&](const fx::Array& xs) { return fx::sum(fx::sin(fx::nn::RMSNorm::apply(rn, xs))); }, x, 1e-5);
  CHECK(fx::nn::RMSNorm::apply(fx::nn::RMSNorm::init(3), fx::astype(x, fx::bfloat16)).dtype() == fx::bfloat16);
  CHECK_THROWS_AS(fx::nn::RMSNorm::apply(rn, fx::zeros({2, 4}, fx::float64)), fx::ShapeError);
}

TEST_CASE("nn layers: Dropout keeps the expectation and is a function of its key") {
  fx::Array x = fx::ones({20000});
  fx::Array key = fx::random::key(9);
  fx::Array y = fx::nn::Dropout::apply(key, x, 0.25, true);
  std::vector<float> v = y.to_vector<float>();
  size_t kept = 0;
  for (float e : v) {
    CHECK((e == 0.f || e == doctest::Approx(1 / 0.75)));
    kept += e != 0.f;
  }
  CHECK(double(kept) / double(v.size()) == doctest::Approx(0.75).epsilon(0.02));
  CHECK(fx::mean(y).item<float>() == doctest::Approx(1.0).epsilon(0.03));
  CHECK(fx::nn::Dropout::apply(key, x, 0.25, true).to_vector<float>() == v);
  auto jitted = fx::jit([](const fx::Array& k, const fx::Array& xs) { return fx::nn::Dropout::apply(k, xs, 0.25, true); });
  CHECK(jitted(key, x).to_vector<float>() == v);
  CHECK(fx::nn::Dropout::apply(key, x, 0.25, false).impl() == x.impl());
  CHECK_THROWS_AS(fx::nn::Dropout::apply(key, x, 1.5, true), fx::ValueError);
}

TEST_CASE("nn layers: MultiHeadAttention against a hand loop; grad, jit") {
  const int L = 3, D = 4, H = 2, Dh = D / H;
  auto mha = fx::nn::MultiHeadAttention::init(fx::random::key(4), D, H, fx::float64);
  fx::Array x = fx::random::normal(fx::random::key(5), {1, L, D}, fx::float64);
  std::vector<double> xv = values(x);
  auto project = [&](const fx::nn::Linear& p) {
    std::vector<double> w = values(p.weight), b = values(p.bias), out(size_t(L * D));
    for (int l = 0; l < L; ++l)
      for (int o = 0; o < D; ++o) {
        double acc = b[size_t(o)];
        for (int i = 0; i < D; ++i) acc += xv[size_t(l * D + i)] * w[size_t(i * D + o)];
        out[size_t(l * D + o)] = acc;
      }
    return out;
  };
  std::vector<double> q = project(mha.query), k = project(mha.key), v = project(mha.value), att(size_t(L * D));
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < L; ++i) {
      std::vector<double> s(L);
      double mx = -1e300, z = 0;
      for (int j = 0; j < L; ++j) {
        for (int d = 0; d < Dh; ++d) s[size_t(j)] += q[size_t(i * D + h * Dh + d)] * k[size_t(j * D + h * Dh + d)];
        s[size_t(j)] /= std::sqrt(double(Dh));
        mx = std::max(mx, s[size_t(j)]);
      }
      for (int j = 0; j < L; ++j) z += std::exp(s[size_t(j)] - mx);
      for (int d = 0; d < Dh; ++d)
        for (int j = 0; j < L; ++j)
          att[size_t(i * D + h * Dh + d)] += std::exp(s[size_t(j)] - mx) / z * v[size_t(j * D + h * Dh + d)];
    }
  std::vector<double> wo = values(mha.out.weight), bo = values(mha.out.bias), want;
  for (int l = 0; l < L; ++l)
    for (int o = 0; o < D; ++o) {
      double acc = bo[size_t(o)];
      for (int i = 0; i < D; ++i) acc += att[size_t(l * D + i)] * wo[size_t(i * D + o)];
      want.push_back(acc);
    }
  check_close(fx::nn::MultiHeadAttention::apply(mha, x), want);
  auto jitted = fx::jit([](const fx::nn::MultiHeadAttention& p, const fx::Array& xs) {
    return fx::nn::MultiHeadAttention::apply(p, xs);
  });
  check_close(jitted(mha, x), want, 1e-7);
  check_grad([&](const fx::nn::MultiHeadAttention& p) { return fx::sum(fx::tanh(fx::nn::MultiHeadAttention::apply(p, x))); },
             mha, 1e-5);
  // A causal mask: the first position attends only to itself, so its output is its own value row
  // through the output projection.
  fx::Array causal = fx::array(std::vector<bool>{true, false, false, true, true, false, true, true, true}, {L, L});
  fx::Array masked = fx::nn::MultiHeadAttention::apply(mha, x, x, causal);
  std::vector<double> first;
  for (int o = 0; o < D; ++o) {
    double acc = bo[size_t(o)];
    for (int i = 0; i < D; ++i) acc += v[size_t(i)] * wo[size_t(i * D + o)];
    first.push_back(acc);
  }
  check_close(fx::slice(masked, {0, 0, 0}, {1, 1, D}), first, 1e-7);
}

TEST_CASE("nn initializers: variance scaling's statistics") {
  auto stddev = [](const fx::Array& a) { return fx::std(fx::astype(a, fx::float64)).item<double>(); };
  fx::Array key = fx::random::key(11);
  namespace init = fx::nn::initializers;
  CHECK(stddev(init::glorot_uniform()(key, {300, 200}, fx::float32)) == doctest::Approx(std::sqrt(2.0 / 500)).epsilon(0.03));
  CHECK(stddev(init::he_normal()(key, {400, 100}, fx::float32)) == doctest::Approx(std::sqrt(2.0 / 400)).epsilon(0.03));
  fx::Array t = init::lecun_normal()(key, {500, 100}, fx::float32);
  CHECK(stddev(t) == doctest::Approx(std::sqrt(1.0 / 500)).epsilon(0.03));
  CHECK(fx::max(fx::abs(t)).item<float>() <= 2 * std::sqrt(1.0 / 500) / 0.8796 + 1e-6);
  // A conv weight laid out OIHW: fan_in = I * H * W.
  fx::Array conv = init::he_normal(1, 0)(key, {64, 32, 3, 3}, fx::float32);
  CHECK(stddev(conv) == doctest::Approx(std::sqrt(2.0 / (32 * 9))).epsilon(0.03));
  CHECK_THROWS_AS(init::glorot_uniform()(key, {5}, fx::float32), fx::ShapeError);
}

namespace {

// A 2-D NCHW x OIHW convolution written from the definition: out[n, o, y, x] = b[o] + sum over the
// group's input features c and kernel offsets (i, j) of in[n, g*I + c, y*s - pad + i*d, x*s - pad + j*d]
// * w[o, c, i, j], where g = o / (O / groups).
std::vector<double> conv2d_loop(const fx::Array& x, const fx::Array& w, const fx::Array& b, int64_t stride,
                                int64_t pad, int64_t dil, int64_t groups) {
  const fx::Shape xs = x.shape(), ws = w.shape();
  const int64_t N = xs[0], H = xs[2], W = xs[3], O = ws[0], I = ws[1], KH = ws[2], KW = ws[3];
  const int64_t OH = (H + 2 * pad - dil * (KH - 1) - 1) / stride + 1, OW = (W + 2 * pad - dil * (KW - 1) - 1) / stride + 1;
  std::vector<double> xv = values(x), wv = values(w), bv = values(b), out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double acc = bv[size_t(o)];
          const int64_t g = o / (O / groups);
          for (int64_t c = 0; c < I; ++c)
            for (int64_t i = 0; i < KH; ++i)
              for (int64_t j = 0; j < KW; ++j) {
                const int64_t iy = oy * stride - pad + i * dil, ix = ox * stride - pad + j * dil;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                acc += xv[size_t(((n * xs[1] + g * I + c) * H + iy) * W + ix)] * wv[size_t(((o * I + c) * KH + i) * KW + j)];
              }
          out.push_back(acc);
        }
  return out;
}

}  // namespace

TEST_CASE("nn layers: Conv against conv_general_dilated and a hand loop; strides, padding, dilation, groups") {
  fx::Array x = fx::random::normal(fx::random::key(3), {2, 4, 7, 6}, fx::float64);
  using Case = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // stride, padding, dilation, groups
  for (auto [stride, pad, dil, groups] : {Case{1, 1, 1, 1}, Case{2, 1, 1, 2}, Case{1, 2, 2, 1}, Case{2, 0, 1, 4}}) {
    CAPTURE(stride);
    CAPTURE(pad);
    CAPTURE(dil);
    CAPTURE(groups);
    auto conv = fx::nn::Conv::init(fx::random::key(4), 4, 8, {3, 3}, groups, false, std::nullopt,
                                   fx::nn::initializers::normal(0.5), fx::float64);
    CHECK(conv.weight.shape() == fx::Shape{8, 4 / groups, 3, 3});
    fx::Array y = fx::nn::Conv::apply(conv, x, {stride, stride}, {{pad, pad}, {pad, pad}}, {dil, dil});
    std::vector<double> want = conv2d_loop(x, conv.weight, conv.bias, stride, pad, dil, groups);
    check_close(y, want);
    fx::Array direct = fx::conv_general_dilated(x, conv.weight, {stride, stride}, {{pad, pad}, {pad, pad}}, {1, 1},
                                                {dil, dil}, std::nullopt, groups) +
                       fx::reshape(conv.bias, {8, 1, 1});
    check_close(direct, want);
    auto jitted = fx::jit([&](const fx::nn::Conv& p, const fx::Array& xs) {
      return fx::nn::Conv::apply(p, xs, {stride, stride}, {{pad, pad}, {pad, pad}}, {dil, dil});
    });
    check_close(jitted(conv, x), want, 1e-7);
  }
  // Channels last (NHWC x HWIO) is the same convolution with the axes moved.
  auto nchw = fx::nn::Conv::init(fx::random::key(5), 4, 6, {3, 2}, 2, false, std::nullopt,
                                 fx::nn::initializers::normal(0.5), fx::float64);
  fx::nn::Conv nhwc{fx::transpose(nchw.weight, {2, 3, 1, 0}), nchw.bias, true};
  fx::Array y_last = fx::nn::Conv::apply(nhwc, fx::transpose(x, {0, 2, 3, 1}), {2, 1}, "SAME");
  check_close(fx::transpose(y_last, {0, 3, 1, 2}), values(fx::nn::Conv::apply(nchw, x, {2, 1}, "SAME")));
  CHECK(fx::nn::Conv::init(fx::random::key(5), 4, 6, {3, 2}, 1, true).weight.shape() == fx::Shape{3, 2, 4, 6});
  // A checkpoint holds the weight and bias, not the static layout flag.
  const auto path = std::filesystem::temp_directory_path() / ("fluxion_conv_" + std::to_string(::getpid()) + ".safetensors");
  fx::save(path.string(), nhwc);
  fx::nn::Conv back = fx::load(path.string(), nhwc);
  std::filesystem::remove(path);
  CHECK(back.channels_last);
  CHECK(values(back.weight) == values(nhwc.weight));
}

TEST_CASE("nn layers: Conv in 1-D and 3-D; its initializer's fans; gradients against finite differences") {
  auto c1 = fx::nn::Conv::init(fx::random::key(6), 3, 5, {4}, 1, false, std::nullopt, fx::nn::initializers::zeros(),
                               fx::float64);
  fx::Array x1 = fx::random::normal(fx::random::key(7), {2, 3, 9}, fx::float64);
  fx::Array y1 = fx::nn::Conv::apply(c1, x1, {2}, "VALID");
  CHECK(y1.shape() == fx::Shape{2, 5, 3});
  check_close(y1, values(fx::conv_general_dilated(x1, c1.weight, {2}, "VALID")));
  auto c3 = fx::nn::Conv::init(fx::random::key(8), 2, 3, {2, 2, 2}, 1, false, std::nullopt,
                               fx::nn::initializers::normal(0.5), fx::float64);
  fx::Array x3 = fx::random::normal(fx::random::key(9), {1, 2, 4, 3, 5}, fx::float64);
  fx::Array y3 = fx::nn::Conv::apply(c3, x3);
  CHECK(y3.shape() == fx::Shape{1, 3, 4, 3, 5});  // SAME by default
  check_close(y3, values(fx::conv_general_dilated(x3, c3.weight, {1, 1, 1}, "SAME") +
                         fx::reshape(c3.bias, {3, 1, 1, 1})));
  // lecun_normal over OIHW fans: fan_in = I * KH * KW.
  auto big = fx::nn::Conv::init(fx::random::key(10), 32, 64, {3, 3});
  CHECK(fx::std(fx::astype(big.weight, fx::float64)).item<double>() == doctest::Approx(std::sqrt(1.0 / 288)).epsilon(0.05));
  // Gradients with respect to the parameters and the input, strided and grouped.
  auto conv = fx::nn::Conv::init(fx::random::key(11), 4, 4, {3, 3}, 2, false, std::nullopt,
                                 fx::nn::initializers::normal(0.5), fx::float64);
  fx::Array x = fx::random::normal(fx::random::key(12), {2, 4, 5, 5}, fx::float64);
  check_grad([&](const fx::nn::Conv& p) { return fx::sum(fx::sin(fx::nn::Conv::apply(p, x, {2, 2}))); }, conv);
  check_grad([&](const fx::Array& xs) { return fx::sum(fx::sin(fx::nn::Conv::apply(conv, xs, {1, 1}, "SAME", {2, 2}))); },
             x);
  // A mismatched input names the layer.
  CHECK_THROWS_AS(fx::nn::Conv::apply(conv, fx::ones({2, 3, 5, 5}, fx::float64)), fx::ShapeError);
  CHECK_THROWS_AS(fx::nn::Conv::apply(conv, fx::ones({4, 5, 5}, fx::float64)), fx::ShapeError);
  CHECK_THROWS_AS(fx::nn::Conv::apply(fx::nn::Conv{fx::ones({3}), fx::ones({3})}, fx::ones({3})), fx::ShapeError);
  CHECK_THROWS_AS(fx::nn::Conv::init(fx::random::key(0), 3, 4, {3, 3}, 2), fx::ShapeError);
}

TEST_CASE("nn layers: BatchNorm trains on batch statistics, infers with running ones; grad, jit") {
  fx::nn::BatchNorm bn{fx::array({1.0, 2.0, 0.5}), fx::array({0.0, -1.0, 0.25})};
  fx::nn::BatchNorm::State state{fx::array({0.5, -0.5, 0.0}), fx::array({2.0, 1.0, 0.5})};
  fx::Array x = fx::random::normal(fx::random::key(13), {4, 3, 2, 2}, fx::float64);
  const std::vector<double> xv = values(x), sc{1.0, 2.0, 0.5}, bi{0.0, -1.0, 0.25}, rm{0.5, -0.5, 0.0}, rv{2.0, 1.0, 0.5};
  auto at = [&](int n, int c, int p) { return xv[size_t((n * 3 + c) * 4 + p)]; };
  std::vector<double> mean(3, 0), var(3, 0), train_want(xv.size()), infer_want(xv.size());
  for (int c = 0; c < 3; ++c) {
    for (int n = 0; n < 4; ++n)
      for (int p = 0; p < 4; ++p) mean[size_t(c)] += at(n, c, p) / 16;
    for (int n = 0; n < 4; ++n)
      for (int p = 0; p < 4; ++p) var[size_t(c)] += std::pow(at(n, c, p) - mean[size_t(c)], 2) / 16;
    for (int n = 0; n < 4; ++n)
      for (int p = 0; p < 4; ++p) {
        const size_t i = size_t((n * 3 + c) * 4 + p);
        train_want[i] = (at(n, c, p) - mean[size_t(c)]) / std::sqrt(var[size_t(c)] + 1e-5) * sc[size_t(c)] + bi[size_t(c)];
        infer_want[i] = (at(n, c, p) - rm[size_t(c)]) / std::sqrt(rv[size_t(c)] + 1e-5) * sc[size_t(c)] + bi[size_t(c)];
      }
  }
  auto [y, next] = fx::nn::BatchNorm::apply(bn, state, x, true);
  check_close(y, train_want);
  std::vector<double> want_mean, want_var;
  for (size_t c = 0; c < 3; ++c) {
    want_mean.push_back(0.9 * rm[c] + 0.1 * mean[c]);
    want_var.push_back(0.9 * rv[c] + 0.1 * var[c]);
  }
  check_close(next.mean, want_mean);
  check_close(next.var, want_var);
  auto [yi, same] = fx::nn::BatchNorm::apply(bn, state, x, false);
  check_close(yi, infer_want);
  check_close(same.mean, rm);
  // Channels last: axis -1.
  auto [y_last, next_last] = fx::nn::BatchNorm::apply(bn, state, fx::transpose(x, {0, 2, 3, 1}), true, 0.9, 1e-5, -1);
  check_close(fx::transpose(y_last, {0, 3, 1, 2}), train_want);
  check_close(next_last.var, want_var);
  // Gradients through the batch statistics, with respect to the parameters and the input.
  fx::Array wts = fx::random::normal(fx::random::key(14), x.shape(), fx::float64);
  check_grad([&](const fx::nn::BatchNorm& p) { return fx::sum(fx::nn::BatchNorm::apply(p, state, x, true).first * wts); },
             bn);
  check_grad([&](const fx::Array& xs) { return fx::sum(fx::sin(fx::nn::BatchNorm::apply(bn, state, xs, true).first)); }, x,
             1e-5);
  // The state threads through a jitted step.
  auto step = fx::jit([](const fx::nn::BatchNorm& p, const fx::nn::BatchNorm::State& s, const fx::Array& xs) {
    return fx::nn::BatchNorm::apply(p, s, xs, true);
  });
  auto [yj, nj] = step(bn, state, x);
  check_close(yj, train_want, 1e-7);
  check_close(nj.mean, want_mean, 1e-7);
  auto fresh = fx::nn::BatchNorm::init_state(3);
  CHECK(values(fresh.mean) == std::vector<double>{0, 0, 0});
  CHECK(values(fresh.var) == std::vector<double>{1, 1, 1});
  CHECK_THROWS_AS(fx::nn::BatchNorm::apply(fx::nn::BatchNorm::init(4), fx::nn::BatchNorm::init_state(4), x, true),
                  fx::ShapeError);
}

// preferred_element_type: bfloat16 inputs, float32 parameters cast to bfloat16 (the weight) or to the
// float32 result (the bias), float32 products and result. Against the same layer on the bfloat16
// values widened to float32 (products of bfloat16
// values are exact in float32, so only the summation order differs), eager and under jit; the
// gradient flows back to the float32 master weights.
TEST_CASE("nn layers: Linear and Conv with preferred_element_type accumulate and return float32") {
  auto lin = fx::nn::Linear::init(fx::random::key(3), 40, 6, fx::nn::initializers::lecun_normal(),
                                  fx::nn::initializers::normal(0.5));
  auto conv = fx::nn::Conv::init(fx::random::key(4), 3, 5, {3, 3}, 1, false, std::nullopt, fx::nn::initializers::normal(0.5));
  const fx::Array x = fx::astype(fx::random::normal(fx::random::key(5), {7, 40}), fx::bfloat16);
  const fx::Array img = fx::astype(fx::random::normal(fx::random::key(6), {2, 3, 6, 6}), fx::bfloat16);
  // The weight cast to x's dtype, the bias straight to the preferred float32.
  auto widened = [](auto p) {
    p.weight = fx::astype(fx::astype(p.weight, fx::bfloat16), fx::float32);
    return p;
  };
  const fx::Array lin_want = fx::nn::Linear::apply(widened(lin), fx::astype(x, fx::float32));
  const fx::Array conv_want = fx::nn::Conv::apply(widened(conv), fx::astype(img, fx::float32), {2, 1}, "SAME");
  auto lin_f = [&x](const fx::nn::Linear& p) { return fx::nn::Linear::apply(p, x, fx::float32); };
  auto conv_f = [&img](const fx::nn::Conv& p) { return fx::nn::Conv::apply(p, img, {2, 1}, "SAME", {}, fx::float32); };
  for (bool jitted : {false, true}) {
    CAPTURE(jitted);
    const fx::Array y = jitted ? fx::jit(lin_f)(lin) : lin_f(lin);
    const fx::Array c = jitted ? fx::jit(conv_f)(conv) : conv_f(conv);
    CHECK(y.dtype() == fx::float32);
    CHECK(c.dtype() == fx::float32);
    check_close(y, values(lin_want), 1e-5);
    check_close(c, values(conv_want), 1e-5);
  }
  // Without it the result stays bfloat16.
  CHECK(fx::nn::Linear::apply(lin, x).dtype() == fx::bfloat16);
  const auto g = fx::grad([&](const fx::nn::Conv& p) { return fx::sum(conv_f(p)); })(conv);
  CHECK(g.weight.dtype() == fx::float32);
  CHECK(fx::sum(fx::abs(g.weight)).item<float>() > 0);
}
