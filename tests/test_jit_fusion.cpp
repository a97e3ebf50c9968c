// The jit's fusion passes (lowering/group_elementwise.cpp, fuse_elementwise.cpp) on the programs a
// differential run against eager evaluation found broken (issue 35): a reversal read through
// tensor.extract grouped with the value it reads, a dot_general without contracting dims writing
// into a linalg.fill the grouping erased, and a constant fused into a reduction. Each case runs
// under jit and eagerly, and must agree.
#include <doctest/doctest.h>
#include <fluxion.h>

#include "test_helpers.h"

namespace fx = fluxion;
using test_helpers::max_abs_diff;

namespace {

fx::Array grid(int64_t rows, int64_t cols) {
  return fx::reshape(fx::array(test_helpers::ramp(rows * cols, -2.f, 3.f)), {rows, cols});
}

template <class F, class... A>
void check_jit_matches_eager(const F& f, const A&... args) {
  const fx::Array want = f(args...);
  const fx::Array got = fx::jit(f)(args...);
  CHECK(got.aval() == want.aval());
  CHECK(max_abs_diff(got, want) <= 1e-5);
}

}  // namespace

TEST_CASE("jit fusion: a reversal of an elementwise value (rev reads it with tensor.extract)") {
  const fx::Array x = grid(3, 4);
  check_jit_matches_eager([](const fx::Array& a) { return fx::flip(fx::sin(a), {1}) * a; }, x);
  check_jit_matches_eager([](const fx::Array& a) { return fx::flip(fx::exp(a) + 1.f, {0}) - fx::flip(a, {0, 1}); }, x);
  check_jit_matches_eager([](const fx::Array& a) { return fx::flip(fx::flip(a * 2.f, {1}) + a, {1}); }, x);
  // An integer reversal converted afterwards (the program of the first report).
  const fx::Array i = fx::reshape(fx::arange(12), {3, 4});
  check_jit_matches_eager([](const fx::Array& a) { return fx::flip(fx::sin(fx::astype(a, fx::float32)), {1}) * a + fx::flip(a, {0}); }, i);
}

TEST_CASE("jit fusion: the transpose of a reversal (grad through flip)") {
  const fx::Array x = grid(3, 4), w = grid(3, 4) * 0.5f;
  auto loss = [](const fx::Array& a, const fx::Array& b) { return fx::sum(fx::flip(fx::tanh(a), {1}) * b); };
  check_jit_matches_eager(fx::grad(loss), x, w);
  auto [gx, gw] = fx::jit(fx::grad<0, 1>(loss))(x, w);
  auto [ex, ew] = fx::grad<0, 1>(loss)(x, w);
  CHECK(max_abs_diff(gx, ex) <= 1e-5);
  CHECK(max_abs_diff(gw, ew) <= 1e-5);
}

TEST_CASE("jit fusion: dot_general without contracting dims (an outer product or a scale)") {
  const fx::Array x = fx::array({1.f, 2.f, 3.f}), v = fx::array({4.f, -5.f, 6.f});
  check_jit_matches_eager([](const fx::Array& a) { return fx::einsum("j,a->j", a, a); }, x);
  check_jit_matches_eager([](const fx::Array& a) { return fx::einsum("j,a->ja", a, a); }, x);
  check_jit_matches_eager([](const fx::Array& a, const fx::Array& s) { return fx::einsum("j,->j", a, s); }, x, fx::scalar(2.f));
  check_jit_matches_eager([](const fx::Array& a) { return fx::sin(fx::einsum("j,->j", a, fx::sum(a))); }, x);
  // grad of dot: the cotangent (a scalar) times the other vector, a dot_general with no contraction.
  check_jit_matches_eager(fx::grad([](const fx::Array& a, const fx::Array& b) { return fx::dot(a, b); }), x, v);
  const fx::Array g = fx::jit(fx::grad([](const fx::Array& a, const fx::Array& b) { return fx::dot(a, b); }))(x, v);
  CHECK(g.to_vector<float>() == v.to_vector<float>());
  const fx::Array m = grid(2, 3);
  check_jit_matches_eager([](const fx::Array& a, const fx::Array& b) { return fx::einsum("ij,k->ijk", a, b) + 1.f; }, m, v);
}

TEST_CASE("jit fusion: a constant reduced (integer_pow(x, 0) is 1 everywhere)") {
  const fx::Array x = fx::array({1.f, 2.f, 3.f, 4.f});
  const fx::Array s = fx::jit([](const fx::Array& a) { return fx::sum(fx::integer_pow(a, 0)); })(x);
  CHECK(s.item<float>() == 4.f);
  check_jit_matches_eager([](const fx::Array& a) { return fx::sum(fx::integer_pow(a, 0)); }, x);
  check_jit_matches_eager([](const fx::Array& a) { return fx::prod(fx::integer_pow(a, 0) * 2.f); }, x);
  check_jit_matches_eager([](const fx::Array& a) { return fx::sum(fx::ones_like(a)) + fx::max(fx::zeros_like(a)); }, x);
  const fx::Array m = grid(3, 5);
  check_jit_matches_eager([](const fx::Array& a) { return fx::sum(fx::integer_pow(a, 0), {1}); }, m);
  check_jit_matches_eager([](const fx::Array& a) { return fx::mean(fx::integer_pow(a, 0), {0}) + fx::sum(a, {0}); }, m);
  const fx::Array i = fx::array({3, -1, 7, 0, 2});
  check_jit_matches_eager([](const fx::Array& a) { return fx::sum(fx::integer_pow(a, 0)); }, i);
}

TEST_CASE("jit fusion: other ops that read a tensor at computed indices, next to elementwise ones") {
  // The kin of rev (issue 35): each reads its operand through tensor.extract or its own indexing,
  // between elementwise producers and consumers that fusion would like to group with it.
  const fx::Array x = grid(4, 6);
  check_jit_matches_eager([](const fx::Array& a) { return fx::take(fx::sin(a), fx::array({3, 0, 2}), 1) * 2.f; }, x);
  check_jit_matches_eager([](const fx::Array& a) { return fx::exp(fx::take(fx::tanh(a), fx::array({1, 1, 0}), 0)); }, x);
  check_jit_matches_eager(
      [](const fx::Array& a) { return fx::cos(fx::dynamic_slice(fx::sin(a) + a, {fx::scalar(1), fx::scalar(2)}, {2, 3})); }, x);
  check_jit_matches_eager([](const fx::Array& a) { return fx::concatenate({fx::sin(a), a * 3.f, fx::flip(a, {1})}, 1) + 1.f; }, x);
  check_jit_matches_eager([](const fx::Array& a) { return fx::sqrt(fx::pad(fx::exp(a), {{1, 2}, {0, 1}}, 1.5f)); }, x);
  check_jit_matches_eager([](const fx::Array& a) { return fx::sum(fx::flip(fx::exp(a), {0}) * a, {1}); }, x);
}
