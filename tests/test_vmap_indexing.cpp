// vmap of the indexing primitives (gather, scatter, scatter_add, dynamic_slice,
// dynamic_update_slice) and the batch_dims form of gather/scatter that their batching rules emit.
//
// Every check is differential: vmap(f) over a batch equals fx::stack of f over the examples, for
// every placement of the batch dimension on every operand (including not mapped) and batch size 1,
// with negative and out-of-range indices so that the clamping of gather / dynamic slices and the
// dropping of scatter are exercised. Batched programs are verified and round-trip through text,
// and a vmapped take is one gather whatever the batch size.
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
using Fn = std::function<fx::Array(const Args&)>;
using vmap_test::kNone;
using vmap_test::placements;

// Deterministic, distinct-ish float data of `shape`.
fx::Array data(const fx::Shape& shape, int seed, fx::DType dtype = fx::float32) {
  std::vector<double> v(size_t(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = double((int64_t(i) * 37 + seed * 11) % 101) - 50.0;
  return fx::astype(fx::array(v, shape), dtype);
}

// Integers in [lo, hi) of `shape` and `dtype` (a deterministic LCG).
fx::Array indices(const fx::Shape& shape, int64_t lo, int64_t hi, int seed, fx::DType dtype = fx::int32) {
  std::vector<double> v(size_t(shape.numel()));
  uint64_t s = 0x9e3779b97f4a7c15ull * uint64_t(seed + 1);
  for (double& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = double(lo + int64_t((s >> 33) % uint64_t(hi - lo)));
  }
  return fx::astype(fx::array(v, shape), dtype);
}

// The per-example shape with a batch dimension of `size` inserted at `axis` (none: unchanged).
fx::Shape batched(const fx::Shape& s, int axis, int64_t size) {
  if (axis == kNone) return s;
  std::vector<int64_t> d = s.dims();
  d.insert(d.begin() + axis, size);
  return fx::Shape(d);
}

// Example b of an argument batched at `axis` (the argument itself when not mapped).
fx::Array example(const fx::Array& a, int axis, int64_t b) {
  if (axis == kNone) return a;
  fx::IntList start(size_t(a.ndim()), 0), limit = a.shape().dims();
  start[size_t(axis)] = b;
  limit[size_t(axis)] = b + 1;
  return fx::squeeze(fx::slice(a, start, limit), {axis});
}

std::string axes_str(const std::vector<int>& axes) {
  std::string s = "(";
  for (int a : axes) s += (a == kNone ? std::string("none") : std::to_string(a)) + " ";
  return s + ")";
}

fx::InAxes leaf_in_axes(const std::vector<int>& axes) {
  fx::LeafAxes leaves;
  for (int a : axes) leaves.axes.push_back(a == kNone ? fx::Axis(fx::none) : fx::Axis(a));
  return fx::in_axes(leaves);
}

// vmap(f) over `args` (batched at `axes`) equals stacking f over the examples, exactly; the batched
// program verifies and survives the text round trip.
void check_vmap(const Fn& f, const Args& args, const std::vector<int>& axes, int64_t size, const std::string& label) {
  INFO(label << " in_axes " << axes_str(axes) << " batch " << size);
  auto batched_f = fx::vmap([f](const Args& a) { return f(a); }, leaf_in_axes(axes));
  fx::Array got;
  try {
    got = batched_f(args);
  } catch (const fx::Error& e) {
    FAIL_CHECK("vmap raised: " << std::string(e.what()));
    return;
  }
  Args per;
  for (int64_t b = 0; b < size; ++b) {
    Args ex;
    for (size_t i = 0; i < args.size(); ++i) ex.push_back(example(args[i], axes[i], b));
    per.push_back(f(ex));
  }
  const fx::Array want = fx::stack(per, 0);
  REQUIRE(got.shape() == want.shape());
  CHECK(got.dtype() == want.dtype());
  CHECK(got.to_vector<double>() == want.to_vector<double>());

  const fx::Program p = fx::make_ir(batched_f)(args);
  CHECK_NOTHROW(fx::verify(p));
  std::ostringstream text;
  text << p;
  std::ostringstream again;
  again << fx::parse_program(text.str());
  CHECK(again.str() == text.str());
}


fx::Params gather_params(int64_t axis, int64_t batch_dims) {
  return batch_dims ? fx::Params{{"axis", axis}, {"batch_dims", batch_dims}} : fx::Params{{"axis", axis}};
}

// One primitive applied as is (the user's line recorded for errors).
fx::Array bind_prim(fx::Prim p, std::initializer_list<fx::Array> in, const fx::Params& params,
                    fx::SourceLoc loc = std::source_location::current()) {
  const std::vector<fx::Array> ins(in);
  return fx::bind1(p, ins, params, loc);
}

}  // namespace

TEST_CASE("vmap gather: every placement of x and indices, negative and out-of-range indices clamp") {
  // Primitive level: gather clamps raw indices (no wrapping), so -3 and 7 are clamped.
  for (int64_t axis : {0, 1})
    for (int64_t size : {3, 1}) {
      const fx::Shape xs{4, 5}, is{2, 3};
      const Fn f = [axis](const Args& a) { return bind_prim(fx::Prim::gather, {a[0], a[1]}, gather_params(axis, 0)); };
      for (const auto& ax : placements({2, 2})) {
        Args args{data(batched(xs, ax[0], size), 1), indices(batched(is, ax[1], size), -3, 8, int(size))};
        check_vmap(f, args, ax, size, "gather axis " + std::to_string(axis));
      }
    }
}

TEST_CASE("vmap gather with batch_dims: the vmap dimension joins or rides along the paired dims") {
  // Per example: x [3, 4, 5], indices [3, 2], gather along axis 2 with batch_dims 1.
  for (int64_t size : {2, 1}) {
    const Fn f = [](const Args& a) { return bind_prim(fx::Prim::gather, {a[0], a[1]}, gather_params(2, 1)); };
    for (const auto& ax : placements({3, 2})) {
      Args args{data(batched(fx::Shape{3, 4, 5}, ax[0], size), 2), indices(batched(fx::Shape{3, 2}, ax[1], size), -2, 7, 3)};
      check_vmap(f, args, ax, size, "gather batch_dims 1");
    }
  }
}

TEST_CASE("vmap take (API): wrapped constant indices and unsigned batched indices") {
  const int64_t size = 3;
  // Batched unsigned indices (no wrapping is staged): out-of-range ones clamp.
  for (int64_t axis : {0, 1, -1}) {
    const Fn f = [axis](const Args& a) { return fx::take(a[0], a[1], axis); };
    for (const auto& ax : placements({2, 1})) {
      Args args{data(batched(fx::Shape{4, 5}, ax[0], size), 3),
                indices(batched(fx::Shape{3}, ax[1], size), 0, 8, 5, fx::uint32)};
      check_vmap(f, args, ax, size, "take axis " + std::to_string(axis));
    }
  }
  // Constant negative indices are wrapped before staging; only x is batched.
  const fx::Array idx = fx::array<int32_t>({-1, 0, -5, 9});
  const Fn f = [idx](const Args& a) { return fx::take(a[0], idx, 1); };
  for (int xa : {0, 1, 2}) check_vmap(f, {data(batched(fx::Shape{2, 5}, xa, size), 4)}, {xa}, size, "take const idx");
}

TEST_CASE("vmap scatter and scatter_add: every placement, out-of-range indices are dropped") {
  for (fx::Prim prim : {fx::Prim::scatter, fx::Prim::scatter_add})
    for (int64_t axis : {0, 1})
      for (int64_t size : {3, 1}) {
        // Per example: x [4, 5], indices [3] in [-3, 8), updates x.shape with axis replaced by 3.
        const fx::Shape xs{4, 5}, is{3};
        const fx::Shape us = axis == 0 ? fx::Shape{3, 5} : fx::Shape{4, 3};
        const Fn f = [prim, axis](const Args& a) { return bind_prim(prim, {a[0], a[1], a[2]}, gather_params(axis, 0)); };
        for (const auto& ax : placements({2, 1, 2})) {
          Args args{data(batched(xs, ax[0], size), 1), indices(batched(is, ax[1], size), -3, 8, 7),
                    data(batched(us, ax[2], size), 2)};
          check_vmap(f, args, ax, size, std::string(fx::prim_name(prim)) + " axis " + std::to_string(axis));
        }
      }
}

TEST_CASE("vmap scatter_add with batch_dims and duplicate indices") {
  // Per example: x [3, 4], indices [3, 5] (duplicates), updates [3, 5], axis 1, batch_dims 1.
  for (fx::Prim prim : {fx::Prim::scatter, fx::Prim::scatter_add}) {
    const Fn f = [prim](const Args& a) { return bind_prim(prim, {a[0], a[1], a[2]}, gather_params(1, 1)); };
    for (const auto& ax : placements({2, 2, 2})) {
      const int64_t size = 2;
      Args args{data(batched(fx::Shape{3, 4}, ax[0], size), 5), indices(batched(fx::Shape{3, 5}, ax[1], size), -1, 5, 9),
                data(batched(fx::Shape{3, 5}, ax[2], size), 6)};
      check_vmap(f, args, ax, size, std::string(fx::prim_name(prim)) + " batch_dims 1");
    }
  }
}

TEST_CASE("vmap at_set / at_add (API) with unsigned indices") {
  const int64_t size = 2;
  for (bool add : {false, true}) {
    const Fn f = [add](const Args& a) { return add ? fx::at_add(a[0], a[1], a[2], 1) : fx::at_set(a[0], a[1], a[2], 1); };
    for (const auto& ax : placements({2, 1, 2})) {
      Args args{data(batched(fx::Shape{3, 4}, ax[0], size), 1),
                indices(batched(fx::Shape{3}, ax[1], size), 0, 6, 4, fx::uint32), data(batched(fx::Shape{3, 3}, ax[2], size), 8)};
      check_vmap(f, args, ax, size, add ? "at_add" : "at_set");
    }
  }
}

TEST_CASE("vmap dynamic_slice: batched and unbatched starts clamp like the primitive") {
  for (const fx::IntList& sizes : {fx::IntList{2, 3}, fx::IntList{5, 2}, fx::IntList{0, 6}})
    for (int64_t size : {3, 1}) {
      const Fn f = [sizes](const Args& a) { return fx::dynamic_slice(a[0], {a[1], a[2]}, sizes); };
      for (const auto& ax : placements({2, 0, 0}, {false, true, true})) {
        Args args{data(batched(fx::Shape{5, 6}, ax[0], size), 1),
                  indices(batched(fx::Shape{}, ax[1], size), -3, 9, 1, fx::int8),
                  indices(batched(fx::Shape{}, ax[2], size), 0, 12, 2, fx::uint32)};
        check_vmap(f, args, ax, size, "dynamic_slice sizes " + std::to_string(sizes[0]) + "x" + std::to_string(sizes[1]));
      }
    }
  // Rank 3 with only the middle start batched.
  const Fn f = [](const Args& a) { return fx::dynamic_slice(a[0], {a[1], a[2], a[3]}, {1, 2, 2}); };
  Args args{data(fx::Shape{4, 2, 5, 3}, 3), fx::scalar<int32_t>(1), indices(fx::Shape{4}, -2, 8, 3), fx::scalar<int32_t>(7)};
  check_vmap(f, args, {0, kNone, 0, kNone}, 4, "dynamic_slice rank 3");
}

TEST_CASE("vmap dynamic_update_slice: every placement of operand, update and starts") {
  for (int64_t size : {3, 1}) {
    const Fn f = [](const Args& a) { return fx::dynamic_update_slice(a[0], a[1], {a[2], a[3]}); };
    for (const auto& ax : placements({2, 2, 0, 0}, {false, false, true, true})) {
      Args args{data(batched(fx::Shape{5, 6}, ax[0], size), 1), data(batched(fx::Shape{2, 3}, ax[1], size), 2),
                indices(batched(fx::Shape{}, ax[2], size), -3, 9, 3, fx::int64),
                indices(batched(fx::Shape{}, ax[3], size), -4, 10, 4)};
      check_vmap(f, args, ax, size, "dynamic_update_slice");
    }
  }
  // An update as large as the operand along a batched-start axis, and rank 3.
  const Fn f3 = [](const Args& a) { return fx::dynamic_update_slice(a[0], a[1], {a[2], a[3], a[4]}); };
  Args args{data(fx::Shape{3, 4, 2, 5}, 5), data(fx::Shape{2, 2, 3}, 6), indices(fx::Shape{3}, -2, 6, 5),
            indices(fx::Shape{3}, -1, 4, 6), indices(fx::Shape{3}, 0, 9, 7)};
  check_vmap(f3, args, {0, kNone, 0, 0, 0}, 3, "dynamic_update_slice rank 3, all starts batched");
  Args last{args[0], args[1], fx::scalar<int32_t>(9), fx::scalar<int32_t>(-1), args[4]};
  check_vmap(f3, last, {0, kNone, kNone, kNone, 0}, 3, "dynamic_update_slice rank 3, last start batched");
  const Fn whole = [](const Args& a) { return fx::dynamic_update_slice(a[0], a[1], {a[2]}); };
  check_vmap(whole, {data(fx::Shape{2, 4}, 1), data(fx::Shape{2, 4}, 2), indices(fx::Shape{2}, -3, 3, 1)}, {0, 0, 0}, 2,
             "dynamic_update_slice whole");
}

TEST_CASE("vmap of take is one gather whatever the batch size") {
  const Fn f = [](const Args& a) { return fx::take(a[0], a[1], 0); };
  auto g = fx::vmap([f](const Args& a) { return f(a); });
  size_t eqns = 0;
  for (int64_t size : {2, 64}) {
    const fx::Program p = fx::make_ir(g)(Args{data(fx::Shape{size, 6, 3}, 1), indices(fx::Shape{size, 4}, 0, 6, 2, fx::uint32)});
    size_t gathers = 0;
    for (const fx::Eqn& e : p.eqns) {
      if (e.prim != fx::Prim::gather) continue;
      ++gathers;
      CHECK(e.params.get_int("batch_dims") == 1);
    }
    CHECK(gathers == 1);
    if (eqns) CHECK(p.eqns.size() == eqns);
    eqns = p.eqns.size();
  }
  CHECK(eqns <= 2);
}

TEST_CASE("batch_dims forms: errors name the op and the shapes") {
  const fx::Array x = data(fx::Shape{2, 3, 4}, 1);
  CHECK_THROWS_AS(fx::take(x, indices(fx::Shape{3, 1}, 0, 2, 1), 2, 1), fx::ShapeError);
  CHECK_THROWS_AS(fx::take(x, fx::scalar<int32_t>(0), 2, 1), fx::ShapeError);
  CHECK_THROWS_AS(fx::take(x, indices(fx::Shape{2, 1}, 0, 2, 1), 0, 1), fx::ShapeError);  // batch_dims > axis
  CHECK_THROWS_AS(fx::at_add(x, indices(fx::Shape{3}, 0, 2, 1), 1.0, 1, 1), fx::ShapeError);
  try {
    fx::take(x, indices(fx::Shape{3, 1}, 0, 2, 1), 2, 1);
  } catch (const fx::ShapeError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("take(") != std::string::npos);
    CHECK(msg.find("batch") != std::string::npos);
    CHECK(msg.find("test_vmap_indexing.cpp") != std::string::npos);
  }
  // The primitive's shape rule checks the params itself.
  CHECK_THROWS_AS(bind_prim(fx::Prim::gather, {x, indices(fx::Shape{3}, 0, 2, 1)}, gather_params(1, 1)), fx::ShapeError);
  CHECK_THROWS_AS(bind_prim(fx::Prim::gather, {x, indices(fx::Shape{2}, 0, 2, 1)}, gather_params(1, -1)), fx::ShapeError);
}

TEST_CASE("batch_dims through autodiff: jvp vs finite differences, vjp dot-product identity") {
  const fx::Array idx = indices(fx::Shape{3, 4}, -2, 7, 3);
  const fx::Array x = data(fx::Shape{3, 5}, 1, fx::float64) / 17.0;
  const fx::Array t = data(fx::Shape{3, 5}, 2, fx::float64) / 23.0;
  auto f = [idx](const fx::Array& v) { return fx::sin(fx::take(v, idx, 1, 1)); };
  const double eps = 1e-6;
  const fx::Array tangent = fx::jvp(f, std::tuple{x}, std::tuple{t}).second;
  const fx::Array fd = (f(x + eps * t) - f(x - eps * t)) / (2 * eps);
  const auto a = tangent.to_vector<double>(), b = fd.to_vector<double>();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-6));

  // <u, J v> = <J^T u, v> for a vmapped take (gather with batch_dims) and a vmapped at_add
  // (scatter_add with batch_dims), both linear in their float operands.
  auto dot = [](const fx::Array& p, const fx::Array& q) { return fx::sum(p * q).to_vector<double>()[0]; };
  {
    const fx::Array ix = indices(fx::Shape{3, 4}, 0, 7, 4, fx::uint32);
    auto g = [ix](const fx::Array& v) { return fx::vmap([](const fx::Array& r, const fx::Array& i) { return fx::take(r, i, 0); })(v, ix); };
    const fx::Array jv = fx::jvp(g, std::tuple{x}, std::tuple{t}).second;
    const fx::Array u = data(jv.shape(), 9, fx::float64);
    auto [y, pull] = fx::vjp(g, x);
    CHECK(dot(u, jv) == doctest::Approx(dot(pull(u), t)).epsilon(1e-12));
  }
  {
    const fx::Array ix = indices(fx::Shape{3, 4}, 0, 6, 5, fx::uint32);
    const fx::Array upd = data(fx::Shape{3, 4}, 3, fx::float64), tu = data(fx::Shape{3, 4}, 4, fx::float64);
    auto g = [ix](const fx::Array& v, const fx::Array& w) {
      return fx::vmap([](const fx::Array& r, const fx::Array& i, const fx::Array& s) { return fx::at_add(r, i, s, 0); })(v, ix, w);
    };
    const fx::Array jv = fx::jvp(g, std::tuple{x, upd}, std::tuple{t, tu}).second;
    const fx::Array u = data(jv.shape(), 9, fx::float64);
    auto [y, pull] = fx::vjp(g, x, upd);
    auto [cx, cu] = pull(u);
    CHECK(dot(u, jv) == doctest::Approx(dot(cx, t) + dot(cu, tu)).epsilon(1e-12));
  }
}

TEST_CASE("vmap indexing moves a batch dimension only when a rule needs it") {
  auto count = [](const fx::Program& p, fx::Prim prim) {
    size_t n = 0;
    for (const fx::Eqn& e : p.eqns) n += e.prim == prim;
    return n;
  };
  // Transposes emitted by the batching rule, i.e. before the batched primitive (out_axes 0 may
  // move the result afterwards: that one is the caller's request).
  auto moves_before = [](const fx::Program& p, fx::Prim prim) {
    size_t n = 0;
    for (const fx::Eqn& e : p.eqns) {
      if (e.prim == prim) return n;
      n += e.prim == fx::Prim::transpose;
    }
    return size_t(1000);
  };
  auto program = [](const Fn& f, const Args& args, const std::vector<int>& axes) {
    return fx::make_ir(fx::vmap([f](const Args& a) { return f(a); }, leaf_in_axes(axes)))(args);
  };
  const int64_t size = 3;
  // gather with only x or only the indices batched, anywhere: no transpose.
  const Fn take = [](const Args& a) { return bind_prim(fx::Prim::gather, {a[0], a[1]}, gather_params(1, 0)); };
  for (int xa : {0, 1, 2}) {
    const fx::Program p = program(take, {data(batched(fx::Shape{4, 5}, xa, size), 1), indices(fx::Shape{2, 2}, 0, 5, 1)},
                                  {xa, kNone});
    CHECK_MESSAGE(moves_before(p, fx::Prim::gather) == 0, "x batched at " << xa);
  }
  for (int ia : {0, 1, 2}) {
    const fx::Program p = program(take, {data(fx::Shape{4, 5}, 1), indices(batched(fx::Shape{2, 2}, ia, size), 0, 5, 1)},
                                  {kNone, ia});
    CHECK_MESSAGE(moves_before(p, fx::Prim::gather) == 0, "indices batched at " << ia);
  }
  // scatter_add with unbatched indices and only the updates batched, anywhere: x is broadcast,
  // nothing is transposed -- unless the batch dimension sits between the two index dimensions of
  // the updates (2), which must stay adjacent. Per example: x [3, 4], indices [2, 2], updates
  // [3, 2, 2] (axis 1).
  const Fn add = [](const Args& a) { return bind_prim(fx::Prim::scatter_add, {a[0], a[1], a[2]}, gather_params(1, 0)); };
  for (int ua : {0, 1, 2, 3}) {
    Args args{data(fx::Shape{3, 4}, 1), indices(fx::Shape{2, 2}, -1, 5, 2), data(batched(fx::Shape{3, 2, 2}, ua, size), 3)};
    const fx::Program p = program(add, args, {kNone, kNone, ua});
    CHECK_MESSAGE(moves_before(p, fx::Prim::scatter_add) == (ua == 2 ? 1 : 0), "updates batched at " << ua);
    check_vmap(add, args, {kNone, kNone, ua}, size, "scatter_add 2-d indices");
  }
  // dynamic_slice with unbatched starts: the batch dimension is sliced whole where it is.
  const Fn ds = [](const Args& a) { return fx::dynamic_slice(a[0], {a[1], a[2]}, {2, 2}); };
  for (int xa : {0, 1, 2}) {
    const fx::Program p = program(ds, {data(batched(fx::Shape{4, 5}, xa, size), 1), fx::scalar<int32_t>(1), fx::scalar<int32_t>(9)},
                                  {xa, kNone, kNone});
    CHECK(moves_before(p, fx::Prim::dynamic_slice) == 0);
    CHECK(count(p, fx::Prim::dynamic_slice) == 1);
  }
}
