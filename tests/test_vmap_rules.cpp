// Batching rules of the shape, reduction, sort, dot_general, random and custom-derivative
// primitives: for every placement of the batch dimension on every operand (first, middle, last,
// not mapped) and for batch size 1, vmap of the primitive equals the primitive applied to each
// example and stacked -- eagerly, and as a traced batched program that passes fx::verify. Plus the
// golden claim that a batched matmul stays one dot_general with no transpose, and that batched
// custom_jvp / custom_vjp / checkpoint calls keep the user's rules under later differentiation.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "interpreters/transpose.h"
#include "interpreters/vmap.h"
#include "transforms/vmap_api.h"

namespace fx = fluxion;
using fx::Array;
using fx::IntList;
using fx::Params;
using fx::Prim;

namespace {

using Fn = std::function<std::vector<Array>(const std::vector<Array>&)>;
constexpr int64_t none = fx::kNotMapped;

Array random_array(const fx::Shape& shape, fx::DType dtype, std::mt19937& gen) {
  std::vector<double> v(size_t(shape.numel()));
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int> small(-4, 4), bit(0, 1);
  std::uniform_int_distribution<uint32_t> word;
  for (double& x : v) {
    if (fx::is_float(dtype)) x = real(gen);
    else if (dtype == fx::DType::bool_) x = bit(gen);
    else if (dtype == fx::DType::uint32) x = word(gen);
    else x = small(gen);
  }
  return fx::astype(fx::array(v, shape), dtype);
}

/// Element i of x along dimension d.
Array take(const Array& x, int64_t d, int64_t i) {
  IntList start(size_t(x.ndim()), 0), limit = x.shape().dims();
  start[size_t(d)] = i;
  limit[size_t(d)] = i + 1;
  return fx::squeeze(fx::slice(x, start, limit), {d});
}

std::string describe(const std::vector<int64_t>& dims, int64_t n) {
  std::string s = "in_dims (";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + (dims[i] == none ? std::string("none") : std::to_string(dims[i]));
  return s + "), batch size " + std::to_string(n);
}

void check_same(const Array& got, const Array& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i);
    if (fx::is_float(want.dtype())) CHECK(g[i] == doctest::Approx(w[i]).epsilon(1e-5));
    else CHECK(g[i] == w[i]);
  }
}

/// vmap of fn (one example's operands of types `example`) with batch dims `dims` and size n,
/// against fn on each example stacked; eagerly and through a traced, verified batched program.
void check_vmap(const Fn& fn, const std::vector<fx::AbstractArray>& example, const std::vector<int64_t>& dims,
                int64_t n, uint32_t seed = 1) {
  const std::string what = describe(dims, n);
  std::mt19937 gen(seed);
  std::vector<Array> inputs;
  for (size_t i = 0; i < example.size(); ++i) {
    IntList shape = example[i].shape.dims();
    if (dims[i] != none) shape.insert(shape.begin() + dims[i], n);
    inputs.push_back(random_array(fx::Shape(shape), example[i].dtype, gen));
  }
  std::vector<std::vector<Array>> per_example;
  for (int64_t b = 0; b < n; ++b) {
    std::vector<Array> args;
    for (size_t i = 0; i < inputs.size(); ++i) args.push_back(dims[i] == none ? inputs[i] : take(inputs[i], dims[i], b));
    per_example.push_back(fn(args));
  }
  std::vector<Array> expected;
  for (size_t j = 0; j < per_example[0].size(); ++j) {
    std::vector<Array> column;
    for (auto& outs : per_example) column.push_back(outs[j]);
    expected.push_back(fx::stack(column, 0));
  }
  std::vector<Array> placeholders;
  for (const fx::AbstractArray& a : example) placeholders.push_back(fx::zeros(a.shape, a.dtype));
  const fx::Program p = fx::make_ir(fn)(placeholders);
  auto batched = [&](const std::vector<Array>& xs) {
    std::vector<fx::BatchedArray> args;
    for (size_t i = 0; i < xs.size(); ++i) args.push_back({xs[i], dims[i]});
    std::vector<Array> outs;
    for (const fx::BatchedArray& o : fx::vmap_eval(p, args, n)) outs.push_back(fx::batch_at(o, 0, n, {}));
    return outs;
  };
  std::vector<Array> eager = batched(inputs);
  const fx::Program bp = fx::make_ir(batched)(inputs);
  CHECK_NOTHROW(fx::verify(bp));
  std::vector<Array> traced = fx::eval(bp, inputs);
  REQUIRE(eager.size() == expected.size());
  for (size_t j = 0; j < expected.size(); ++j) {
    check_same(eager[j], expected[j], what + ", output " + std::to_string(j) + " (eager)");
    check_same(traced[j], expected[j], what + ", output " + std::to_string(j) + " (traced)");
  }
}

/// Every combination of batch placements (first, middle, last, not mapped) over the operands,
/// except all unmapped, with batch size 3; then batch size 1 with every operand mapped at 0.
void sweep(const Fn& fn, const std::vector<fx::AbstractArray>& example) {
  std::vector<std::vector<int64_t>> choices;
  for (const fx::AbstractArray& a : example) {
    std::vector<int64_t> c{0, int64_t(a.ndim()) / 2, int64_t(a.ndim()), none};
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    choices.push_back(c);
  }
  std::vector<size_t> at(example.size(), 0);
  while (true) {
    std::vector<int64_t> dims;
    for (size_t i = 0; i < at.size(); ++i) dims.push_back(choices[i][at[i]]);
    if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d != none; })) check_vmap(fn, example, dims, 3);
    size_t i = 0;
    while (i < at.size() && ++at[i] == choices[i].size()) at[i++] = 0;
    if (i == at.size()) break;
  }
  check_vmap(fn, example, std::vector<int64_t>(example.size(), 0), 1);
}

fx::AbstractArray f32(IntList shape) { return {fx::Shape(shape), fx::float32, false}; }
fx::AbstractArray i32(IntList shape) { return {fx::Shape(shape), fx::int32, false}; }

Fn prim(Prim p, Params params) {
  return [p, params](const std::vector<Array>& xs) { return fx::bind(p, xs, params, {}); };
}

}  // namespace

// ---- shape primitives ---------------------------------------------------------------------------
TEST_CASE("vmap rules: broadcast_in_dim") {
  sweep(prim(Prim::broadcast_in_dim, Params{{"shape", IntList{2, 4, 3}}, {"broadcast_dimensions", IntList{0, 2}}}),
        {f32({2, 3})});
  sweep(prim(Prim::broadcast_in_dim, Params{{"shape", IntList{4, 3}}, {"broadcast_dimensions", IntList{1}}}), {f32({1})});
  sweep(prim(Prim::broadcast_in_dim, Params{{"shape", IntList{2, 3}}, {"broadcast_dimensions", IntList{}}}), {f32({})});
}

TEST_CASE("vmap rules: reshape, transpose, squeeze, rev") {
  sweep(prim(Prim::reshape, Params{{"new_sizes", IntList{3, 2, 2}}}), {f32({2, 6})});
  sweep(prim(Prim::transpose, Params{{"permutation", IntList{2, 0, 1}}}), {f32({2, 3, 4})});
  sweep(prim(Prim::squeeze, Params{{"dimensions", IntList{0, 2}}}), {f32({1, 3, 1, 2})});
  sweep(prim(Prim::rev, Params{{"dimensions", IntList{0, 2}}}), {f32({2, 3, 4})});
}

TEST_CASE("vmap rules: concatenate") {
  sweep(prim(Prim::concatenate, Params{{"dimension", int64_t(1)}}), {f32({2, 3}), f32({2, 1}), f32({2, 2})});
  sweep(prim(Prim::concatenate, Params{{"dimension", int64_t(0)}}), {i32({3}), i32({2})});
}

TEST_CASE("vmap rules: pad, with the padding value batched or not") {
  // lo, hi, interior per dimension; a negative lo crops.
  sweep(prim(Prim::pad, Params{{"padding_config", IntList{1, 2, 1, -1, 1, 0}}}), {f32({3, 4}), f32({})});
  sweep(prim(Prim::pad, Params{{"padding_config", IntList{0, 1, 2}}}), {i32({3}), i32({})});
}

TEST_CASE("vmap rules: slice, with and without strides") {
  sweep(prim(Prim::slice, Params{{"start_indices", IntList{1, 0}}, {"limit_indices", IntList{3, 4}}}), {f32({4, 5})});
  sweep(prim(Prim::slice, Params{{"start_indices", IntList{0, 1}}, {"limit_indices", IntList{4, 5}}, {"strides", IntList{2, 3}}}),
        {f32({4, 5})});
}

TEST_CASE("vmap rules: iota beside batched values stays unbatched") {
  // iota has no operands: it is never batched, only combined with batched values.
  Fn fn = [](const std::vector<Array>& xs) {
    Array i = fx::bind1(Prim::iota, std::span<const Array>{}, Params{{"dtype", fx::float32}, {"shape", IntList{3}}, {"dimension", int64_t(0)}}, {});
    return std::vector<Array>{fx::bind1(Prim::concatenate, {xs[0], i}, Params{{"dimension", int64_t(0)}}, {})};
  };
  sweep(fn, {f32({2})});
}

// ---- reductions ---------------------------------------------------------------------------------
TEST_CASE("vmap rules: reductions keep the batch dim in place") {
  for (Prim p : {Prim::reduce_sum, Prim::reduce_max, Prim::reduce_min, Prim::reduce_prod}) {
    INFO(fx::prim_name(p));
    sweep(prim(p, Params{{"axes", IntList{0, 2}}}), {f32({2, 3, 4})});
    sweep(prim(p, Params{{"axes", IntList{1}}}), {f32({2, 3})});
    sweep(prim(p, Params{{"axes", IntList{}}}), {f32({3})});
  }
  for (Prim p : {Prim::reduce_and, Prim::reduce_or}) {
    INFO(fx::prim_name(p));
    sweep(prim(p, Params{{"axes", IntList{1}}}), {i32({2, 3, 2})});
    sweep(prim(p, Params{{"axes", IntList{0}}}), {{fx::Shape{4}, fx::DType::bool_, false}});
  }
  for (Prim p : {Prim::argmax, Prim::argmin}) {
    INFO(fx::prim_name(p));
    sweep(prim(p, Params{{"axes", IntList{1}}, {"index_dtype", fx::int32}}), {f32({2, 5, 3})});
    sweep(prim(p, Params{{"axes", IntList{0}}, {"index_dtype", fx::int32}}), {f32({4})});
  }
  sweep(prim(Prim::cumsum, Params{{"axis", int64_t(1)}, {"reverse", false}}), {f32({2, 4, 3})});
  sweep(prim(Prim::cumsum, Params{{"axis", int64_t(0)}, {"reverse", true}}), {i32({5})});
}

TEST_CASE("vmap rules: a reduction over a middle batch dim emits no transpose") {
  auto f = [](const Array& x) { return fx::sum(x, {0}); };
  fx::Program p = fx::make_ir(fx::vmap(f, fx::in_axes(1)))(fx::ones({3, 5, 4}));
  REQUIRE(p.eqns.size() == 1);
  CHECK(p.eqns[0].prim == Prim::reduce_sum);
  CHECK(p.eqns[0].params.get_ints("axes") == IntList{0});
}

// ---- sort ---------------------------------------------------------------------------------------
TEST_CASE("vmap rules: sort, one or more operands, unmapped ones broadcast") {
  sweep(prim(Prim::sort, Params{{"dimension", int64_t(1)}, {"is_stable", true}, {"num_keys", int64_t(1)}}), {f32({2, 5})});
  sweep(prim(Prim::sort, Params{{"dimension", int64_t(0)}, {"is_stable", true}, {"num_keys", int64_t(1)}}),
        {f32({4, 2}), i32({4, 2})});
  sweep(prim(Prim::sort, Params{{"dimension", int64_t(0)}, {"is_stable", true}, {"num_keys", int64_t(2)}}),
        {i32({6}), i32({6}), f32({6})});
}

// ---- dot_general --------------------------------------------------------------------------------
TEST_CASE("vmap rules: dot_general, every placement on both operands") {
  Params matmul{{"lhs_contracting", IntList{1}}, {"rhs_contracting", IntList{0}}, {"lhs_batch", IntList{}}, {"rhs_batch", IntList{}}};
  sweep(prim(Prim::dot_general, matmul), {f32({2, 3}), f32({3, 4})});
  // Batch dims already present, contracting dims not adjacent to the free ones.
  Params batched{{"lhs_contracting", IntList{0}}, {"rhs_contracting", IntList{2}}, {"lhs_batch", IntList{2}}, {"rhs_batch", IntList{0}}};
  sweep(prim(Prim::dot_general, batched), {f32({3, 2, 4}), f32({4, 5, 3})});
  // Vector dot, and a preferred element type.
  Params vdot{{"lhs_contracting", IntList{0}}, {"rhs_contracting", IntList{0}}, {"lhs_batch", IntList{}}, {"rhs_batch", IntList{}},
              {"preferred_element_type", fx::int32}};
  sweep(prim(Prim::dot_general, vdot), {{fx::Shape{4}, fx::int8, false}, {fx::Shape{4}, fx::int8, false}});
}

TEST_CASE("vmap rules golden: a batched matmul is one dot_general, no transpose") {
  auto mm = [](const Array& a, const Array& b) { return fx::matmul(a, b); };
  Array a = fx::ones({8, 2, 3}), b = fx::ones({8, 3, 4});
  fx::Program both = fx::make_ir(fx::vmap(mm))(a, b);
  CHECK_NOTHROW(fx::verify(both));
  REQUIRE(both.eqns.size() == 1);
  CHECK(both.eqns[0].prim == Prim::dot_general);
  CHECK(both.eqns[0].params.get_ints("lhs_batch") == IntList{0});
  CHECK(both.eqns[0].params.get_ints("rhs_batch") == IntList{0});
  CHECK(both.type(both.outvars[0].var).shape == fx::Shape{8, 2, 4});

  // One side batched, in the middle: still one dot_general (the batch is a free dim), and the
  // output's batch dim is moved to out_axes 0 only once, at the end, if at all.
  fx::Program lhs_only = fx::make_ir(fx::vmap(mm, fx::in_axes(0, fx::none)))(a, fx::ones({3, 4}));
  REQUIRE(lhs_only.eqns.size() == 1);
  CHECK(lhs_only.eqns[0].prim == Prim::dot_general);
  fx::Program rhs_only = fx::make_ir(fx::vmap(mm, fx::in_axes(fx::none, 0), fx::out_axes(1)))(fx::ones({2, 3}), b);
  // rhs's batch dim is a free dim: the output is (2, batch, 4), so out_axes 1 needs no transpose.
  REQUIRE(rhs_only.eqns.size() == 1);
  CHECK(rhs_only.eqns[0].prim == Prim::dot_general);
  CHECK(rhs_only.type(rhs_only.outvars[0].var).shape == fx::Shape{2, 8, 4});
}

// ---- random bits --------------------------------------------------------------------------------
TEST_CASE("vmap rules: threefry2x32 with scalar or per-counter keys, batched or not") {
  const fx::AbstractArray scalar_key{fx::Shape{}, fx::DType::uint32, false}, counters{fx::Shape{2, 3}, fx::DType::uint32, false};
  sweep(prim(Prim::threefry2x32, Params{}), {scalar_key, scalar_key, counters, counters});
  sweep(prim(Prim::threefry2x32, Params{}), {counters, scalar_key, counters, counters});
  const fx::AbstractArray scalar_counter{fx::Shape{}, fx::DType::uint32, false};
  sweep(prim(Prim::threefry2x32, Params{}), {scalar_key, scalar_key, scalar_counter, scalar_counter});
}

// ---- custom derivatives and checkpoint ----------------------------------------------------------
namespace {
// A running sum with a deliberately "wrong" derivative rule (the reversed running sum of the
// tangent), so that the tests can tell the user's rule from differentiation of the body.
Array running_sum(const Array& x) { return fx::cumsum(x, 0); }
Array reverse_running_sum(const Array& t) { return fx::flip(fx::cumsum(fx::flip(t, {0}), 0), {0}); }

auto custom_running_sum = fx::custom_jvp([](const Array& x) { return running_sum(x); },
                                         [](auto primals, auto tangents) {
                                           return std::pair{running_sum(std::get<0>(primals)),
                                                            reverse_running_sum(std::get<0>(tangents))};
                                         });
auto vjp_running_sum = fx::custom_vjp([](const Array& x) { return std::pair{running_sum(x), std::tuple<>{}}; },
                                      [](const std::tuple<>&, const Array& ct) { return running_sum(ct); });

size_t count_prim(const fx::Program& p, Prim prim) {
  return size_t(std::count_if(p.eqns.begin(), p.eqns.end(), [&](const fx::Eqn& e) { return e.prim == prim; }));
}

/// grad of sum(vmap(f)(xs)) equals, row by row, grad of sum(f(x)).
template <class F>
void check_grad_of_vmap(const F& f, const Array& xs) {
  auto loss = [&](const Array& x) { return fx::sum(fx::vmap(f)(x)); };
  Array g = fx::grad(loss)(xs);
  auto one = [&](const Array& x) { return fx::sum(f(x)); };
  std::vector<Array> rows;
  for (int64_t b = 0; b < xs.shape()[0]; ++b) rows.push_back(fx::grad(one)(take(xs, 0, b)));
  check_same(g, fx::stack(rows, 0), "grad of vmap");
  check_same(fx::vmap(fx::grad(one))(xs), fx::stack(rows, 0), "vmap of grad");
}
}  // namespace

TEST_CASE("vmap rules: custom_jvp stays one custom_jvp_call, and its rule still applies") {
  Fn fn = [](const std::vector<Array>& xs) { return std::vector<Array>{custom_running_sum(xs[0])}; };
  sweep(fn, {f32({4, 2})});
  Array xs = fx::array(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  fx::Program p = fx::make_ir(fx::vmap([](const Array& x) { return custom_running_sum(x); }))(xs);
  CHECK(count_prim(p, Prim::custom_jvp_call) == 1);
  CHECK_NOTHROW(fx::verify(p));
  check_grad_of_vmap([](const Array& x) { return custom_running_sum(x); }, xs);
  // The rule gives d/dx sum(cumsum(x)) as the reversed running sum of ones: (1, 2, 3, 4), not (4, 3, 2, 1).
  auto loss = [](const Array& x) { return fx::sum(fx::vmap([](const Array& r) { return custom_running_sum(r); })(x)); };
  CHECK(fx::grad(loss)(xs).to_vector<float>() == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4});
}

TEST_CASE("vmap rules: custom_jvp closing over a value, batched or not") {
  Array w = fx::array(std::vector<float>{1, -2, 3, 0.5f, 2, 1}, {3, 2});
  auto f = fx::custom_jvp([w](const Array& x) { return fx::matmul(x, w); },
                          [w](auto p, auto t) { return std::pair{fx::matmul(std::get<0>(p), w), fx::matmul(std::get<0>(t), w)}; });
  Fn fn = [&](const std::vector<Array>& xs) { return std::vector<Array>{f(xs[0])}; };
  sweep(fn, {f32({2, 3})});
  check_grad_of_vmap(f, fx::array(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}));
}

TEST_CASE("vmap rules: custom_vjp batches fwd and bwd; unbatched arguments get summed cotangents") {
  Fn fn = [](const std::vector<Array>& xs) { return std::vector<Array>{vjp_running_sum(xs[0])}; };
  sweep(fn, {f32({4, 3})});
  Array xs = fx::array(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  fx::Program p = fx::make_ir(fx::vmap([](const Array& x) { return vjp_running_sum(x); }))(xs);
  CHECK(count_prim(p, Prim::custom_vjp_call) == 1);
  CHECK_NOTHROW(fx::verify(p));
  check_grad_of_vmap([](const Array& x) { return vjp_running_sum(x); }, xs);
  // bwd is the running sum of the cotangent: (1, 2, 3, 4) per row, where cumsum's true gradient is (4, 3, 2, 1).
  auto loss = [](const Array& x) { return fx::sum(fx::vmap([](const Array& r) { return vjp_running_sum(r); })(x)); };
  CHECK(fx::grad(loss)(xs).to_vector<float>() == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4});

  // Two arguments, the second not batched: its cotangent is the sum over the batch.
  auto mm = fx::custom_vjp([](const Array& x, const Array& w) { return std::pair{fx::matmul(x, w), std::pair{x, w}}; },
                           [](const std::pair<Array, Array>& res, const Array& ct) {
                             return std::tuple{fx::matmul(ct, fx::transpose(res.second)), fx::matmul(fx::transpose(res.first), ct)};
                           });
  Array x3 = fx::array(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2});
  Array w = fx::array(std::vector<float>{1, 0, -1, 2, 1, 3}, {2, 3});
  auto batched_loss = [&](const Array& xb, const Array& wb) {
    auto row = [&](const Array& r, const Array& ww) { return mm(fx::reshape(r, {1, 2}), ww); };
    return fx::sum(fx::vmap(row, fx::in_axes(0, fx::none))(xb, wb));
  };
  auto [gx, gw] = fx::grad<0, 1>(batched_loss)(x3, w);
  auto plain = [&](const Array& xb, const Array& wb) { return fx::sum(fx::matmul(xb, wb)); };
  auto [ex, ew] = fx::grad<0, 1>(plain)(x3, w);
  check_same(gx, ex, "cotangent of the batched argument");
  check_same(gw, ew, "cotangent of the unbatched argument (summed over the batch)");
}

TEST_CASE("vmap rules: checkpoint batches its program and keeps remat under grad") {
  auto f = [](const Array& x) { return fx::cumsum(fx::flip(x, {0}), 0); };
  Fn fn = [&](const std::vector<Array>& xs) { return std::vector<Array>{fx::checkpoint(f)(xs[0])}; };
  sweep(fn, {f32({3, 2})});
  Array xs = fx::array(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  fx::Program p = fx::make_ir(fx::vmap(fx::checkpoint(f)))(xs);
  CHECK(count_prim(p, Prim::checkpoint) == 1);
  CHECK_NOTHROW(fx::verify(p));
  check_grad_of_vmap(fx::checkpoint(f), xs);
}

TEST_CASE("vmap rules: custom_vjp_linear (forward through custom_vjp, then transposed) batches its bwd") {
  // jvp through a custom_vjp function leaves a custom_vjp_linear eqn in the traced program; only its
  // transpose (the user's bwd) can run, so the batched program is checked by transposing it.
  auto lin = [](const Array& x, const Array& t) { return fx::jvp(vjp_running_sum, std::tuple{x}, std::tuple{t}).second; };
  const int64_t n = 3;
  fx::Program p = fx::make_ir(lin)(fx::zeros({4}), fx::zeros({4}));
  REQUIRE(count_prim(p, Prim::custom_vjp_linear) == 1);
  std::mt19937 gen(7);
  Array xs = random_array(fx::Shape{n, 4}, fx::float32, gen);
  Array cts = random_array(fx::Shape{n, 4}, fx::float32, gen);
  for (int64_t t_dim : {int64_t(0), int64_t(1), none}) {
    INFO("tangent batch dim " << t_dim);
    Array ts = random_array(t_dim == 0 ? fx::Shape{n, 4} : t_dim == 1 ? fx::Shape{4, n} : fx::Shape{4}, fx::float32, gen);
    auto batched = [&](const Array& x, const Array& t) {
      std::vector<fx::BatchedArray> args{{x, 0}, {t, t_dim}};
      return fx::batch_at(fx::vmap_eval(p, args, n)[0], 0, n, {});
    };
    fx::Program bp = fx::make_ir(batched)(xs, ts);
    CHECK(count_prim(bp, Prim::custom_vjp_linear) == 1);
    CHECK_NOTHROW(fx::verify(bp));
    const std::vector<Array> known{xs}, batched_cts{cts};
    Array got = fx::transpose_eval(bp, {false, true}, known, batched_cts).at(0);
    std::vector<Array> rows;
    Array summed = fx::zeros({4});
    for (int64_t b = 0; b < n; ++b) {
      Array x = take(xs, 0, b);
      const std::vector<Array> known_x{x}, ct_b{take(cts, 0, b)};
      Array ct = fx::transpose_eval(p, {false, true}, known_x, ct_b).at(0);
      rows.push_back(ct);
      summed = summed + ct;
    }
    Array want = t_dim == none ? summed : t_dim == 0 ? fx::stack(rows, 0) : fx::stack(rows, 1);
    check_same(got, want, "cotangent of the tangents");
  }
}

TEST_CASE("vmap rules: nested vmap of a matmul and of a custom_jvp call") {
  auto mm = [](const Array& a, const Array& b) { return fx::matmul(a, b); };
  std::mt19937 gen(3);
  Array a = random_array(fx::Shape{2, 3, 4, 5}, fx::float32, gen), b = random_array(fx::Shape{2, 3, 5, 6}, fx::float32, gen);
  fx::Program p = fx::make_ir(fx::vmap(fx::vmap(mm)))(a, b);
  REQUIRE(p.eqns.size() == 1);  // two levels of batch, still one dot_general
  CHECK(p.eqns[0].params.get_ints("lhs_batch") == IntList{0, 1});
  check_same(fx::vmap(fx::vmap(mm))(a, b), fx::matmul(a, b), "vmap(vmap(matmul))");

  Array xs = random_array(fx::Shape{2, 3, 4}, fx::float32, gen);
  auto f = [](const Array& x) { return custom_running_sum(x); };
  check_same(fx::vmap(fx::vmap(f))(xs), fx::cumsum(xs, 2), "vmap(vmap(custom_jvp))");
  auto loss = [&](const Array& x) { return fx::sum(fx::vmap(fx::vmap(f))(x)); };
  std::vector<float> g = fx::grad(loss)(xs).to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == float(i % 4 + 1));  // the user's rule: (1, 2, 3, 4) per row
}
