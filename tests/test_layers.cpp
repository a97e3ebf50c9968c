// fx::nn layers: values against loops written out by hand, gradients against finite differences,
// vmap against a loop over examples, jit against eager; initializers' statistics; shape errors
// naming the layer and the user's line.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <string>
#include <vector>

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
