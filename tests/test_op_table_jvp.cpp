// The op table under forward-mode differentiation (JAX's check_grads is the model). Every
// differentiable entry, over its samples, in float64 (float operands converted; integer and bool
// operands -- indices, masks -- kept as they are and never perturbed):
//   * jvp agrees with finite differences of the op along a random direction (op_table_ad.h),
//   * in each narrower float dtype the entry runs in, jvp and vjp keep the dtypes and track the
//     float64 results within the jvp check's tolerance for that dtype,
// and every piecewise-constant entry gets zero tangents, not errors.
#include <doctest/doctest.h>

#include <cmath>

#include "op_table_ad.h"

namespace optable {

TEST_CASE("jvp op table: every differentiable entry contributes float64 cases") {
  REQUIRE(ad_cases().size() > 50);
  for (const OpInfo& op : op_table()) {
    if (!op.differentiable || !has_float_dtype(op) || !op.applies(Check::jvp)) continue;
    size_t n = 0;
    for (const AdCase& c : ad_cases()) n += c.op == &op;
    CHECK_MESSAGE(n > 0, op.name << " is marked differentiable but none of its samples is a float64 AD case");
  }
}

TEST_CASE("jvp op table: jvp matches finite differences in float64") {
  SkipCounter skips{"jvp vs FD"};
  for (const AdCase& c : ad_cases()) {
    if (!c.out_f64 || !c.op->applies(Check::jvp)) continue;
    CAPTURE(c.what);
    Arrays x = c.floats(), v = relative_direction(x, c.seed);
    auto f = c.fn();
    fx::Array tangent;
    try {
      tangent = fx::jvp(f, std::tuple{x}, std::tuple{v}).second;
    } catch (const std::exception& e) {
      FAIL_CHECK("jvp raised: " << std::string(e.what()));
      continue;
    }
    CHECK(tangent.aval().same_type(c.call(x).aval()));
    ++skips.total;
    auto fd = finite_difference([&](const Arrays& xs) { return host_data(f(xs)); }, x, v);
    if (!fd) {
      skips.skip(c.what);
      continue;
    }
    check_against_fd(host_data(tangent), *fd, "jvp");
  }
  CHECK(skips.skipped * 10 <= skips.total);
}

TEST_CASE("jvp op table: jvp and vjp in narrow float dtypes keep the dtypes and track float64") {
  for (const AdCase& c : ad_cases()) {
    if (!c.op->applies(Check::jvp)) continue;
    for (fx::DType d : c.op->dtypes) {
      if (!fx::is_float(d) || d == fx::float64) continue;
      CAPTURE(c.what);
      CAPTURE(fx::dtype_name(d));
      // The narrow inputs, and the same (rounded) values in float64 for the reference.
      Arrays x64 = c.floats(), x, x_ref;
      for (const fx::Array& a : x64) {
        x.push_back(to_array(to_host(a), d));
        x_ref.push_back(to_array(to_host(x.back()), fx::float64));
      }
      Arrays v64 = random_like(x64, -1, 1, c.seed), v;
      for (const fx::Array& a : v64) v.push_back(to_array(to_host(a), d));
      try {
        fx::Array y = c.call(x);
        if (!fx::is_float(y.dtype()) || !all_finite({y})) continue;
        auto [y1, t] = fx::jvp(c.fn(), std::tuple{x}, std::tuple{v});
        CHECK_MESSAGE(t.aval().same_type(y.aval()), "tangent " << t.aval().str() << " for output " << y.aval().str());
        auto [y2, f_vjp] = fx::vjp(c.fn(), x);
        fx::Array u = to_array(uniform(y.shape(), -1, 1, c.seed + 1000), y.dtype());
        Arrays ct = f_vjp(u);
        for (size_t k = 0; k < x.size(); ++k)
          CHECK_MESSAGE(ct[k].aval().same_type(x[k].aval()),
                        "cotangent " << ct[k].aval().str() << " for input " << x[k].aval().str());
        // Values: against float64 at the rounded inputs (v and u are exact in every dtype only up to
        // rounding, so the reference uses the rounded ones too).
        Arrays v_ref, u_ref;
        for (const fx::Array& a : v) v_ref.push_back(to_array(to_host(a), fx::float64));
        u_ref.push_back(to_array(to_host(u), c.call(x_ref).dtype()));
        fx::Array t_ref = fx::jvp(c.fn(), std::tuple{x_ref}, std::tuple{v_ref}).second;
        auto [y4, vjp_ref] = fx::vjp(c.fn(), x_ref);
        Arrays ct_ref = vjp_ref(u_ref[0]);
        if (!all_finite({t_ref}) || !all_finite(ct_ref)) continue;
        const double tol = std::max(c.op->tolerance(Check::jvp, y.dtype()).atol, c.op->tolerance(Check::jvp, d).atol);
        auto check_tracks = [&](const fx::Array& got, const fx::Array& want, const char* what) {
          std::vector<double> a = host_data(got), b = host_data(want);
          double scale = 1;
          for (double w : b) scale = std::max(scale, std::fabs(w));
          size_t bad = 0, first = 0;
          for (size_t i = 0; i < a.size(); ++i)
            if (!(std::fabs(a[i] - b[i]) <= tol * scale) && bad++ == 0) first = i;
          CHECK_MESSAGE(bad == 0, std::string(what) << ": " << bad << " differ; first at " << first << ": " << a[first]
                                       << " vs float64 " << b[first]);
        };
        check_tracks(t, t_ref, "jvp");
        for (size_t k = 0; k < x.size(); ++k) check_tracks(ct[k], ct_ref[k], "vjp");
      } catch (const std::exception& e) {
        FAIL_CHECK("raised: " << std::string(e.what()));
      }
    }
  }
}

TEST_CASE("jvp op table: entries that are not differentiable get zero tangents, not errors") {
  for (const OpInfo& op : op_table()) {
    if (op.differentiable || !has_float_dtype(op) || !op.applies(Check::jvp)) continue;
    for (const Sample& s : op.samples) {
      CAPTURE(op.name);
      CAPTURE(s.label);
      Arrays args, tangents;
      for (const HostArray& h : s.args) {
        fx::DType d = s.fixed_dtype ? h.dtype : fx::float64;
        args.push_back(to_array(h, fx::is_float(d) ? fx::float64 : d));
        tangents.push_back(fx::is_float(d) ? to_array(uniform(h.shape, -1, 1, 9), fx::float64)
                                           : fx::zeros(h.shape, args.back().dtype()));
      }
      try {
        op.op(args);
      } catch (const std::exception&) {
        continue;  // reported by the op table's own tests
      }
      try {
        auto [y, t] = fx::jvp([&](const Arrays& a) { return op.op(a); }, std::tuple{args}, std::tuple{tangents});
        CHECK(t.shape() == y.shape());
        for (double v : host_data(t)) CHECK(v == 0);
      } catch (const std::exception& e) {
        FAIL_CHECK("jvp raised: " << std::string(e.what()));
      }
    }
  }
}

TEST_CASE("autodiff: stop_gradient has a zero derivative in every mode") {
  fx::Array x = to_array(uniform({2, 3}, -2, 2, 7), fx::float64);
  auto f = [](const fx::Array& a) { return fx::sum(fx::stop_gradient(a * a) * a); };
  fx::Array g = fx::grad(f)(x);
  // d/dx sum(sg(x^2) x) = x^2: the stopped factor is a constant.
  std::vector<double> xs = host_data(x), gs = host_data(g);
  for (size_t i = 0; i < xs.size(); ++i) CHECK(gs[i] == doctest::Approx(xs[i] * xs[i]).epsilon(1e-14));
  fx::Array t = fx::jvp([](const fx::Array& a) { return fx::stop_gradient(a); }, std::tuple{x}, std::tuple{x}).second;
  for (double v : host_data(t)) CHECK(v == 0);
}

}  // namespace optable
