// fx::nn losses against their formulas in double, the cross-entropy's gradient against its closed
// form (softmax - one_hot), and bad labels.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <string>
#include <vector>

namespace fx = fluxion;

TEST_CASE("losses: softmax cross-entropy with integer labels, its gradient, under jit") {
  fx::Array logits = fx::array({{1.0, 2.0, 0.5}, {-1.0, 0.0, 3.0}});
  fx::Array labels = fx::array({1, 2});
  const double l[2][3] = {{1.0, 2.0, 0.5}, {-1.0, 0.0, 3.0}};
  const int y[2] = {1, 2};
  std::vector<double> want, grad_want;
  for (int r = 0; r < 2; ++r) {
    double z = 0;
    for (double v : l[r]) z += std::exp(v);
    want.push_back(std::log(z) - l[r][y[r]]);
    for (int c = 0; c < 3; ++c) grad_want.push_back((std::exp(l[r][c]) / z - (c == y[r])) / 2);  // of the mean
  }
  std::vector<double> got = fx::nn::softmax_cross_entropy(logits, labels).to_vector<double>();
  for (int i = 0; i < 2; ++i) CHECK(got[size_t(i)] == doctest::Approx(want[size_t(i)]));
  auto mean_loss = [&](const fx::Array& lg) { return fx::mean(fx::nn::softmax_cross_entropy(lg, labels)); };
  std::vector<double> g = fx::grad(mean_loss)(logits).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(grad_want[i]));
  auto jitted = fx::jit([](const fx::Array& lg, const fx::Array& lb) { return fx::nn::softmax_cross_entropy(lg, lb); });
  got = jitted(logits, labels).to_vector<double>();
  for (int i = 0; i < 2; ++i) CHECK(got[size_t(i)] == doctest::Approx(want[size_t(i)]));
  // With probabilities: the one-hot distribution gives the same values.
  got = fx::nn::softmax_cross_entropy_with_probs(logits, fx::nn::one_hot(labels, 3, fx::float64)).to_vector<double>();
  for (int i = 0; i < 2; ++i) CHECK(got[size_t(i)] == doctest::Approx(want[size_t(i)]));
}

TEST_CASE("losses: bad labels name the loss and the user's line") {
  fx::Array logits = fx::zeros({2, 3});
  try {
    fx::nn::softmax_cross_entropy(logits, fx::array({1, 2, 0}));
    FAIL("expected a ShapeError");
  } catch (const fx::ShapeError& e) {
    std::string m = e.what();
    CHECK(m.find("softmax_cross_entropy") != std::string::npos);
    CHECK(m.find("test_losses.cpp") != std::string::npos);
  }
  CHECK_THROWS_AS(fx::nn::softmax_cross_entropy(logits, fx::array({1, 3})), fx::ValueError);
  // Float labels are probabilities (optax): of the logits' shape, or a ShapeError.
  CHECK_THROWS_AS(fx::nn::softmax_cross_entropy(logits, fx::array({1.f, 2.f})), fx::ShapeError);
  CHECK_THROWS_AS(fx::nn::softmax_cross_entropy(logits, fx::zeros({2, 3}, fx::bool_)), fx::TypeError);
  CHECK_THROWS_AS(fx::nn::mse(logits, fx::zeros({3, 2})), fx::ShapeError);
}

TEST_CASE("losses: mse, l2, huber and sigmoid binary cross-entropy against their formulas") {
  const std::vector<double> p = {0.5, -2.0, 3.0, 0.1}, t = {1.0, 0.0, 0.5, 0.1};
  fx::Array pa = fx::array(p), ta = fx::array(t);
  double mse = 0;
  for (size_t i = 0; i < 4; ++i) mse += (p[i] - t[i]) * (p[i] - t[i]) / 4;
  CHECK(fx::nn::mse(pa, ta).item<double>() == doctest::Approx(mse));
  std::vector<double> l2 = fx::nn::l2_loss(pa, ta).to_vector<double>();
  std::vector<double> hub = fx::nn::huber_loss(pa, ta, 1.0).to_vector<double>();
  for (size_t i = 0; i < 4; ++i) {
    double e = std::abs(p[i] - t[i]);
    CHECK(l2[i] == doctest::Approx(0.5 * e * e));
    CHECK(hub[i] == doctest::Approx(e <= 1 ? 0.5 * e * e : e - 0.5));
  }
  const std::vector<double> labels = {1.0, 0.0, 1.0, 0.5};
  std::vector<double> bce = fx::nn::sigmoid_binary_cross_entropy(pa, fx::array(labels)).to_vector<double>();
  for (size_t i = 0; i < 4; ++i) {
    double s = 1 / (1 + std::exp(-p[i]));
    CHECK(bce[i] == doctest::Approx(-(labels[i] * std::log(s) + (1 - labels[i]) * std::log(1 - s))));
  }
  // Stable far out: no inf or nan for large logits.
  double far = fx::nn::sigmoid_binary_cross_entropy(fx::array({800.0}), fx::array({0.0})).item<double>();
  CHECK(far == doctest::Approx(800.0));
}

TEST_CASE("losses: Optax's names -- softmax_cross_entropy takes probabilities, integer labels have their own") {
  fx::Array logits = fx::array({{1.0, 2.0, 0.5}, {-1.0, 0.0, 3.0}});
  const double l[2][3] = {{1.0, 2.0, 0.5}, {-1.0, 0.0, 3.0}}, q[2][3] = {{0.2, 0.5, 0.3}, {0.0, 0.9, 0.1}};
  fx::Array probs = fx::array({{0.2, 0.5, 0.3}, {0.0, 0.9, 0.1}});
  std::vector<double> got = fx::nn::softmax_cross_entropy(logits, probs).to_vector<double>();
  for (int r = 0; r < 2; ++r) {
    double z = 0, want = 0;
    for (double v : l[r]) z += std::exp(v);
    for (int c = 0; c < 3; ++c) want -= q[r][c] * (l[r][c] - std::log(z));  // -sum(p log softmax)
    CHECK(got[size_t(r)] == doctest::Approx(want));
  }
  // Its gradient in the logits is softmax - labels (per example).
  std::vector<double> g = fx::grad([&](const fx::Array& lg) { return fx::sum(fx::nn::softmax_cross_entropy(lg, probs)); })(logits)
                              .to_vector<double>();
  for (int r = 0; r < 2; ++r) {
    double z = 0;
    for (double v : l[r]) z += std::exp(v);
    for (int c = 0; c < 3; ++c) CHECK(g[size_t(r * 3 + c)] == doctest::Approx(std::exp(l[r][c]) / z - q[r][c]));
  }
  fx::Array labels = fx::array({1, 2});
  CHECK(fx::allclose(fx::nn::softmax_cross_entropy_with_integer_labels(logits, labels),
                     fx::nn::softmax_cross_entropy(logits, fx::nn::one_hot(labels, 3, fx::float64)))
            .item<bool>());
  CHECK(fx::allclose(fx::nn::softmax_cross_entropy(logits, labels),  // api.md's spelling: integer labels
                     fx::nn::softmax_cross_entropy_with_integer_labels(logits, labels))
            .item<bool>());
  CHECK_THROWS_AS(fx::nn::softmax_cross_entropy_with_integer_labels(logits, probs), fx::TypeError);
}

TEST_CASE("losses: squared_error, cosine_similarity and cosine_distance as Optax defines them") {
  fx::Array p = fx::array({{1.0, 2.0, 2.0}, {0.0, 0.0, 0.0}}), t = fx::array({{2.0, 0.0, 1.0}, {1.0, 1.0, 0.0}});
  CHECK(fx::nn::squared_error(p, t).to_vector<double>() == std::vector<double>{1, 4, 1, 1, 1, 0});
  // Row 0: (2 + 0 + 2) / (3 * sqrt(5)); row 1: a zero vector, clamped by epsilon to 0 (not NaN).
  std::vector<double> cs = fx::nn::cosine_similarity(p, t, 1e-8).to_vector<double>();
  CHECK(cs[0] == doctest::Approx(4.0 / (3.0 * std::sqrt(5.0))));
  CHECK(cs[1] == 0.0);
  std::vector<double> cd = fx::nn::cosine_distance(p, t, 1e-8).to_vector<double>();
  CHECK(cd[0] == doctest::Approx(1 - 4.0 / (3.0 * std::sqrt(5.0))));
  // d/dp cos(p, t) is orthogonal to p (the similarity does not change along p).
  fx::Array t0 = t[{fx::Slice(0, 1)}];
  fx::Array gp = fx::grad([&](const fx::Array& a) { return fx::sum(fx::nn::cosine_similarity(a, t0)); })(p[{fx::Slice(0, 1)}]);
  CHECK(fx::sum(gp * p[{fx::Slice(0, 1)}]).item<double>() == doctest::Approx(0.0).epsilon(1e-12));
  CHECK_THROWS_AS(fx::nn::cosine_similarity(p, fx::zeros({2, 2}, fx::float64)), fx::ShapeError);
}
