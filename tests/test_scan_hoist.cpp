// transforms/scan_hoist: work that needs no loop leaves scans before jit compiles them. Each case
// checks the rewritten program's structure (what left the body), that it verifies, and that it
// computes what the original computes -- both interpreted (float64, tight) and through fx::jit.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <string>
#include <vector>

#include "interpreters/scan_hoist.h"

namespace fx = fluxion;

namespace {

const fx::Program* find_scan(const fx::Program& p, size_t nth = 0) {
  for (const fx::Eqn& e : p.eqns)
    if (e.prim == fx::Prim::scan && nth-- == 0) return e.params.get<fx::ProgramRef>("body").get();
  return nullptr;
}

int count(const fx::Program& p, fx::Prim prim) {
  int n = 0;
  for (const fx::Eqn& e : p.eqns) n += e.prim == prim;
  return n;
}

void check_close(const std::vector<fx::Array>& got, const std::vector<fx::Array>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    REQUIRE(got[i].aval().same_type(want[i].aval()));
    std::vector<double> g = fx::astype(got[i], fx::float64).to_vector<double>();
    std::vector<double> w = fx::astype(want[i], fx::float64).to_vector<double>();
    for (size_t k = 0; k < g.size(); ++k) {
      CAPTURE(k);
      CHECK(g[k] == doctest::Approx(w[k]).epsilon(tol).scale(1.0));
    }
  }
}

// The rewritten program verifies and interprets to the original's values.
fx::Program hoisted_and_checked(const fx::Program& p, const std::vector<fx::Array>& args) {
  fx::Program h = fx::hoist_scan_invariants(p);
  fx::verify(h);
  CAPTURE(h.str());
  check_close(fx::eval(h, args), fx::eval(p, args), 1e-10);
  return h;
}

fx::Array normal(uint32_t seed, fx::Shape shape, fx::DType dtype = fx::float64) {
  return fx::astype(fx::random::normal(fx::random::key(seed), shape), dtype);
}

struct Cell {
  fx::Array w, u, b;
};
FLUXION_TREE(Cell, w, u, b);

fx::Array rnn_loss(const Cell& p, const fx::Array& h0, const fx::Array& xs) {
  auto [h, ys] = fx::scan([&](const fx::Array& c, const fx::Array& x) {
    fx::Array n = fx::tanh(fx::matmul(p.w, c) + fx::matmul(p.u, x) + p.b);
    return std::pair{n, n};
  }, h0, xs);
  return fx::sum(h) + fx::mean(ys);
}

}  // namespace

TEST_CASE("scan hoisting: an RNN's input projection leaves the loop as one matrix product") {
  Cell p{normal(1, {6, 6}) * 0.4, normal(2, {6, 5}) * 0.4, normal(3, {6})};
  fx::Array h0 = normal(4, {6}), xs = normal(5, {9, 5});
  fx::Program prog = fx::make_ir(rnn_loss)(p, h0, xs);
  fx::Program h = hoisted_and_checked(prog, {p.w, p.u, p.b, h0, xs});
  const fx::Program* body = find_scan(h);
  REQUIRE(body);
  CHECK(count(*body, fx::Prim::dot_general) == 1);  // W h stays; U x left
  CHECK(count(h, fx::Prim::dot_general) == 1);       // ... as one product over all steps
  CHECK(body->invars.size() == 4);                   // W, b, h, (U x)_t: x itself is no longer read

  auto jf = fx::jit(rnn_loss);
  check_close({jf(p, h0, xs)}, {rnn_loss(p, h0, xs)}, 1e-12);
}

TEST_CASE("scan hoisting: the reverse scan of a gradient accumulates no outer products") {
  Cell p{normal(1, {6, 6}) * 0.4, normal(2, {6, 5}) * 0.4, normal(3, {6})};
  fx::Array h0 = normal(4, {6}), xs = normal(5, {9, 5});
  auto vg = fx::value_and_grad(rnn_loss);
  fx::Program prog = fx::make_ir(vg)(p, h0, xs);
  fx::Program h = hoisted_and_checked(prog, {p.w, p.u, p.b, h0, xs});
  const fx::Program* before = find_scan(prog, 1);
  const fx::Program* after = find_scan(h, 1);
  REQUIRE(before);
  REQUIRE(after);
  // dW and dU were carries updated by an outer product per step; now each is one product after
  // the loop, contracting over the steps.
  CHECK(count(*before, fx::Prim::dot_general) == 3);
  CHECK(count(*after, fx::Prim::dot_general) == 1);
  CHECK(after->invars.size() < before->invars.size());

  auto jvg = fx::jit(vg);
  auto [v1, g1] = jvg(p, h0, xs);
  auto [v2, g2] = vg(p, h0, xs);
  check_close({v1, g1.w, g1.u, g1.b}, {v2, g2.w, g2.u, g2.b}, 1e-11);
}

TEST_CASE("scan hoisting: loop-invariant work runs once; a product with a const factor sums first") {
  fx::Array a = normal(6, {4, 4}), c0 = normal(7, {4}), xs = normal(8, {7, 4});
  // exp(a) does not change across steps; acc += h^T exp(a) has a carried factor and a const one.
  auto f = [](const fx::Array& a, const fx::Array& c0, const fx::Array& xs) {
    auto [carry, ys] = fx::scan([&](const std::pair<fx::Array, fx::Array>& s, const fx::Array& x) {
      auto [h, acc] = s;
      fx::Array ea = fx::exp(a * 0.1);
      fx::Array n = fx::sin(h) + x;
      return std::pair{std::pair{n, acc + fx::matmul(h, ea)}, fx::sum(n)};
    }, std::pair{c0, fx::zeros_like(c0)}, xs);
    return std::tuple{carry.first, carry.second, ys};
  };
  fx::Program prog = fx::make_ir(f)(a, c0, xs);
  fx::Program h = hoisted_and_checked(prog, {a, c0, xs});
  const fx::Program* body = find_scan(h);
  REQUIRE(body);
  CHECK(count(*body, fx::Prim::exp) == 0);
  CHECK(count(*body, fx::Prim::dot_general) == 0);
  CHECK(count(h, fx::Prim::reduce_sum) >= 1);  // sum_t h_t, then one product with exp(a)

  auto jf = fx::jit(f);
  auto [g0, g1, g2] = jf(a, c0, xs);
  auto [w0, w1, w2] = f(a, c0, xs);
  check_close({g0, g1, g2}, {w0, w1, w2}, 1e-12);
}

TEST_CASE("scan hoisting: what the carry feeds back into, or what would grow when stacked, stays") {
  fx::Array c0 = normal(9, {3, 3}), xs = normal(10, {5, 3});
  // The accumulator is read by the next step (not a pure sum); the outer product of two scanned
  // vectors would be 3x larger stacked than its inputs.
  auto f = [](const fx::Array& c0, const fx::Array& xs) {
    return fx::scan([](const fx::Array& c, const fx::Array& x) {
      fx::Array outer = fx::einsum("i,j->ij", x, x * 2.0);
      fx::Array n = c * 0.5 + fx::matmul(c, outer) * 0.1;
      return std::pair{n, fx::sum(n)};
    }, c0, xs);
  };
  fx::Program prog = fx::make_ir(f)(c0, xs);
  fx::Program h = fx::hoist_scan_invariants(prog);
  CHECK(h.str() == prog.str());
  auto jf = fx::jit(f);
  auto [jc, jy] = jf(c0, xs);
  auto [ec, ey] = f(c0, xs);
  check_close({jc, jy}, {ec, ey}, 1e-12);

  // A cond on the scanned input alone stays in the loop (batched, it would run both branches for
  // every step), while the product next to it leaves.
  fx::Array w = normal(17, {3, 3});
  auto g = [](const fx::Array& w, const fx::Array& c0, const fx::Array& xs) {
    return fx::scan([&](const fx::Array& c, const fx::Array& x) {
      fx::Array picked = fx::cond(fx::sum(x) > 0.0, [&] { return fx::exp(x); }, [&] { return -x; });
      fx::Array n = fx::tanh(c * 0.5 + fx::matmul(w, x) + picked);
      return std::pair{n, n};
    }, c0, xs);
  };
  fx::Array v0 = normal(18, {3});
  fx::Program pg = fx::make_ir(g)(w, v0, xs);
  fx::Program hg = hoisted_and_checked(pg, {w, v0, xs});
  const fx::Program* body = find_scan(hg);
  REQUIRE(body);
  CHECK(count(*body, fx::Prim::cond) == 1);
  CHECK(count(*body, fx::Prim::dot_general) == 0);
  auto [j1, j2] = fx::jit(g)(w, v0, xs);
  auto [e1, e2] = g(w, v0, xs);
  check_close({j1, j2}, {e1, e2}, 1e-12);
}

TEST_CASE("scan hoisting: reverse scans, float32, nested scans and scans inside cond") {
  fx::Array w = normal(11, {5, 5}, fx::float32) * 0.3f, xs = normal(12, {6, 4, 5}, fx::float32);
  fx::Array h0 = normal(13, {5}, fx::float32);
  // An outer scan over blocks of steps, each an inner reverse scan; the whole under a cond.
  auto f = [](const fx::Array& w, const fx::Array& h0, const fx::Array& xs) {
    auto step = [&](const fx::Array& h, const fx::Array& block) {
      auto [hi, ys] = fx::scan([&](const fx::Array& c, const fx::Array& x) {
        fx::Array n = fx::tanh(fx::matmul(w, c) + fx::matmul(w, x));
        return std::pair{n, n * 2.f};
      }, h, block, std::nullopt, /*reverse=*/true);
      return std::pair{hi, fx::sum(ys, fx::Axes{0})};
    };
    return fx::cond(fx::sum(h0) > -100.f, [&] { return fx::scan(step, h0, xs); },
                    [&] { return std::pair{h0, fx::zeros({6, 5})}; });
  };
  fx::Program prog = fx::make_ir(f)(w, h0, xs);
  fx::Program h = fx::hoist_scan_invariants(prog);
  fx::verify(h);
  CHECK(h.str() != prog.str());  // the inner scans' W x_t left their loops
  check_close(fx::eval(h, {w, h0, xs}), fx::eval(prog, {w, h0, xs}), 1e-5);
  auto jf = fx::jit(f);
  auto [a1, b1] = jf(w, h0, xs);
  auto [a2, b2] = f(w, h0, xs);
  check_close({a1, b1}, {a2, b2}, 1e-5);

  // A reverse scan's gradient with respect to its weights, through jit.
  auto loss = [](const fx::Array& w, const fx::Array& h0, const fx::Array& xs) {
    auto [h, ys] = fx::scan([&](const fx::Array& c, const fx::Array& x) {
      fx::Array n = fx::tanh(fx::matmul(w, c) + x);
      return std::pair{n, fx::sum(n * n)};
    }, h0, xs, std::nullopt, /*reverse=*/true);
    return fx::sum(h) + fx::sum(ys);
  };
  fx::Array xs2 = normal(14, {8, 5}, fx::float32);
  auto g = fx::grad(loss);
  check_close({fx::jit(g)(w, h0, xs2)}, {g(w, h0, xs2)}, 2e-5);
}

TEST_CASE("scan hoisting: length 0 and 1, and scans without scanned inputs") {
  fx::Array a = normal(15, {3, 3}), c0 = normal(16, {3});
  auto f = [](const fx::Array& a, const fx::Array& c0, int64_t n) {
    return fx::scan([&](const fx::Array& c, const fx::Array& x) {
      fx::Array m = fx::exp(a * 0.1);
      return std::pair{fx::matmul(m, c) * 0.5 + x, c};
    }, c0, fx::ones({n, 3}));
  };
  for (int64_t n : {0, 1, 4}) {
    CAPTURE(n);
    fx::Program prog = fx::make_ir([&](const fx::Array& a, const fx::Array& c0) { return f(a, c0, n); })(a, c0);
    hoisted_and_checked(prog, {a, c0});
    auto jf = fx::jit([&](const fx::Array& a, const fx::Array& c0) { return f(a, c0, n); });
    auto [jc, jy] = jf(a, c0);
    auto [ec, ey] = f(a, c0, n);
    check_close({jc, jy}, {ec, ey}, 1e-12);
  }
  // fori_loop with static bounds is a scan without xs: invariant work still leaves.
  auto g = [](const fx::Array& a, const fx::Array& c0) {
    return fx::fori_loop(0, 5, [&](const fx::Array&, const fx::Array& c) { return fx::matmul(fx::exp(a * 0.1), c) * 0.5; }, c0);
  };
  fx::Program prog = fx::make_ir(g)(a, c0);
  fx::Program h = hoisted_and_checked(prog, {a, c0});
  const fx::Program* body = find_scan(h);
  REQUIRE(body);
  CHECK(count(*body, fx::Prim::exp) == 0);
}

TEST_CASE("scan hoisting: accumulators it must leave alone (found in review)") {
  // A length-0 scan whose accumulator adds a product of two consts: the carry passes through.
  fx::Array w = normal(20, {3, 3}), v = normal(21, {3}), c0 = normal(22, {3});
  auto f = [](const fx::Array& w, const fx::Array& v, const fx::Array& c0) {
    auto [c, ys] = fx::scan([&](const fx::Array& c, const fx::Array& x) { return std::pair{c + fx::matmul(w, v), x}; },
                            c0, fx::ones({0, 3}));
    return c;
  };
  hoisted_and_checked(fx::make_ir(f)(w, v, c0), {w, v, c0});
  check_close({fx::jit(f)(w, v, c0)}, {f(w, v, c0)}, 1e-12);

  // An f16 factor times an f16 const into an f32 accumulator (preferred_element_type f32): summing
  // the f16 factor over 1,000 steps first would overflow f16 (100 x 1000 > 65504).
  const int64_t steps = 1000;
  fx::Array h0 = fx::astype(fx::full({1}, 100.0), fx::float16);
  fx::Array wh = fx::astype(fx::full({1}, 0.001), fx::float16);
  auto g = [steps](const fx::Array& h0, const fx::Array& w) {
    auto [c, ys] = fx::scan([&](const std::pair<fx::Array, fx::Array>& s, const fx::Array& x) {
      auto [h, acc] = s;
      fx::Array d = fx::bind1(fx::Prim::dot_general, {h, w},
                              fx::Params{{"lhs_contracting", fx::IntList{0}}, {"rhs_contracting", fx::IntList{0}},
                                         {"lhs_batch", fx::IntList{}}, {"rhs_batch", fx::IntList{}},
                                         {"preferred_element_type", fx::float32}}, {});
      return std::pair{std::pair{fx::abs(h), acc + d}, x};
    }, std::pair{h0, fx::zeros({}, fx::float32)}, fx::zeros({steps}));
    return c.second;
  };
  fx::Program pg = fx::make_ir(g)(h0, wh);
  fx::Program hg = fx::hoist_scan_invariants(pg);
  fx::verify(hg);
  const double want = fx::eval(pg, {h0, wh})[0].item<float>();
  CHECK(std::isfinite(fx::eval(hg, {h0, wh})[0].item<float>()));
  CHECK(fx::eval(hg, {h0, wh})[0].item<float>() == doctest::Approx(want).epsilon(1e-3));
  CHECK(fx::jit(g)(h0, wh).item<float>() == doctest::Approx(want).epsilon(1e-3));

  // A factor larger than the carry (an outer product, 256x256 per step) is not stacked over the
  // 1,000 steps: the accumulator stays in the loop.
  fx::Array xs = normal(23, {1000, 256}, fx::float32), v0 = normal(24, {256}, fx::float32);
  auto k = [](const fx::Array& v, const fx::Array& xs) {
    auto [c, ys] = fx::scan([&](const std::pair<fx::Array, fx::Array>& s, const fx::Array& x) {
      auto [h, acc] = s;
      fx::Array n = fx::tanh(h * 0.5f + x);
      return std::pair{std::pair{n, acc + fx::matmul(fx::einsum("i,j->ij", n, h), v)}, fx::sum(x)};
    }, std::pair{v, fx::zeros({256}, fx::float32)}, xs);
    return c.second;
  };
  fx::Program pk = fx::make_ir(k)(v0, xs);
  fx::Program hk = fx::hoist_scan_invariants(pk);
  for (const fx::Eqn& e : hk.eqns) CHECK(hk.aval(fx::Atom(e.outputs[0])).size() < int64_t(1000) * 256 * 16);
  check_close({fx::jit(k)(v0, xs)}, {k(v0, xs)}, 1e-4);
}
