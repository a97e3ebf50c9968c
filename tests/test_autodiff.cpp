// Autodiff through the user API: golden derivative programs, closed forms, higher order, trees,
// custom rules, checkpointing and bad input. (The per-primitive checks against finite differences
// are driven by the op table in test_autodiff_optable.cpp.)
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "interpreters/vjp.h"

namespace fx = fluxion;

namespace {

// Golden files live in tests/golden/. FLUXION_UPDATE_GOLDEN=1 rewrites them from the current output.
void check_golden(const std::string& name, const fx::Program& p) {
  std::string path = std::string(FLUXION_SOURCE_DIR) + "/tests/golden/" + name + ".txt";
  std::string text = p.str() + "\n";
  if (std::getenv("FLUXION_UPDATE_GOLDEN")) {
    std::ofstream(path) << text;
    return;
  }
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing golden file " << path << " (run with FLUXION_UPDATE_GOLDEN=1)");
  std::stringstream want;
  want << in.rdbuf();
  CHECK_MESSAGE(want.str() == text, "golden " << name << " differs; got:\n" << text);
  fx::verify(p);
  CHECK(fx::parse_program(p.str()).str() == p.str());
}

double max_abs_diff(const fx::Array& a, const fx::Array& b) {
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  REQUIRE(x.size() == y.size());
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
  return m;
}

fx::Array randn(fx::Shape s, uint32_t seed, fx::DType d = fx::float64) {
  return fx::random::normal(fx::random::key(seed), s, d);
}

struct Mlp {
  fx::Array w1, b1, w2, b2;
};

fx::Array mlp_loss(const Mlp& p, const fx::Array& x, const fx::Array& y) {
  fx::Array h = fx::nn::relu(fx::matmul(x, p.w1) + p.b1);
  fx::Array logits = fx::matmul(h, p.w2) + p.b2;
  return -fx::mean(fx::sum(fx::nn::log_softmax(logits) * y, -1));
}

struct Gmm {
  fx::Array alphas, means, log_sigmas;  // [K], [K, d], [K, d]
};

// Log-likelihood of points x[n, d] under a mixture of K diagonal Gaussians.
fx::Array gmm_loglik(const Gmm& g, const fx::Array& x) {
  fx::Array diff = fx::expand_dims(x, 1) - fx::expand_dims(g.means, 0);  // [n, K, d]
  fx::Array z = diff * fx::exp(-g.log_sigmas);
  fx::Array comp = fx::nn::log_softmax(g.alphas) - fx::sum(g.log_sigmas, -1) - 0.5 * fx::sum(z * z, -1);  // [n, K]
  double d = double(x.shape()[1]);
  return fx::sum(fx::logsumexp(comp, -1)) - double(x.shape()[0]) * d * 0.5 * std::log(2 * M_PI);
}

FLUXION_TREE(Mlp, w1, b1, w2, b2);
FLUXION_TREE(Gmm, alphas, means, log_sigmas);

}  // namespace

// ---- golden derivative programs -------------------------------------------------------------------
TEST_CASE("autodiff golden: grad of sum(sin(x)) is cos") {
  auto f = [](const fx::Array& x) { return fx::sum(fx::sin(x)); };
  fx::Program g = fx::make_ir(fx::grad(f))(fx::ones({3}));
  check_golden("grad_sum_sin", g);
  CHECK(g.eqns.size() == 1);
}

TEST_CASE("autodiff golden: grad of logsumexp") {
  auto f = [](const fx::Array& x) { return fx::logsumexp(x); };
  fx::Array x = fx::array({1.0, 2.0, 3.0, 4.0});
  fx::Program fwd = fx::make_ir(f)(x);
  fx::Program g = fx::make_ir(fx::grad(f))(x);
  check_golden("grad_logsumexp", g);
  CHECK(g.eqns.size() <= 3 * fwd.eqns.size() + 4);
  CHECK(max_abs_diff(fx::grad(f)(x), fx::nn::softmax(x)) < 1e-15);  // the closed form
}

TEST_CASE("autodiff golden: a 2-layer MLP loss") {
  Mlp p{randn({4, 8}, 1), randn({8}, 2), randn({8, 3}, 3), randn({3}, 4)};
  fx::Array x = randn({5, 4}, 5), y = fx::nn::one_hot(fx::array(std::vector<int32_t>{0, 2, 1, 1, 0}), 3, fx::float64);
  fx::Program fwd = fx::make_ir(mlp_loss)(p, x, y);
  fx::Program g = fx::make_ir(fx::grad(mlp_loss))(p, x, y);
  check_golden("grad_mlp", g);
  MESSAGE("MLP: forward " << fwd.eqns.size() << " eqns, gradient " << g.eqns.size());
  CHECK(g.eqns.size() <= 3 * fwd.eqns.size() + 10);
}

TEST_CASE("autodiff golden: a GMM log-likelihood") {
  Gmm gm{randn({4}, 1), randn({4, 3}, 2), randn({4, 3}, 3) * 0.1};
  fx::Array x = randn({20, 3}, 4);
  fx::Program fwd = fx::make_ir(gmm_loglik)(gm, x);
  fx::Program g = fx::make_ir(fx::grad(gmm_loglik))(gm, x);
  check_golden("grad_gmm", g);
  MESSAGE("GMM: forward " << fwd.eqns.size() << " eqns, gradient " << g.eqns.size());
  CHECK(g.eqns.size() <= 3 * fwd.eqns.size() + 10);
}

// ---- closed forms and finite differences ---------------------------------------------------------
TEST_CASE("autodiff: the hessian of x^T A x is A + A^T") {
  fx::Array a = randn({4, 4}, 7);
  auto f = [&](const fx::Array& x) { return fx::dot(x, fx::matmul(a, x)); };
  fx::Array x = randn({4}, 8);
  fx::Array h = fx::hessian(f)(x);
  CHECK(h.shape() == fx::Shape{4, 4});
  CHECK(max_abs_diff(h, a + fx::transpose(a)) < 1e-12);
  CHECK(max_abs_diff(fx::jacfwd(fx::jacrev(f))(x), h) < 1e-12);
  CHECK(max_abs_diff(fx::jacrev(fx::jacrev(f))(x), h) < 1e-12);
}

TEST_CASE("autodiff: GMM gradient matches central differences to 1e-6 relative") {
  Gmm gm{randn({4}, 11), randn({4, 3}, 12), randn({4, 3}, 13) * 0.2};
  fx::Array x = randn({20, 3}, 14);
  Gmm g = fx::grad(gmm_loglik)(gm, x);
  std::vector<fx::Array> params = fx::tree::leaves(gm), grads = fx::tree::leaves(g);
  for (size_t leaf = 0; leaf < params.size(); ++leaf) {
    std::vector<double> base = params[leaf].to_vector<double>(), analytic = grads[leaf].to_vector<double>();
    for (size_t i = 0; i < base.size(); ++i) {
      auto at = [&](double delta) {
        std::vector<double> v = base;
        v[i] += delta;
        std::vector<fx::Array> l = params;
        l[leaf] = fx::array(v, params[leaf].shape());
        Gmm moved = fx::tree::unflatten(fx::tree::flatten(gm).second, l);
        return gmm_loglik(moved, x).item<double>();
      };
      const double h = 1e-5;
      double fd = (at(h) - at(-h)) / (2 * h);
      CAPTURE(leaf);
      CAPTURE(i);
      CHECK(std::fabs(analytic[i] - fd) <= 1e-6 * std::max(1.0, std::fabs(fd)));
    }
  }
}

TEST_CASE("autodiff: higher order to any depth") {
  auto cube = [](const fx::Array& x) { return x * x * x; };
  fx::Array x = fx::scalar(1.5);
  CHECK(fx::grad(fx::grad(cube))(x).item<double>() == doctest::Approx(9.0));
  CHECK(fx::grad(fx::grad(fx::grad(cube)))(x).item<double>() == doctest::Approx(6.0));
  auto s = [](const fx::Array& v) { return fx::sin(v); };
  CHECK(fx::grad(fx::grad(fx::grad(fx::grad(s))))(x).item<double>() == doctest::Approx(std::sin(1.5)));
  // jvp of grad: forward-over-reverse Hessian-vector product.
  auto f = [](const fx::Array& v) { return fx::sum(fx::exp(v) * v); };
  fx::Array v = fx::array({0.1, -0.3}), t = fx::array({1.0, 2.0});
  auto [g, hv] = fx::jvp(fx::grad(f), std::tuple{v}, std::tuple{t});
  std::vector<double> hvv = hv.to_vector<double>(), vv = v.to_vector<double>();
  for (size_t i = 0; i < 2; ++i) CHECK(hvv[i] == doctest::Approx((2 + vv[i]) * std::exp(vv[i]) * (i + 1)));
  // Perturbations of nested derivatives do not get confused (the inner x is a constant to d/dy).
  auto outer = [](const fx::Array& a) {
    return fx::grad([&](const fx::Array& b) { return a * b; })(fx::scalar(1.0));
  };
  CHECK(fx::grad(outer)(fx::scalar(2.0)).item<double>() == doctest::Approx(1.0));
}

// ---- trees and argument selection ----------------------------------------------------------------
TEST_CASE("autodiff: gradients of trees come back as the same tree") {
  Mlp p{randn({4, 8}, 1), randn({8}, 2), randn({8, 3}, 3), randn({3}, 4)};
  fx::Array x = randn({5, 4}, 5), y = fx::nn::one_hot(fx::array(std::vector<int32_t>{0, 2, 1, 1, 0}), 3, fx::float64);
  Mlp g = fx::grad(mlp_loss)(p, x, y);
  CHECK(g.w1.shape() == p.w1.shape());
  CHECK(g.b2.shape() == p.b2.shape());
  auto [gp, gx] = fx::grad<0, 1>(mlp_loss)(p, x, y);
  CHECK(max_abs_diff(gp.w2, g.w2) == 0);
  CHECK(gx.shape() == x.shape());
  auto [val, grads] = fx::value_and_grad(mlp_loss)(p, x, y);
  CHECK(val.item<double>() == doctest::Approx(mlp_loss(p, x, y).item<double>()));
  std::map<std::string, fx::Array> m{{"a", fx::scalar(2.0)}, {"b", fx::array({1.0, 2.0})}};
  auto gm = fx::grad([](const std::map<std::string, fx::Array>& d) { return d.at("a") * fx::sum(d.at("b")); })(m);
  CHECK(gm.at("a").item<double>() == 3.0);
  CHECK(gm.at("b").to_vector<double>() == std::vector<double>{2.0, 2.0});
}

TEST_CASE("autodiff: has_aux carries an auxiliary output through") {
  auto f = [](const fx::Array& x) { return std::pair{fx::sum(x * x), fx::max(x)}; };
  fx::Array x = fx::array({1.0, -3.0, 2.0});
  auto [val_aux, g] = fx::value_and_grad(f, fx::has_aux)(x);
  CHECK(val_aux.first.item<double>() == 14.0);
  CHECK(val_aux.second.item<double>() == 2.0);
  CHECK(g.to_vector<double>() == std::vector<double>{2, -6, 4});
  auto [g2, aux] = fx::grad(f, fx::has_aux)(x);
  CHECK(aux.item<double>() == 2.0);
  CHECK(max_abs_diff(g2, g) == 0);
}

TEST_CASE("autodiff: jvp, vjp and linearize agree") {
  auto f = [](const fx::Array& x) { return fx::tanh(x) * fx::sum(x); };
  fx::Array x = fx::array({0.3, -0.2, 0.5}), t = fx::array({1.0, 0.5, -1.0});
  auto [y, jt] = fx::jvp(f, std::tuple{x}, std::tuple{t});
  auto [y2, f_lin] = fx::linearize(f, x);
  CHECK(max_abs_diff(y, y2) == 0);
  CHECK(max_abs_diff(f_lin(t), jt) < 1e-15);
  auto [y3, f_vjp] = fx::vjp(f, x);
  fx::Array u = fx::array({0.7, -1.1, 0.2});
  double lhs = fx::sum(u * jt).item<double>(), rhs = fx::sum(f_vjp(u) * t).item<double>();
  CHECK(lhs == doctest::Approx(rhs).epsilon(1e-14));
}

TEST_CASE("autodiff: stop_gradient, and integer values carry no tangent") {
  auto f = [](const fx::Array& x) { return fx::sum(x * fx::stop_gradient(x)); };
  fx::Array x = fx::array({1.0, 2.0});
  CHECK(fx::grad(f)(x).to_vector<double>() == std::vector<double>{1.0, 2.0});
  auto g = [](const fx::Array& v) {
    fx::Array i = fx::argmax(v);  // an integer in the middle of the computation
    return fx::sum(v * fx::astype(i, fx::float64) + fx::floor(v));
  };
  CHECK(fx::grad(g)(fx::array({0.5, 3.5, 1.0})).to_vector<double>() == std::vector<double>{1, 1, 1});
  fx::Program p = fx::make_ir(fx::grad(g))(fx::array({0.5, 3.5, 1.0}));
  for (const fx::Eqn& e : p.eqns) {
    CAPTURE(p.str());
    CHECK(e.prim != fx::Prim::floor);  // piecewise constant: nothing of it survives in the derivative
  }
}

// ---- custom rules and checkpointing --------------------------------------------------------------
TEST_CASE("custom_jvp: a numerically stable logsumexp") {
  auto naive = [](const fx::Array& x) { return fx::log(fx::sum(fx::exp(x))); };
  auto stable = fx::custom_jvp(naive, [](auto primals, auto tangents) {
    auto [x] = primals;
    auto [t] = tangents;
    fx::Array m = fx::stop_gradient(fx::max(x));
    fx::Array y = m + fx::log(fx::sum(fx::exp(x - m)));
    return std::pair{y, fx::sum(fx::exp(x - y) * t)};
  });
  fx::Array big = fx::array({1000.0, 1001.0, 1002.0});
  std::vector<double> g = fx::grad(stable)(big).to_vector<double>();
  std::vector<double> want = fx::nn::softmax(big).to_vector<double>();
  for (size_t i = 0; i < 3; ++i) CHECK(g[i] == doctest::Approx(want[i]));
  CHECK(std::isnan(fx::grad(naive)(big).to_vector<double>()[0]));  // what the rule protects against
  // Composes: second order and make_ir.
  fx::Array small = fx::array({0.1, 0.2});
  CHECK(fx::hessian(stable)(small).shape() == fx::Shape{2, 2});
  fx::Program p = fx::make_ir(stable)(small);
  CHECK(p.eqns.size() == 1);
  CHECK(p.eqns[0].prim == fx::Prim::custom_jvp_call);
  CHECK(fx::parse_program(p.str()).str() == p.str());
}

TEST_CASE("custom_vjp: a clipped-gradient identity") {
  auto clip_gradient = fx::custom_vjp([](const fx::Array& x) { return std::pair{x, std::tuple<>{}}; },
                                      [](const std::tuple<>&, const fx::Array& ct) { return fx::clip(ct, -1.0, 1.0); });
  auto loss = [&](const fx::Array& x) { return fx::sum(clip_gradient(x) * fx::array({10.0, 0.5, -3.0})); };
  fx::Array x = fx::array({1.0, 2.0, 3.0});
  CHECK(clip_gradient(x).to_vector<double>() == x.to_vector<double>());
  CHECK(fx::grad(loss)(x).to_vector<double>() == std::vector<double>{1.0, 0.5, -1.0});
  // Residuals are any tree; bwd sees them.
  auto square = fx::custom_vjp([](const fx::Array& v) { return std::pair{v * v, v}; },
                               [](const fx::Array& v, const fx::Array& ct) { return 2.0 * v * ct; });
  CHECK(fx::grad([&](const fx::Array& v) { return fx::sum(square(v)); })(x).to_vector<double>() ==
        std::vector<double>{2, 4, 6});
  CHECK_THROWS_AS(fx::jvp(square, std::tuple{x}, std::tuple{x}), fx::TypeError);  // forward mode: not defined
}

TEST_CASE("checkpoint: residuals are recomputed instead of saved") {
  auto f = [](const fx::Array& x) { return fx::sin(fx::sin(fx::sin(fx::sin(x)))); };
  auto loss = [&](const fx::Array& x) { return fx::sum(f(x)); };
  auto loss_remat = [&](const fx::Array& x) { return fx::sum(fx::checkpoint(f)(x)); };
  fx::Array x = fx::array({0.1, 0.7, -0.4});
  CHECK(max_abs_diff(fx::grad(loss)(x), fx::grad(loss_remat)(x)) < 1e-15);
  auto residuals = [&](auto fn) {
    fx::Program p = fx::make_ir(fn)(x);
    return fx::vjp_programs(p, {true}, 1).num_residuals;
  };
  size_t plain = residuals(loss), remat = residuals(loss_remat);
  MESSAGE("saved residuals: " << plain << " without checkpoint, " << remat << " with");
  CHECK(remat < plain);
  CHECK(remat == 1);  // only the input
}

// ---- bad input ------------------------------------------------------------------------------------
TEST_CASE("autodiff errors: grad of a non-scalar or integer function, or w.r.t. an integer") {
  auto vec = [](const fx::Array& x) { return fx::sin(x); };
  try {
    fx::grad(vec)(fx::ones({3}));
    FAIL("no error");
  } catch (const fx::TypeError& e) {
    std::string m = e.what();
    CHECK(m.find("f32[3]") != std::string::npos);
    CHECK(m.find("jacrev") != std::string::npos);
    CHECK(m.find("test_autodiff.cpp") != std::string::npos);
  }
  auto f = [](const fx::Array& x, const fx::Array& n) { return fx::sum(x * fx::astype(n, fx::float32)); };
  CHECK_THROWS_AS(fx::grad<1>(f)(fx::ones({2}), fx::arange(2)), fx::TypeError);
  CHECK_NOTHROW(fx::grad<0>(f)(fx::ones({2}), fx::arange(2)));
  CHECK_THROWS_AS(fx::grad([](const fx::Array& x) { return fx::argmax(x); })(fx::ones({2})), fx::TypeError);
}

TEST_CASE("autodiff errors: jvp tangents and vjp cotangents of the wrong type") {
  auto f = [](const fx::Array& x) { return fx::sin(x); };
  fx::Array x = fx::ones({3});
  try {
    fx::jvp(f, std::tuple{x}, std::tuple{fx::ones({4})});
    FAIL("no error");
  } catch (const fx::ShapeError& e) {
    CHECK(std::string(e.what()).find("argument 0") != std::string::npos);
  }
  CHECK_THROWS_AS(fx::jvp(f, std::tuple{x}, std::tuple{fx::ones({3}, fx::float64)}), fx::TypeError);
  auto [y, f_vjp] = fx::vjp(f, x);
  CHECK_THROWS_AS(f_vjp(fx::ones({2})), fx::ShapeError);
  CHECK_THROWS_AS(f_vjp(fx::ones({3}, fx::float64)), fx::TypeError);
  // A custom_jvp function differentiated w.r.t. a value it closes over.
  auto outer = [](const fx::Array& a) {
    auto g = fx::custom_jvp([&](const fx::Array& b) { return a * b; },
                            [&](auto p, auto t) { return std::pair{a * std::get<0>(p), a * std::get<0>(t)}; });
    return fx::sum(g(fx::ones({2})));
  };
  CHECK_THROWS_AS(fx::grad(outer)(fx::scalar(1.f)), fx::TypeError);
}

TEST_CASE("custom rules and checkpoint compose with jit (their bodies are inlined for lowering)") {
  auto f = [](const fx::Array& x) { return fx::sin(fx::sin(x)) * x; };
  auto loss = [&](const fx::Array& x) { return fx::sum(fx::checkpoint(f)(x)); };
  auto softplus = fx::custom_jvp([](const fx::Array& x) { return fx::log1p(fx::exp(x)); },
                                 [](auto p, auto t) {
                                   auto [x] = p;
                                   auto [tx] = t;
                                   return std::pair{fx::log1p(fx::exp(x)), tx * fx::sigmoid(x)};
                                 });
  fx::Array x = fx::array({0.3f, -1.2f, 2.0f});
  CHECK(max_abs_diff(fx::jit(fx::grad(loss))(x), fx::grad(loss)(x)) < 1e-6);
  CHECK(max_abs_diff(fx::jit(softplus)(x), softplus(x)) < 1e-6);
  auto g = fx::grad([&](const fx::Array& v) { return fx::sum(softplus(v)); });
  CHECK(max_abs_diff(fx::jit(g)(x), fx::sigmoid(x)) < 1e-6);
}
