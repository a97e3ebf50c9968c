// The op table under reverse-mode differentiation. Every differentiable entry, over its samples, in
// float64 (the cases of op_table_ad.h):
//   * vjp satisfies the dot-product identity <u, J v> = <J^T u, v> against jvp, and linearize agrees
//     with jvp,
//   * second order: for s(x) = <u, f(x)>, the Hessian-vector product by forward-over-reverse (jvp of
//     grad), reverse-over-reverse (grad of <grad s, v>, and vjp of grad) agrees with finite
//     differences of grad,
//   * every derived program (jvp_program, the linearize and vjp forward/backward programs,
//     grad_program) verifies and its interpretation agrees with eager evaluation.
// Plus transpose_program on a program exercising each linear primitive, checked by the same
// identity, and a check (from the registry's records) that every primitive linear in listed
// operands has such a program.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "op_table_ad.h"
#include "prims/registry.h"
#include "transforms/autodiff.h"
#include "interpreters/jvp.h"
#include "interpreters/transpose.h"
#include "interpreters/vjp.h"

namespace optable {

TEST_CASE("vjp op table: vjp satisfies <u, J v> = <J^T u, v>, and linearize agrees with jvp") {
  for (const AdCase& c : ad_cases()) {
    if (!c.op->applies(Check::vjp)) continue;
    CAPTURE(c.what);
    Arrays x = c.floats(), v = random_like(x, -1, 1, c.seed);
    auto f = c.fn();
    try {
      auto [y, jv] = fx::jvp(f, std::tuple{x}, std::tuple{v});
      Arrays u = random_like({y}, -1, 1, c.seed + 1000);
      auto [y2, f_vjp] = fx::vjp(f, x);
      Arrays jtu = f_vjp(u[0]);
      REQUIRE(jtu.size() == x.size());
      for (size_t k = 0; k < x.size(); ++k) CHECK(jtu[k].aval().same_type(x[k].aval()));
      auto [y3, f_lin] = fx::linearize(f, x);
      fx::Array lin_v = f_lin(v);
      CHECK(lin_v.aval().same_type(jv.aval()));
      std::vector<double> a = host_data(lin_v), b = host_data(jv);
      const Tolerance rounding = default_tolerance(Check::vjp, fx::float64);
      for (size_t i = 0; i < a.size(); ++i)
        CHECK_MESSAGE(close(a[i], b[i], rounding), "linearize " << a[i] << " vs jvp " << b[i] << " at " << i);
      double lhs = dot(u, {jv}), rhs = dot(jtu, v);
      double scale = abs_dot(u, {jv}) + abs_dot(jtu, v);
      CHECK_MESSAGE(close(lhs, rhs, Tolerance{0, c.op->tolerance(Check::vjp, y.dtype()).atol * (1 + scale)}),
                    "<u, Jv> = " << lhs << ", <J^T u, v> = " << rhs);
    } catch (const std::exception& e) {
      FAIL_CHECK("raised: " << std::string(e.what()));
    }
  }
}

TEST_CASE("vjp op table: second order (forward-over-reverse, reverse-over-reverse) matches FD of grad") {
  SkipCounter skips{"hvp vs FD"};
  for (const AdCase& c : ad_cases()) {
    if (!c.out_f64 || !c.op->applies(Check::vjp)) continue;
    CAPTURE(c.what);
    Arrays x = c.floats(), v = relative_direction(x, c.seed);
    fx::Array u = random_like({c.call(x)}, -1, 1, c.seed + 2000)[0];
    auto s = [&c, u](const Arrays& xs) { return weighted_sum(c.call(xs), u); };
    auto grad_s = fx::grad(s);
    try {
      // H v three ways: jvp of grad; grad of <grad s, v>; vjp of grad applied to v (H symmetric).
      Arrays fwd_rev = fx::jvp(grad_s, std::tuple{x}, std::tuple{v}).second;
      auto g_dot_v = [&](const Arrays& xs) {
        Arrays g = grad_s(xs);
        fx::Array acc = fx::sum(g[0] * v[0]);
        for (size_t k = 1; k < g.size(); ++k) acc = acc + fx::sum(g[k] * v[k]);
        return acc;
      };
      Arrays rev_rev = fx::grad(g_dot_v)(x);
      auto [g, g_vjp] = fx::vjp(grad_s, x);
      Arrays vjp_vjp = g_vjp(v);
      ++skips.total;
      auto fd = finite_difference([&](const Arrays& xs) { return flat(grad_s(xs)); }, x, v);
      if (!fd) {
        skips.skip(c.what);
        continue;
      }
      check_against_fd(flat(fwd_rev), *fd, "jvp of grad");
      check_against_fd(flat(rev_rev), *fd, "grad of <grad, v>");
      check_against_fd(flat(vjp_vjp), *fd, "vjp of grad");
    } catch (const std::exception& e) {
      FAIL_CHECK("raised: " << std::string(e.what()));
    }
  }
  CHECK(skips.skipped * 10 <= skips.total);
}

namespace {
// Agreement of two evaluations of the same math (traced-then-interpreted against eager, or after
// simplification): equal up to a few roundings.
void check_close(const Arrays& got, const Arrays& want, const char* what) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    CHECK_MESSAGE(got[k].aval().same_type(want[k].aval()),
                  std::string(what) << " output " << k << ": " << got[k].aval().str() << " vs " << want[k].aval().str());
    std::vector<double> a = host_data(got[k]), b = host_data(want[k]);
    if (a.size() != b.size()) continue;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < a.size(); ++i)
      if (!close(a[i], b[i], default_tolerance(Check::vjp, fx::float64)) && bad++ == 0) first = i;
    CHECK_MESSAGE(bad == 0, std::string(what) << " output " << k << ": " << bad << " differ; first at " << first << ": " << a[first]
                                 << " vs " << b[first]);
  }
}
}  // namespace

TEST_CASE("vjp op table: derived programs verify and interpret like eager evaluation") {
  for (const AdCase& c : ad_cases()) {
    if (!c.op->applies(Check::vjp)) continue;
    CAPTURE(c.what);
    try {
      fx::Program p = fx::make_ir([&](const Arrays& a) { return c.op->op(a); })(c.args);
      REQUIRE_NOTHROW(fx::verify(p));
      std::vector<bool> wrt(c.args.size(), false);
      for (size_t k : c.wrt) wrt[k] = true;
      Arrays x = c.floats(), v = random_like(x, -1, 1, c.seed);
      Arrays tangents(c.args.size());
      for (size_t k = 0; k < c.wrt.size(); ++k) tangents[c.wrt[k]] = v[k];

      // Eager forward mode (no trace live): the reference for the programs below.
      Arrays outs, touts;
      fx::jvp_eval(p, c.args, tangents, outs, touts);
      REQUIRE(touts.size() == 1);
      fx::Array eager_tangent = fx::is_zero(touts[0]) ? fx::zeros_for(outs[0].aval(), {}) : touts[0];

      fx::Program jp = fx::jvp_program(p, wrt);
      CHECK_NOTHROW(fx::verify(jp));
      Arrays jin = c.args;
      jin.insert(jin.end(), v.begin(), v.end());
      check_close(fx::eval(jp, jin), {outs[0], eager_tangent}, "jvp_program");

      fx::LinearizedPrograms lin = fx::linearize_programs(p, wrt, 1);
      CHECK_NOTHROW(fx::verify(lin.forward));
      CHECK_NOTHROW(fx::verify(lin.linear));
      Arrays fwd = fx::eval(lin.forward, c.args);
      REQUIRE(fwd.size() == lin.num_outputs + lin.num_residuals);
      check_close({fwd[0]}, {outs[0]}, "linearize forward");
      Arrays lin_in(fwd.begin() + long(lin.num_outputs), fwd.end());
      lin_in.insert(lin_in.end(), v.begin(), v.end());
      check_close(fx::eval(lin.linear, lin_in), {eager_tangent}, "linearize linear");

      fx::VjpPrograms vp = fx::vjp_programs(p, wrt, 1);
      CHECK_NOTHROW(fx::verify(vp.forward));
      CHECK_NOTHROW(fx::verify(vp.backward));
      Arrays vf = fx::eval(vp.forward, c.args);
      REQUIRE(vf.size() == vp.num_outputs + vp.num_residuals);
      check_close({vf[0]}, {outs[0]}, "vjp forward");
      fx::Array u = random_like({outs[0]}, -1, 1, c.seed + 1000)[0];
      Arrays back_in(vf.begin() + long(vp.num_outputs), vf.end());
      back_in.push_back(u);
      Arrays cts = fx::eval(vp.backward, back_in);
      REQUIRE(cts.size() == c.wrt.size());
      // The backward program against eager forward mode, through the dot-product identity.
      double lhs = dot({u}, {eager_tangent}), rhs = dot(cts, v);
      const double scale = abs_dot({u}, {eager_tangent}) + abs_dot(cts, v);
      CHECK_MESSAGE(close(lhs, rhs, Tolerance{0, c.op->tolerance(Check::vjp, u.dtype()).atol * (1 + scale)}),
                    "<u, Jv> = " << lhs << ", <vjp backward(u), v> = " << rhs);

      // grad_program of s(x) = <u, f(x)>: the program and eager fx::grad agree.
      fx::Program sp = fx::make_ir([&](const Arrays& a) { return weighted_sum(c.op->op(a), u); })(c.args);
      fx::Program gp = fx::grad_program(sp, wrt, std::vector<bool>(1, false));
      CHECK_NOTHROW(fx::verify(gp));
      Arrays eager_grad = fx::grad([&](const Arrays& xs) { return weighted_sum(c.call(xs), u); })(x);
      check_close(fx::eval(gp, c.args), eager_grad, "grad_program");
    } catch (const std::exception& e) {
      FAIL_CHECK("raised: " << std::string(e.what()));
    }
  }
}

namespace {

// A program linear in all its inputs (every other operand is a closed-over constant), and the
// primitive it is there to exercise.
struct LinearCase {
  std::string name;
  fx::Prim prim;
  std::function<fx::Array(const Arrays&)> f;
  Arrays inputs;  // example linear inputs (their types are what matters)
};

fx::Array f64(fx::Shape shape, uint64_t seed) { return to_array(uniform(std::move(shape), -2, 2, seed), fx::float64); }
fx::Array i32(fx::Shape shape, std::vector<double> v) { return to_array(host(std::move(shape), std::move(v), fx::int32), fx::int32); }

// The windowed family (entries: tests/op_table_conv.cpp): a convolution linear in either operand,
// the window sum, and the max-pool derivative's gather and scatter.
// The complex primitives, between real inputs and a real output (the parts in, a part out), so the
// real dot products below are JAX's pairing Re(sum ct * y) of the complex values inside.
void add_complex_cases(std::vector<LinearCase>& r) {
  using P = fx::Prim;
  const fx::Array c = fx::complex(f64({3, 4}, 61), f64({3, 4}, 62));
  auto parts = [](const Arrays& a) { return fx::complex(a[0], a[1]); };
  const Arrays ab = {f64({3, 4}, 63), f64({3, 4}, 64)};
  r.push_back({"complex(a, b) * c, real", P::complex, [=](const Arrays& a) { return fx::real(parts(a) * c); }, ab});
  r.push_back({"real(...)", P::real, [=](const Arrays& a) { return fx::real(parts(a) * c); }, ab});
  r.push_back({"imag(...)", P::imag, [=](const Arrays& a) { return fx::imag(parts(a) * c); }, ab});
  r.push_back({"conj(...)", P::conj, [=](const Arrays& a) { return fx::imag(fx::conj(parts(a)) * c); }, ab});
  r.push_back({"fft over 2 axes", P::fft, [=](const Arrays& a) { return fx::imag(fx::fft::fft2(parts(a)) * c); }, ab});
  const fx::Array bins = fx::complex(f64({3, 3}, 66), f64({3, 3}, 67));  // rfft of n = 5: 3 bins
  r.push_back({"rfft then irfft (odd n)", P::fft,
               [=](const Arrays& a) { return fx::fft::irfft(fx::fft::rfft(a[0], 5) * bins, 7); }, {f64({3, 6}, 65)}});
}

void add_windowed_cases(std::vector<LinearCase>& r) {
  using P = fx::Prim;
  fx::Array kernel = f64({3, 2, 2, 2}, 36), image = f64({2, 2, 5, 4}, 37), chooser = f64({5, 4}, 38);
  r.push_back({"conv(x, c) strided, padded", P::conv_general_dilated,
               [kernel](const Arrays& a) { return fx::conv_general_dilated(a[0], kernel, {2, 1}, {{1, 0}, {0, 1}}); },
               {f64({2, 2, 5, 4}, 39)}});
  r.push_back({"conv(c, x) kernel-dilated", P::conv_general_dilated,
               [image](const Arrays& a) { return fx::conv_general_dilated(image, a[0], {1, 1}, "SAME", {}, {2, 1}); },
               {f64({3, 2, 2, 2}, 40)}});
  r.push_back({"reduce_window_sum", P::reduce_window_sum,
               [](const Arrays& a) { return fx::reduce_window_sum(a[0], {2, 3}, {2, 1}, {{1, 0}, {0, 1}}); },
               {f64({5, 4}, 41)}});
  const fx::Params windows{{"window_dimensions", fx::IntList{2, 2}}, {"window_strides", fx::IntList{1, 2}},
                           {"padding", fx::IntList{0, 1, 1, 0}},      {"base_dilation", fx::IntList{1, 1}},
                           {"window_dilation", fx::IntList{1, 1}},    {"select_max", true}};
  for (P prim : {P::select_and_gather_add, P::select_and_scatter_add})
    r.push_back({std::string(fx::prim_name(prim)), prim,
                 [prim, chooser, windows](const Arrays& a) {
                   return fx::bind1(prim, {a[0], chooser}, windows, std::source_location::current());
                 },
                 {f64(prim == P::select_and_gather_add ? fx::Shape{5, 4} : fx::Shape{5, 2}, 42)}});
}

// cholesky_linear: cholesky's JVP (and, transposed, its VJP) at a fixed factor, linear in x.
void add_cholesky_linear_cases(std::vector<LinearCase>& r) {
  using P = fx::Prim;
  fx::Array chol = fx::linalg::cholesky(to_array(host({3, 3}, {4, 1, -1, 1, 3, 0.5, -1, 0.5, 5}), fx::float64));
  for (bool adjoint : {false, true})
    r.push_back({adjoint ? "cholesky_linear(l, x) adjoint" : "cholesky_linear(l, x)", P::cholesky_linear,
                 [chol, adjoint](const Arrays& a) {
                   return fx::bind1(P::cholesky_linear, {chol, a[0]}, fx::Params{{"adjoint", adjoint}},
                                    std::source_location::current());
                 },
                 {f64({3, 3}, 38)}});
}

std::vector<LinearCase> linear_cases() {
  using P = fx::Prim;
  fx::Array c23 = f64({2, 3}, 101), c34 = f64({3, 4}, 102), c42 = f64({4, 2}, 103), c234 = f64({2, 3, 4}, 104);
  fx::Array cond = to_array(host({2, 3}, {1, 0, 0, 1, 1, 0}, fx::bool_), fx::bool_);
  fx::Array idx_dup = i32({4}, {2, 0, 2, 1}), idx_unique = i32({2}, {2, 0});
  std::vector<LinearCase> r;
  r.push_back({"x + y", P::add, [](const Arrays& a) { return a[0] + a[1]; }, {f64({2, 3}, 1), f64({3}, 2)}});
  r.push_back({"add_any", P::add_any,
               [](const Arrays& a) { return fx::bind1(P::add_any, {a[0], a[1]}, {}, std::source_location::current()); },
               {f64({2, 3}, 1), f64({2, 3}, 2)}});
  r.push_back({"x - y", P::sub, [](const Arrays& a) { return a[0] - a[1]; }, {f64({2, 3}, 3), f64({2, 1}, 4)}});
  r.push_back({"-x", P::neg, [](const Arrays& a) { return -a[0]; }, {f64({4}, 5)}});
  r.push_back({"x * c", P::mul, [c23](const Arrays& a) { return a[0] * c23; }, {f64({2, 3}, 6)}});
  r.push_back({"c * x", P::mul, [c23](const Arrays& a) { return c23 * a[0]; }, {f64({3}, 7)}});
  r.push_back({"x / c", P::div, [c23](const Arrays& a) { return a[0] / c23; }, {f64({2, 3}, 8)}});
  r.push_back({"astype f32", P::convert_element_type, [](const Arrays& a) { return fx::astype(a[0], fx::float32); },
               {f64({2, 3}, 9)}});
  r.push_back({"broadcast_to", P::broadcast_in_dim,
               [](const Arrays& a) { return fx::broadcast_to(a[0], fx::Shape({4, 2, 3})); }, {f64({2, 1}, 10)}});
  r.push_back({"reshape", P::reshape, [](const Arrays& a) { return fx::reshape(a[0], fx::Shape({3, 2})); },
               {f64({2, 3}, 11)}});
  r.push_back({"transpose", P::transpose, [](const Arrays& a) { return fx::transpose(a[0], {2, 0, 1}); },
               {f64({2, 3, 4}, 12)}});
  r.push_back({"squeeze", P::squeeze, [](const Arrays& a) { return fx::squeeze(a[0], {1}); }, {f64({2, 1, 3}, 13)}});
  r.push_back({"flip", P::rev, [](const Arrays& a) { return fx::flip(a[0], {0, 1}); }, {f64({2, 3}, 14)}});
  r.push_back({"concatenate", P::concatenate, [](const Arrays& a) { return fx::concatenate({a[0], a[1], a[0]}, 1); },
               {f64({2, 3}, 15), f64({2, 1}, 16)}});
  r.push_back({"pad", P::pad, [](const Arrays& a) { return fx::pad(a[0], {{1, 2}, {0, 1}}); }, {f64({2, 3}, 17)}});
  r.push_back({"strided slice", P::slice, [](const Arrays& a) { return fx::slice(a[0], {0, 1}, {3, 4}, {2, 2}); },
               {f64({3, 5}, 18)}});
  r.push_back({"dynamic_slice", P::dynamic_slice,
               [](const Arrays& a) { return fx::dynamic_slice(a[0], {1, 2}, {2, 2}); }, {f64({3, 5}, 19)}});
  r.push_back({"dynamic_slice (clamped start)", P::dynamic_slice,
               [](const Arrays& a) { return fx::dynamic_slice(a[0], {2, 4}, {2, 3}); }, {f64({3, 5}, 19)}});
  r.push_back({"dynamic_update_slice", P::dynamic_update_slice,
               [](const Arrays& a) { return fx::dynamic_update_slice(a[0], a[1], {1, 3}); },
               {f64({3, 5}, 20), f64({2, 2}, 21)}});
  r.push_back({"take (repeated indices)", P::gather, [idx_dup](const Arrays& a) { return fx::take(a[0], idx_dup, 0); },
               {f64({3, 2}, 22)}});
  r.push_back({"at_set", P::scatter, [idx_unique](const Arrays& a) { return fx::at_set(a[0], idx_unique, a[1]); },
               {f64({3, 2}, 23), f64({2, 2}, 24)}});
  r.push_back({"at_add (repeated indices)", P::scatter_add,
               [idx_dup](const Arrays& a) { return fx::at_add(a[0], idx_dup, a[1]); }, {f64({3, 2}, 25), f64({4, 2}, 26)}});
  r.push_back({"sum axis 1", P::reduce_sum, [](const Arrays& a) { return fx::sum(a[0], {1}); }, {f64({2, 3}, 27)}});
  r.push_back({"sum all", P::reduce_sum, [](const Arrays& a) { return fx::sum(a[0]); }, {f64({2, 3}, 28)}});
  r.push_back({"cumsum", P::cumsum, [](const Arrays& a) { return fx::cumsum(a[0], 1); }, {f64({2, 4}, 29)}});
  r.push_back({"x @ c", P::dot_general, [c34](const Arrays& a) { return fx::matmul(a[0], c34); }, {f64({2, 3}, 30)}});
  r.push_back({"c @ x", P::dot_general, [c42](const Arrays& a) { return fx::matmul(c42, a[0]); }, {f64({2, 3}, 31)}});
  r.push_back({"batched x @ c", P::dot_general,
               [c234](const Arrays& a) { return fx::matmul(a[0], c234); },
               {f64({2, 5, 3}, 32)}});
  r.push_back({"where(c, x, y)", P::select, [cond](const Arrays& a) { return fx::where(cond, a[0], a[1]); },
               {f64({2, 3}, 33), f64({3}, 34)}});
  // sort(keys, x): what sort's JVP leaves in the linear program (linear in the carried operand).
  fx::Array keys = to_array(host({2, 4}, {3, 1, 2, 1, 0, -1, 5, -1}), fx::float64);
  r.push_back({"sort(keys, x) with ties", P::sort,
               [keys](const Arrays& a) {
                 fx::Params params{{"dimension", int64_t(1)}, {"is_stable", true}, {"num_keys", int64_t(1)}};
                 return fx::bind(P::sort, {keys, a[0]}, params, std::source_location::current())[1];
               },
               {f64({2, 4}, 35)}});
  // triangular_solve: linear in the right-hand side (a fixed, well-conditioned triangular factor).
  fx::Array tri = to_array(host({3, 3}, {3, 0.5, -1, 0.25, 2, 0.5, -0.5, 1, 4}), fx::float64);
  r.push_back({"triangular_solve(a, x)", P::triangular_solve,
               [tri](const Arrays& a) { return fx::linalg::triangular_solve(tri, a[0]); }, {f64({3, 2}, 36)}});
  r.push_back({"triangular_solve(a, x) right, upper, transposed", P::triangular_solve,
               [tri](const Arrays& a) {
                 return fx::linalg::triangular_solve(tri, a[0], {.left_side = false, .lower = false, .transpose_a = true});
               },
               {f64({2, 3}, 37)}});
  // with_sharding_constraint: the identity on values (where blocks live is the partitioner's concern).
  const fx::Mesh one = fx::make_mesh({1}, {"data"});
  r.push_back({"with_sharding_constraint", P::sharding_constraint,
               [one](const Arrays& a) { return fx::with_sharding_constraint(a[0], fx::NamedSharding(one, fx::P("data"))); },
               {f64({2, 3}, 38)}});
  add_cholesky_linear_cases(r);
  add_windowed_cases(r);
  add_complex_cases(r);
  return r;
}

}  // namespace

TEST_CASE("vjp op table: transpose_program of each linear primitive satisfies the dot-product identity") {
  for (const LinearCase& lc : linear_cases()) {
    CAPTURE(lc.name);
    try {
      fx::Program p = fx::make_ir(lc.f)(lc.inputs);
      bool found = false;
      for (const fx::Eqn& e : p.eqns) found = found || e.prim == lc.prim;
      CHECK_MESSAGE(found, "the program does not exercise " << fx::prim_name(lc.prim) << ":\n" << p.str());
      REQUIRE_NOTHROW(fx::verify(p));
      fx::Program pt = fx::transpose_program(p, std::vector<bool>(p.invars.size(), true));
      CHECK_NOTHROW(fx::verify(pt));
      for (uint64_t seed : {1, 2}) {
        Arrays v = random_like(lc.inputs, -1, 1, seed * 7);
        Arrays jv = fx::eval(p, v);
        REQUIRE(jv.size() == 1);
        Arrays u = random_like(jv, -1, 1, seed * 7 + 3);
        Arrays jtu = fx::eval(pt, u);
        REQUIRE(jtu.size() == v.size());
        for (size_t k = 0; k < v.size(); ++k) CHECK(jtu[k].aval().same_type(v[k].aval()));
        double lhs = dot(u, jv), rhs = dot(jtu, v);
        // float32 outputs (astype) round J v; everything else is float64.
        const double tol = default_tolerance(Check::vjp, jv[0].dtype()).atol;
        CHECK_MESSAGE(close(lhs, rhs, Tolerance{0, tol * (1 + abs_dot(u, jv) + abs_dot(jtu, v))}),
                      "<u, Jv> = " << lhs << ", <J^T u, v> = " << rhs << "\n" << p.str() << "transposed:\n" << pt.str());
      }
    } catch (const std::exception& e) {
      FAIL_CHECK("raised: " << std::string(e.what()));
    }
  }
}

// Every primitive its record says is linear in listed operands has a transpose case above, so a new
// linear primitive cannot go untested here.
TEST_CASE("vjp op table: every primitive linear in listed operands has a transpose case") {
  std::vector<fx::Prim> covered;
  for (const LinearCase& lc : linear_cases()) covered.push_back(lc.prim);
  // The collectives need devices to evaluate: their adjoint identity is checked across the devices
  // by tests/test_pmap.cpp ("every linear collective's transpose is its adjoint").
  for (fx::Prim p : {fx::Prim::psum, fx::Prim::pmean, fx::Prim::all_gather, fx::Prim::psum_scatter, fx::Prim::ppermute,
                     fx::Prim::all_to_all})
    covered.push_back(p);
  for (int i = 0; i < fx::kNumPrims; ++i) {
    const fx::PrimitiveRules& r = fx::rules(fx::Prim(i));
    if (r.linear.operands == 0) continue;
    CAPTURE(fx::prim_name(r.prim));
    CHECK(std::find(covered.begin(), covered.end(), r.prim) != covered.end());
  }
}

}  // namespace optable
