// Shape polymorphism, step 2 (docs/shape_polymorphism.md): fx::jit(f, fx::polymorphic_shapes(...))
// compiles once and serves every size of its symbols. Differential: each polymorphic call against
// the same function jitted for that one shape (and eagerly), across batch sizes from 1 up.
#include <doctest/doctest.h>

#include <fluxion.h>

#include "bench/models.h"
#include "test_helpers.h"

#include <string>
#include <vector>

namespace fx = fluxion;
using test_helpers::max_abs_diff;

namespace {
bool mentions(const std::string& what, const std::string& part) { return what.find(part) != std::string::npos; }

fx::Array batch_of(int64_t b, int64_t n, uint32_t seed) {
  return fx::random::normal(fx::random::key(seed), {b, n});
}
}  // namespace

TEST_CASE("jit poly: one compile serves every batch size (elementwise, broadcasts, reductions, softmax)") {
  const fx::Array w = fx::random::normal(fx::random::key(1), {8});
  auto f = [w](const fx::Array& x) {
    fx::Array y = fx::tanh(x * w + 0.5f);
    return std::pair{fx::sum(y, 1), fx::nn::softmax(y, -1) + fx::max(x, 0, /*keepdims=*/true)};
  };
  auto pf = fx::jit(f, fx::polymorphic_shapes("b, 8"));
  for (int64_t b : {1, 2, 7, 64, 1000, 3}) {
    const fx::Array x = batch_of(b, 8, uint32_t(b));
    auto [s, m] = pf(x);
    auto [s0, m0] = fx::jit(f)(x);
    CHECK(s.shape() == fx::Shape{b});
    CHECK(m.shape() == fx::Shape{b, 8});
    CHECK(max_abs_diff(s, s0) < 1e-5);
    CHECK(max_abs_diff(m, m0) < 1e-5);
  }
  CHECK(pf.compilations() == 1);
}

TEST_CASE("jit poly: the MLP forward and its training step (mean over the batch) match a per-shape jit, one compile") {
  const bench::MlpData data;
  const bench::Mlp p = data.p;
  auto forward = [p](const fx::Array& x) {
    return fx::matmul(fx::nn::relu(fx::matmul(x, p.w1) + p.b1), p.w2) + p.b2;
  };
  auto step = [p](const fx::Array& x, const fx::Array& y) {
    auto [loss, g] = fx::value_and_grad(bench::mlp_loss)(p, x, y);
    return std::pair{loss, bench::Mlp{p.w1 - 0.01f * g.w1, p.b1 - 0.01f * g.b1, p.w2 - 0.01f * g.w2, p.b2 - 0.01f * g.b2}};
  };
  auto pforward = fx::jit(forward, fx::polymorphic_shapes("b, 784"));
  auto pstep = fx::jit(step, fx::polymorphic_shapes("b, 784", "b, 10"));
  for (int64_t b : {1, 5, 64, 256, 300}) {
    const fx::Array x = batch_of(b, 784, 10 + uint32_t(b));
    const fx::Array y = fx::nn::one_hot(fx::random::randint(fx::random::key(uint32_t(b)), {b}, 0, 10), 10);
    const fx::Array out = pforward(x);
    CHECK(out.shape() == fx::Shape{b, 10});
    CHECK(max_abs_diff(out, fx::jit(forward)(x)) < 1e-4);
    auto [loss, q] = pstep(x, y);
    auto [loss0, q0] = fx::jit(step)(x, y);
    CHECK(loss.shape() == fx::Shape{});
    CHECK(max_abs_diff(loss, loss0) < 1e-5);
    CHECK(max_abs_diff(q.w1, q0.w1) < 1e-5);
    CHECK(max_abs_diff(q.b1, q0.b1) < 1e-5);
    CHECK(max_abs_diff(q.w2, q0.w2) < 1e-5);
    CHECK(max_abs_diff(q.b2, q0.b2) < 1e-5);
  }
  CHECK(pforward.compilations() == 1);
  CHECK(pstep.compilations() == 1);
}

TEST_CASE("jit poly: mean and var over a symbolic axis divide by the size of each call") {
  auto f = [](const fx::Array& x) { return std::pair{fx::mean(x, 0), fx::var(x, 0, /*ddof=*/1)}; };
  auto pf = fx::jit(f, fx::polymorphic_shapes("n, 3"));
  for (int64_t n : {2, 9, 1000}) {
    const fx::Array x = batch_of(n, 3, uint32_t(n));
    auto [m, v] = pf(x);
    CHECK(max_abs_diff(m, fx::mean(x, 0)) < 1e-5);
    CHECK(max_abs_diff(v, fx::var(x, 0, 1)) < 1e-4);
  }
  CHECK(pf.compilations() == 1);
}

TEST_CASE("jit poly: a reshape keeps the symbolic dim; transposes and products over it") {
  auto f = [](const fx::Array& x) {
    fx::Array img = fx::reshape(x, {x.shape()[0], 28, 28});
    fx::Array g = fx::matmul(fx::transpose(x), x);  // [784, 784]: contracts over the symbolic dim
    return std::pair{fx::sum(img, {1}), g};
  };
  auto pf = fx::jit(f, fx::polymorphic_shapes("b, 784"));
  for (int64_t b : {1, 3, 40}) {
    const fx::Array x = batch_of(b, 784, uint32_t(b));
    auto [r, g] = pf(x);
    auto [r0, g0] = fx::jit(f)(x);
    CHECK(r.shape() == fx::Shape{b, 28});
    CHECK(max_abs_diff(r, r0) < 1e-4);
    CHECK(max_abs_diff(g, g0) < 1e-3);
  }
  CHECK(pf.compilations() == 1);
}

TEST_CASE("jit poly: a size that breaks a constraint or the spec is a ShapeError naming the symbol and the line") {
  auto pf = fx::jit([](const fx::Array& x) { return x * 2.f; }, fx::polymorphic_shapes("b, 4", "b % 8 == 0"));
  CHECK(pf(fx::ones({16, 4})).shape() == fx::Shape{16, 4});
  std::string e = test_helpers::error_of<fx::ShapeError>([&] { pf(fx::ones({12, 4})); });
  CHECK(mentions(e, "b % 8 == 0"));
  CHECK(mentions(e, "test_jit_poly.cpp"));
  e = test_helpers::error_of<fx::ShapeError>([&] { pf(fx::ones({16, 5})); });
  CHECK(mentions(e, "4"));
  CHECK(pf.compilations() == 1);
}

TEST_CASE("jit poly: api.md's example -- a classifier step over int labels, polymorphic_shapes(\"b, 784\", \"b\")") {
  const bench::Mlp p = bench::MlpData().p;
  auto loss = [](const bench::Mlp& q, const fx::Array& x, const fx::Array& labels) {
    fx::Array logits = fx::matmul(fx::nn::relu(fx::matmul(x, q.w1) + q.b1), q.w2) + q.b2;
    return fx::mean(fx::nn::softmax_cross_entropy(logits, labels));
  };
  auto step = [&](const fx::Array& x, const fx::Array& labels) {
    auto [l, g] = fx::value_and_grad(loss)(p, x, labels);
    return std::pair{l, g.w1};
  };
  auto f = fx::jit(step, fx::polymorphic_shapes("b, 784", "b"));
  for (int64_t b : {64, 1, 13}) {
    const fx::Array x = batch_of(b, 784, uint32_t(b));
    const fx::Array labels = fx::random::randint(fx::random::key(uint32_t(b) + 1), {b}, 0, 10);
    auto [l, g] = f(x, labels);
    auto [l0, g0] = fx::jit(step)(x, labels);
    CHECK(max_abs_diff(l, l0) < 1e-5);
    CHECK(max_abs_diff(g, g0) < 1e-5);
  }
  CHECK(f.compilations() == 1);
}

TEST_CASE("jit poly: scan over a symbolic length, its gradient, and vmap over a symbolic batch") {
  const fx::Array w = fx::random::normal(fx::random::key(5), {4, 4}) * 0.5f;
  auto rnn = [w](const fx::Array& h0, const fx::Array& xs) {
    auto [h, ys] = fx::scan([&](const fx::Array& c, const fx::Array& x) {
      fx::Array n = fx::tanh(fx::matmul(w, c) + x);
      return std::pair{n, n};
    }, h0, xs);
    return fx::sum(h) + fx::mean(ys);
  };
  auto loss_and_grad = [&](const fx::Array& h0, const fx::Array& xs) {
    auto [l, g] = fx::value_and_grad<1>(rnn)(h0, xs);
    return std::pair{l, g};
  };
  auto f = fx::jit(loss_and_grad, fx::polymorphic_shapes("4", "t, 4"));
  const fx::Array h0 = fx::ones({4}) * 0.1f;
  for (int64_t t : {1, 6, 50}) {
    const fx::Array xs = batch_of(t, 4, uint32_t(t));
    auto [l, g] = f(h0, xs);
    auto [l0, g0] = fx::jit(loss_and_grad)(h0, xs);
    CHECK(g.shape() == fx::Shape{t, 4});
    CHECK(max_abs_diff(l, l0) < 1e-5);
    CHECK(max_abs_diff(g, g0) < 1e-5);
  }
  CHECK(f.compilations() == 1);

  // Per-example gradients: vmap over the symbolic batch inside the polymorphic jit.
  const bench::Mlp p = bench::MlpData().p;
  auto per_example = [&](const fx::Array& x, const fx::Array& y) {
    return fx::vmap([&](const fx::Array& xi, const fx::Array& yi) { return fx::grad(bench::mlp_example_loss)(p, xi, yi).b2; })(x, y);
  };
  auto pe = fx::jit(per_example, fx::polymorphic_shapes("b, 784", "b, 10"));
  for (int64_t b : {3, 17}) {
    const fx::Array x = batch_of(b, 784, uint32_t(b));
    const fx::Array y = fx::nn::one_hot(fx::random::randint(fx::random::key(2), {b}, 0, 10), 10);
    CHECK(max_abs_diff(pe(x, y), fx::jit(per_example)(x, y)) < 1e-5);
  }
  CHECK(pe.compilations() == 1);
}

TEST_CASE("jit poly: arguments on a GPU are a CompileError (the GPU pipeline takes no symbolic dims yet)" *
          doctest::skip(fx::devices("cuda").empty())) {
  auto pf = fx::jit([](const fx::Array& x) { return x * 2.f; }, fx::polymorphic_shapes("b, 4"));
  const fx::Array x = fx::device_put(fx::ones({3, 4}), fx::devices("cuda").at(0));
  const std::string e = test_helpers::error_of<fx::CompileError>([&] { pf(x); });
  CHECK(mentions(e, "symbolic"));
}

TEST_CASE("jit poly: cond and while_loop over arrays of a symbolic batch") {
  auto f = [](const fx::Array& x, const fx::Array& flag) {
    fx::Array y = fx::cond(flag, [&] { return fx::tanh(x) * 2.f; }, [&] { return x - fx::mean(x, 0); });
    // Doubles y until its largest entry passes 100 (a data-dependent trip count).
    auto [z, n] = fx::while_loop([](const std::pair<fx::Array, fx::Array>& c) { return fx::max(fx::abs(c.first)) < 100.f; },
                                 [](const std::pair<fx::Array, fx::Array>& c) { return std::pair{c.first * 2.f, c.second + 1}; },
                                 std::pair{y + 0.01f, fx::array(0)});
    return std::pair{z, n};
  };
  auto pf = fx::jit(f, fx::polymorphic_shapes("b, 3", ""));
  for (int64_t b : {1, 4, 33})
    for (bool flag : {true, false}) {
      const fx::Array x = batch_of(b, 3, uint32_t(b));
      auto [z, n] = pf(x, fx::array(flag));
      auto [z0, n0] = fx::jit(f)(x, fx::array(flag));
      CHECK(z.shape() == fx::Shape{b, 3});
      CHECK(max_abs_diff(z, z0) < 1e-4);
      CHECK(max_abs_diff(n, n0) == 0);
    }
  CHECK(pf.compilations() == 1);
}
