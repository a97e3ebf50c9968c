// vmap of control flow (cond, switch_, while_loop, fori_loop, scan) against a loop of the unbatched
// function over the examples (fx::stack), for every placement of the batch dimension on every
// argument -- including the predicate or branch index, so that batched predicates (every branch
// plus select; a while that runs until every example is done) are exercised as much as batched
// operands. Batched programs pass fx::verify and survive the text round trip.
#include <doctest/doctest.h>
#include <fluxion.h>

#include "vmap_placements.h"

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace fx = fluxion;

namespace {

using Args = std::vector<fx::Array>;
using Outs = std::vector<fx::Array>;
using Fn = std::function<Outs(const Args&)>;
using vmap_test::kNone;
using vmap_test::placements;

// Deterministic float data of `shape`, in [-1, 1].
fx::Array data(const fx::Shape& shape, int seed) {
  std::vector<double> v(size_t(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = (double((int64_t(i) * 37 + seed * 11) % 41) - 20.0) / 20.0;
  return fx::astype(fx::array(v, shape), fx::float32);
}

// int32 values of `shape`, given explicitly.
fx::Array ints(const std::vector<double>& v, const fx::Shape& shape) { return fx::astype(fx::array(v, shape), fx::int32); }

// Example b of an argument batched at `axis` (the argument itself when not mapped).
fx::Array example(const fx::Array& a, int axis, int64_t b) {
  if (axis == kNone) return a;
  fx::IntList start(size_t(a.ndim()), 0), limit = a.shape().dims();
  start[size_t(axis)] = b;
  limit[size_t(axis)] = b + 1;
  return fx::squeeze(fx::slice(a, start, limit), {axis});
}

// The argument batched at `axis`: the examples stacked there.
fx::Array batch_of(const std::vector<fx::Array>& examples, int axis) { return fx::stack(examples, axis); }

fx::InAxes leaf_in_axes(const std::vector<int>& axes) {
  fx::LeafAxes leaves;
  for (int a : axes) leaves.axes.push_back(a == kNone ? fx::Axis(fx::none) : fx::Axis(a));
  return fx::in_axes(leaves);
}

std::string axes_str(const std::vector<int>& axes) {
  std::string s = "(";
  for (int a : axes) s += (a == kNone ? std::string("none") : std::to_string(a)) + " ";
  return s + ")";
}

void check_close(const fx::Array& got, const fx::Array& want) {
  REQUIRE(got.shape() == want.shape());
  CHECK(got.dtype() == want.dtype());
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(g[i] - w[i]) <= 1e-5 * (1.0 + std::abs(w[i])));
  }
}

// vmap(f) over `per_example[b]` (each argument batched at axes[i], not at all for kNone: then the
// example-0 value is shared) equals stacking f over the examples; the batched program verifies and
// round-trips through text. Returns the batched program.
fx::Program check_vmap(const Fn& f, const std::vector<Args>& per_example, const std::vector<int>& axes,
                       const std::string& label) {
  INFO(label << " in_axes " << axes_str(axes));
  const int64_t n = int64_t(per_example.size());
  Args args;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] == kNone) {
      args.push_back(per_example[0][i]);
      continue;
    }
    std::vector<fx::Array> col;
    for (int64_t b = 0; b < n; ++b) col.push_back(per_example[size_t(b)][i]);
    args.push_back(batch_of(col, axes[i]));
  }
  auto batched_f = fx::vmap([f](const Args& a) { return f(a); }, leaf_in_axes(axes));
  Outs got;
  try {
    got = batched_f(args);
  } catch (const fx::Error& e) {
    FAIL_CHECK("vmap raised: " << std::string(e.what()));
    return {};
  }
  std::vector<Outs> loop;
  for (int64_t b = 0; b < n; ++b) {
    Args ex;
    for (size_t i = 0; i < args.size(); ++i) ex.push_back(example(args[i], axes[i], b));
    loop.push_back(f(ex));
  }
  REQUIRE(got.size() == loop[0].size());
  for (size_t j = 0; j < got.size(); ++j) {
    CAPTURE(j);
    std::vector<fx::Array> col;
    for (const Outs& o : loop) col.push_back(o[j]);
    check_close(got[j], fx::stack(col, 0));
  }
  const fx::Program p = fx::make_ir(batched_f)(args);
  CHECK_NOTHROW(fx::verify(p));
  std::ostringstream text;
  text << p;
  std::ostringstream again;
  again << fx::parse_program(text.str());
  CHECK(again.str() == text.str());
  return p;
}


size_t count_eqns(const fx::Program& p, fx::Prim prim) {
  size_t k = 0;
  for (const fx::Eqn& e : p.eqns) k += e.prim == prim;
  return k;
}

}  // namespace

TEST_CASE("vmap cond: batched and unbatched predicate and operands") {
  // The true branch's second output is unbatched when y is, the false branch's is batched when x is.
  Fn f = [](const Args& a) {
    auto r = fx::cond(
        a[0] > 0.f, [&] { return Outs{a[1] * 2.f + a[2], a[2] * 3.f}; }, [&] { return Outs{-a[1] * a[2], a[1] + 1.f}; });
    return r;
  };
  std::vector<Args> ex;
  const std::vector<float> s{0.5f, -1.f, 2.f};
  for (int b = 0; b < 3; ++b) ex.push_back({fx::scalar(s[size_t(b)]), data({4}, b), data({4}, 10 + b)});
  for (const auto& axes : placements({0, 1, 1})) check_vmap(f, ex, axes, "cond");

  // An unbatched predicate keeps one cond and selects nothing; a batched one runs both branches.
  const fx::Program one = check_vmap(f, ex, {kNone, 0, 0}, "cond unbatched predicate");
  CHECK(count_eqns(one, fx::Prim::cond) == 1);
  CHECK(count_eqns(one, fx::Prim::select) == 0);
  const fx::Program both = check_vmap(f, ex, {0, 0, kNone}, "cond batched predicate");
  CHECK(count_eqns(both, fx::Prim::cond) == 0);
  CHECK(count_eqns(both, fx::Prim::select) == 2);
}

TEST_CASE("vmap switch_: batched index, clamped out of range") {
  Fn f = [](const Args& a) {
    return Outs{fx::switch_(a[0], [&] { return a[1]; }, [&] { return a[1] * a[1]; }, [&] { return -a[1] + 0.5f; })};
  };
  const std::vector<double> idx{-3, 0, 1, 2, 7};
  std::vector<Args> ex;
  for (int b = 0; b < 5; ++b) ex.push_back({ints({idx[size_t(b)]}, {}), data({2, 3}, b)});
  for (const auto& axes : placements({0, 2})) check_vmap(f, ex, axes, "switch");
}

TEST_CASE("vmap while_loop: batched predicate runs until every example is done") {
  // Counts steps of x <- 1.5 x + 1 while i < limit: examples stop at different steps.
  Fn f = [](const Args& a) {
    using C = std::pair<fx::Array, fx::Array>;
    const fx::Array& limit = a[0];
    auto r = fx::while_loop([&](const C& c) { return c.first < limit; },
                            [&](const C& c) { return C{c.first + 1, c.second * 1.5f + a[2]}; }, C{fx::scalar(int32_t(0)), a[1]});
    return Outs{r.first, r.second};
  };
  const std::vector<double> limits{0, 3, 1, 5};
  std::vector<Args> ex;
  for (int b = 0; b < 4; ++b) ex.push_back({ints({limits[size_t(b)]}, {}), data({3}, b), data({3}, 7 + b)});
  for (const auto& axes : placements({0, 1, 1})) check_vmap(f, ex, axes, "while");

  // An unbatched predicate: one while whose body is batched, no masking.
  const fx::Program p = check_vmap(f, ex, {kNone, 0, kNone}, "while unbatched predicate");
  CHECK(count_eqns(p, fx::Prim::while_) == 1);
}

TEST_CASE("vmap while_loop: predicate on a batched carry") {
  // Halve until below a threshold: the predicate depends on the carry, which is batched.
  Fn f = [](const Args& a) {
    auto r = fx::while_loop([](const fx::Array& x) { return fx::sum(x) > 1.f; }, [](const fx::Array& x) { return x * 0.5f; },
                            a[0]);
    return Outs{r};
  };
  std::vector<Args> ex;
  for (int b = 0; b < 3; ++b) ex.push_back({fx::abs(data({2}, b)) * float(1 << (3 * b)) + 0.25f});
  for (const auto& axes : placements({1})) check_vmap(f, ex, axes, "while carry predicate");
}

TEST_CASE("vmap while_loop with max_steps (bounded, a scan)") {
  Fn f = [](const Args& a) {
    using C = std::pair<fx::Array, fx::Array>;
    const fx::Array& limit = a[0];
    auto r = fx::while_loop([&](const C& c) { return c.first < limit; },
                            [&](const C& c) { return C{c.first + 1, c.second * 1.5f + 1.f}; }, C{fx::scalar(int32_t(0)), a[1]},
                            fx::max_steps(4));
    return Outs{r.first, r.second};
  };
  const std::vector<double> limits{0, 3, 9};  // the last is cut at 4 steps
  std::vector<Args> ex;
  for (int b = 0; b < 3; ++b) ex.push_back({ints({limits[size_t(b)]}, {}), data({3}, b)});
  for (const auto& axes : placements({0, 1})) check_vmap(f, ex, axes, "bounded while");
}

TEST_CASE("vmap fori_loop: static bounds (scan) and array bounds (while)") {
  Fn static_bounds = [](const Args& a) {
    return Outs{fx::fori_loop(0, 5, [&](const fx::Array& i, const fx::Array& acc) { return acc * a[0] + fx::astype(i, fx::float32); },
                              a[1])};
  };
  Fn array_bounds = [](const Args& a) {
    return Outs{fx::fori_loop(fx::scalar(int32_t(1)), a[2],
                              [&](const fx::Array& i, const fx::Array& acc) { return acc * a[0] + fx::astype(i, fx::float32); },
                              a[1])};
  };
  const std::vector<double> upper{1, 4, 2};
  std::vector<Args> ex;
  for (int b = 0; b < 3; ++b) ex.push_back({data({2}, b), data({2}, 5 + b), ints({upper[size_t(b)]}, {})});
  for (const auto& axes : placements({1, 1})) check_vmap(static_bounds, ex, {axes[0], axes[1], kNone}, "fori static");
  for (const auto& axes : placements({1, 1, 0})) check_vmap(array_bounds, ex, axes, "fori array bounds");
}

TEST_CASE("vmap scan: batched consts, carry and xs, forward and reverse") {
  for (bool reverse : {false, true}) {
    Fn f = [reverse](const Args& a) {
      const fx::Array& w = a[2];  // captured: a const of the body
      auto [c, ys] = fx::scan(
          [&](const fx::Array& c, const fx::Array& x) { return std::pair{c * w + x, Outs{c * x, x * 2.f}}; }, a[0], a[1],
          std::nullopt, reverse);
      Outs r{c};
      r.insert(r.end(), ys.begin(), ys.end());
      return r;
    };
    std::vector<Args> ex;
    for (int b = 0; b < 3; ++b) ex.push_back({data({2}, b), data({4, 2}, 3 + b), data({2}, 9 + b)});
    for (const auto& axes : placements({1, 2, 1})) check_vmap(f, ex, axes, reverse ? "scan reverse" : "scan");
  }
}

TEST_CASE("vmap scan: a carry the body makes batched enters batched") {
  // c starts unbatched, but adds the batched x: the carry must be batched from the first step.
  Fn f = [](const Args& a) {
    auto [c, ys] = fx::scan([](const fx::Array& c, const fx::Array& x) { return std::pair{c + x, c}; }, a[0], a[1]);
    return Outs{c, ys};
  };
  std::vector<Args> ex;
  for (int b = 0; b < 3; ++b) ex.push_back({data({2}, b), data({5, 2}, 4 + b)});
  check_vmap(f, ex, {kNone, 0}, "scan carry fixpoint");
  check_vmap(f, ex, {kNone, 2}, "scan carry fixpoint, xs batched last");
}

TEST_CASE("vmap scan: length 0 and unbatched xs with a batched carry") {
  Fn f = [](const Args& a) {
    auto [c, ys] = fx::scan([](const fx::Array& c, const fx::Array& x) { return std::pair{c * x + 1.f, c - x}; }, a[0], a[1]);
    return Outs{c, ys};
  };
  std::vector<Args> empty, full;
  for (int b = 0; b < 2; ++b) {
    empty.push_back({data({3}, b), fx::zeros({0, 3}, fx::float32)});
    full.push_back({data({3}, b), data({4, 3}, 6 + b)});
  }
  for (const auto& axes : placements({1, 2})) check_vmap(f, empty, axes, "scan length 0");
  check_vmap(f, full, {0, kNone}, "scan batched carry, unbatched xs");
}

TEST_CASE("vmap of nested control flow: a scan inside a cond inside a while, batched predicates") {
  // while i < limit: x = cond(sum(x) > 0, scan-accumulate over the rows of m, -x / 2); a concrete
  // array captured by the branch stays an unbatched operand.
  const fx::Array m = data({3, 2}, 4);
  Fn f = [m](const Args& a) {
    using C = std::pair<fx::Array, fx::Array>;
    auto r = fx::while_loop(
        [&](const C& c) { return c.first < a[0]; },
        [&](const C& c) {
          fx::Array x = fx::cond(
              fx::sum(c.second) > 0.f,
              [&] {
                auto [acc, ys] = fx::scan([](const fx::Array& acc, const fx::Array& row) { return std::pair{acc * 0.5f + row, acc}; },
                                          c.second, m);
                return acc;
              },
              [&] { return -c.second * 0.5f + 0.25f; });
          return C{c.first + 1, x};
        },
        C{fx::scalar(int32_t(0)), a[1]});
    return Outs{r.first, r.second};
  };
  const std::vector<double> limits{2, 0, 5};
  std::vector<Args> ex;
  for (int b = 0; b < 3; ++b) ex.push_back({ints({limits[size_t(b)]}, {}), data({2}, 2 * b)});
  for (const auto& axes : placements({0, 1})) check_vmap(f, ex, axes, "nested");
}

TEST_CASE("vmap of vmap over a scan equals a double loop") {
  auto g = [](const fx::Array& c0, const fx::Array& xs) {
    auto [c, ys] = fx::scan([](const fx::Array& c, const fx::Array& x) { return std::pair{c * 0.5f + x, c * x}; }, c0, xs);
    return std::pair{c, ys};
  };
  const fx::Array c0 = data({2, 3}, 1);      // [outer, inner]
  const fx::Array xs = data({2, 3, 4}, 2);   // [outer, inner, length]: scanned over the last axis
  auto inner = fx::vmap([g](const fx::Array& c, const fx::Array& x) { return g(c, fx::moveaxis(x, -1, 0)); });
  auto outer = fx::vmap(inner);
  auto [c, ys] = outer(c0, xs);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      auto [cw, ysw] = g(example(example(c0, 0, i), 0, j), fx::moveaxis(example(example(xs, 0, i), 0, j), -1, 0));
      check_close(example(example(c, 0, i), 0, j), cw);
      check_close(example(example(ys, 0, i), 0, j), ysw);
    }
  CHECK_NOTHROW(fx::verify(fx::make_ir(outer)(c0, xs)));
}

TEST_CASE("vmap of grad of a function with a cond (per-example gradients)") {
  auto loss = [](const fx::Array& x) {
    return fx::cond(fx::sum(x) > 0.f, [&] { return fx::sum(x * x); }, [&] { return fx::sum(fx::sin(x)); });
  };
  const fx::Array xs = data({4, 3}, 3);
  const fx::Array got = fx::vmap(fx::grad(loss))(xs);
  std::vector<fx::Array> loop;
  for (int64_t b = 0; b < 4; ++b) loop.push_back(fx::grad(loss)(example(xs, 0, b)));
  check_close(got, fx::stack(loop, 0));
}
