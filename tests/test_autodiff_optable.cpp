// Generic autodiff tests driven by the op table (JAX's check_grads is the model). Every
// differentiable entry, over its samples, in float64 (float operands converted; integer and bool
// operands -- indices, masks -- kept as they are and never perturbed):
//   * jvp agrees with finite differences of the op along a random direction,
//   * vjp satisfies the dot-product identity <u, J v> = <J^T u, v> against jvp,
//   * second order: for s(x) = <u, f(x)>, the Hessian-vector product by forward-over-reverse
//     (jvp of grad), reverse-over-reverse (grad of <grad s, v>, and vjp of grad) agrees with finite
//     differences of grad,
//   * every derived program (jvp_program, the vjp forward/backward programs, grad_program) verifies
//     and its interpretation agrees with eager evaluation.
// Plus a registry test (every primitive has a JVP rule or an explicit zero derivative; the linear
// primitives have transpose rules) and a per-primitive transpose check through transpose_program.
//
// Finite differences use the 5-point stencil (error O(h^4)) along a direction scaled per element
// by |x_i| + 0.01, so steps stay relative and never cross 0 from a nonzero point (abs, sqrt, log).
// A sample whose difference quotients at h and h/2 disagree straddles a kink or a jump (floor,
// max at a tie) and is skipped for the finite-difference checks only; the count is reported and
// bounded.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <sstream>

#include "op_table.h"
#include "prims/registry.h"
#include "transforms/autodiff.h"
#include "transforms/jvp.h"
#include "transforms/transpose.h"
#include "transforms/vjp.h"

namespace optable {
namespace {

using Arrays = std::vector<fx::Array>;

// ---- host-side vector arithmetic ------------------------------------------------------------------
std::vector<double> host_data(const fx::Array& a) { return to_host(a).data; }

double dot(const Arrays& a, const Arrays& b) {
  double s = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    std::vector<double> x = host_data(a[k]), y = host_data(b[k]);
    for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  }
  return s;
}
double abs_dot(const Arrays& a, const Arrays& b) {  // sum |a_i b_i|: the scale of dot's rounding error
  double s = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    std::vector<double> x = host_data(a[k]), y = host_data(b[k]);
    for (size_t i = 0; i < x.size(); ++i) s += std::fabs(x[i] * y[i]);
  }
  return s;
}
// x + c * v, elementwise, in x's dtype (float64 here).
Arrays axpy(const Arrays& x, double c, const Arrays& v) {
  Arrays r;
  for (size_t k = 0; k < x.size(); ++k) {
    HostArray hx = to_host(x[k]);
    std::vector<double> hv = host_data(v[k]);
    for (size_t i = 0; i < hx.data.size(); ++i) hx.data[i] += c * hv[i];
    r.push_back(to_array(hx, x[k].dtype()));
  }
  return r;
}
bool all_finite(const Arrays& xs) {
  for (const fx::Array& x : xs)
    for (double v : host_data(x))
      if (!std::isfinite(v)) return false;
  return true;
}
double max_abs(const Arrays& xs) {
  double m = 0;
  for (const fx::Array& x : xs)
    for (double v : host_data(x)) m = std::max(m, std::fabs(v));
  return m;
}

fx::Array f64_array(fx::Shape shape, uint64_t seed) { return to_array(uniform(std::move(shape), -2, 2, seed), fx::float64); }

// ---- the cases -----------------------------------------------------------------------------------
struct AdCase {
  const OpInfo* op = nullptr;
  Arrays args;              // all operands: float ones in float64, the others in their own dtype
  std::vector<size_t> wrt;  // the float operands (the ones that get tangents)
  std::string what;
  uint64_t seed = 0;
  bool out_f64 = true;  // false: a narrower float result (astype), too coarse for finite differences

  Arrays floats() const {
    Arrays r;
    for (size_t k : wrt) r.push_back(args[k]);
    return r;
  }
  // The op as a function of its float operands only.
  fx::Array call(const Arrays& xs) const {
    Arrays a = args;
    for (size_t k = 0; k < wrt.size(); ++k) a[wrt[k]] = xs[k];
    return op->op(a);
  }
  std::function<fx::Array(const Arrays&)> fn() const {
    return [this](const Arrays& xs) { return call(xs); };
  }
};

bool has_float_dtype(const OpInfo& op) {
  for (fx::DType d : op.dtypes)
    if (fx::is_float(d)) return true;
  return false;
}

// Every differentiable entry's samples with at least one float operand, converted to float64, whose
// eager evaluation succeeds and gives a finite float result.
std::vector<AdCase> ad_cases() {
  std::vector<AdCase> cases;
  uint64_t seed = 1;
  for (const OpInfo& op : op_table()) {
    if (!op.differentiable || !has_float_dtype(op)) continue;
    for (const Sample& s : op.samples) {
      AdCase c;
      c.op = &op;
      c.seed = seed++;
      for (size_t k = 0; k < s.args.size(); ++k) {
        const HostArray& h = s.args[k];
        fx::DType d = s.fixed_dtype ? h.dtype : fx::float64;
        c.args.push_back(to_array(h, fx::is_float(d) ? fx::float64 : d));
        if (fx::is_float(d)) c.wrt.push_back(k);
      }
      std::ostringstream os;
      os << op.name << " [f64] " << s.label << " (";
      for (size_t i = 0; i < s.args.size(); ++i) os << (i ? ", " : "") << s.args[i].shape.str();
      os << ")";
      c.what = os.str();
      if (c.wrt.empty()) continue;
      fx::Array out;
      try {
        out = c.call(c.floats());
      } catch (const std::exception&) {
        continue;  // reported by the op table's own tests
      }
      if (!fx::is_float(out.dtype()) || !all_finite({out}) || !all_finite(c.args)) continue;
      c.out_f64 = out.dtype() == fx::float64;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}
const std::vector<AdCase>& cases() {
  static const std::vector<AdCase> all = ad_cases();
  return all;
}

Arrays random_like(const Arrays& xs, double lo, double hi, uint64_t seed) {
  Arrays r;
  for (size_t k = 0; k < xs.size(); ++k) r.push_back(to_array(uniform(xs[k].shape(), lo, hi, seed * 31 + k), xs[k].dtype()));
  return r;
}
// A direction with steps relative to each element's magnitude.
Arrays relative_direction(const Arrays& xs, uint64_t seed) {
  Arrays r;
  for (size_t k = 0; k < xs.size(); ++k) {
    HostArray v = uniform(xs[k].shape(), -1, 1, seed * 37 + k);
    std::vector<double> x = host_data(xs[k]);
    for (size_t i = 0; i < x.size(); ++i) v.data[i] *= std::fabs(x[i]) + 0.01;
    r.push_back(to_array(v, xs[k].dtype()));
  }
  return r;
}

// The 5-point central difference of g along v at step h, elementwise over g's (flattened) outputs.
using HostFn = std::function<std::vector<double>(const Arrays&)>;
std::vector<double> five_point(const HostFn& g, const Arrays& x, const Arrays& v, double h) {
  std::vector<double> p1 = g(axpy(x, h, v)), m1 = g(axpy(x, -h, v)), p2 = g(axpy(x, 2 * h, v)), m2 = g(axpy(x, -2 * h, v));
  std::vector<double> d(p1.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = (8 * (p1[i] - m1[i]) - (p2[i] - m2[i])) / (12 * h);
  return d;
}
// The directional derivative by finite differences, or nullopt where the stencils at h and h/2
// disagree (a kink or jump within reach), the one-sided differences disagree (a kink exactly at x:
// ties of sort or max, abs at 0), or a value is not finite.
std::optional<std::vector<double>> finite_difference(const HostFn& g, const Arrays& x, const Arrays& v) {
  const double h = 1e-3;
  std::vector<double> d1, d2, f0, fp1, fp2, fm1, fm2;
  try {
    d1 = five_point(g, x, v, h);
    d2 = five_point(g, x, v, h / 2);
    f0 = g(x), fp1 = g(axpy(x, h, v)), fp2 = g(axpy(x, 2 * h, v)), fm1 = g(axpy(x, -h, v)), fm2 = g(axpy(x, -2 * h, v));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  for (size_t i = 0; i < d1.size(); ++i) {
    if (!std::isfinite(d1[i]) || !std::isfinite(d2[i]) || std::fabs(d1[i] - d2[i]) > 1e-5 * (1 + std::fabs(d1[i])))
      return std::nullopt;
    const double forward = (-3 * f0[i] + 4 * fp1[i] - fp2[i]) / (2 * h);
    const double backward = (3 * f0[i] - 4 * fm1[i] + fm2[i]) / (2 * h);
    if (std::fabs(forward - backward) > 1e-3 * (1 + std::fabs(d2[i]))) return std::nullopt;
  }
  return d2;
}

std::vector<double> flat(const Arrays& xs) {
  std::vector<double> r;
  for (const fx::Array& x : xs)
    for (double v : host_data(x)) r.push_back(v);
  return r;
}

// Elementwise agreement of an AD result with finite differences: the FD error here is ~1e-10
// relative to the function's scale, a wrong rule is off by O(1).
void check_against_fd(const std::vector<double>& ad, const std::vector<double>& fd, const std::string& what) {
  REQUIRE(ad.size() == fd.size());
  double scale = 1;
  for (double v : fd) scale = std::max(scale, std::fabs(v));
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < ad.size(); ++i)
    if (!(std::fabs(ad[i] - fd[i]) <= 1e-7 * scale + 1e-6 * std::fabs(fd[i])) && bad++ == 0) first = i;
  CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << ad.size() << " differ; first at " << first << ": AD "
                               << ad[first] << ", finite differences " << fd[first]);
}

// The dot-product identity holds up to the rounding of J v in the output's dtype (float64 except
// for conversions), relative to sum |u_i (J v)_i|.
double identity_tolerance(fx::DType out) {
  switch (out) {
    case fx::DType::float16: return 2e-3;
    case fx::DType::bfloat16: return 1.6e-2;
    case fx::DType::float32: return 1e-6;
    default: return 1e-12;
  }
}

fx::Array weighted_sum(const fx::Array& y, const fx::Array& u) { return fx::sum(y * u); }

// Kinks skipped per check are bounded: the samples are random, so a few at most straddle one.
struct SkipCounter {
  const char* check;
  size_t skipped = 0, total = 0;
  std::string which;
  void skip(const std::string& what) {
    ++skipped;
    which += "\n  " + what;
  }
  ~SkipCounter() {
    MESSAGE(std::string(check) << ": " << skipped << " of " << total << " samples skipped for a kink near them:" << which);
  }
};

}  // namespace

TEST_CASE("autodiff op table: every differentiable entry contributes float64 cases") {
  REQUIRE(cases().size() > 50);
  for (const OpInfo& op : op_table()) {
    if (!op.differentiable || !has_float_dtype(op)) continue;
    size_t n = 0;
    for (const AdCase& c : cases()) n += c.op == &op;
    CHECK_MESSAGE(n > 0, op.name << " is marked differentiable but none of its samples is a float64 AD case");
  }
}

TEST_CASE("autodiff op table: jvp matches finite differences in float64") {
  SkipCounter skips{"jvp vs FD"};
  for (const AdCase& c : cases()) {
    if (!c.out_f64) continue;
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

TEST_CASE("autodiff op table: vjp satisfies <u, J v> = <J^T u, v>, and linearize agrees with jvp") {
  for (const AdCase& c : cases()) {
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
      for (size_t i = 0; i < a.size(); ++i) CHECK_MESSAGE(std::fabs(a[i] - b[i]) <= 1e-12 * (1 + std::fabs(b[i])),
                                                          "linearize " << a[i] << " vs jvp " << b[i] << " at " << i);
      double lhs = dot(u, {jv}), rhs = dot(jtu, v);
      double scale = abs_dot(u, {jv}) + abs_dot(jtu, v);
      CHECK_MESSAGE(std::fabs(lhs - rhs) <= identity_tolerance(y.dtype()) * (1 + scale),
                    "<u, Jv> = " << lhs << ", <J^T u, v> = " << rhs);
    } catch (const std::exception& e) {
      FAIL_CHECK("raised: " << std::string(e.what()));
    }
  }
}

// Rounding in a narrow dtype, relative to the largest magnitude of the float64 result: derivative
// formulas chain a few rounded ops, hence the factor over the op table's forward tolerances.
double narrow_tolerance(fx::DType d) {
  switch (d) {
    case fx::DType::float16: return 4e-2;
    case fx::DType::bfloat16: return 8e-2;
    case fx::DType::float32: return 4e-5;
    default: return 1e-12;
  }
}

TEST_CASE("autodiff op table: jvp and vjp in narrow float dtypes keep the dtypes and track float64") {
  for (const AdCase& c : cases()) {
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
        const double tol = std::max(narrow_tolerance(y.dtype()), narrow_tolerance(d)) * c.op->tol_scale;
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

TEST_CASE("autodiff op table: entries that are not differentiable get zero tangents, not errors") {
  for (const OpInfo& op : op_table()) {
    if (op.differentiable || !has_float_dtype(op)) continue;
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

TEST_CASE("autodiff op table: second order (forward-over-reverse, reverse-over-reverse) matches FD of grad") {
  SkipCounter skips{"hvp vs FD"};
  for (const AdCase& c : cases()) {
    if (!c.out_f64) continue;
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

TEST_CASE("autodiff: stop_gradient has a zero derivative in every mode") {
  fx::Array x = f64_array({2, 3}, 7);
  auto f = [](const fx::Array& a) { return fx::sum(fx::stop_gradient(a * a) * a); };
  fx::Array g = fx::grad(f)(x);
  // d/dx sum(sg(x^2) x) = x^2: the stopped factor is a constant.
  std::vector<double> xs = host_data(x), gs = host_data(g);
  for (size_t i = 0; i < xs.size(); ++i) CHECK(gs[i] == doctest::Approx(xs[i] * xs[i]).epsilon(1e-14));
  fx::Array t = fx::jvp([](const fx::Array& a) { return fx::stop_gradient(a); }, std::tuple{x}, std::tuple{x}).second;
  for (double v : host_data(t)) CHECK(v == 0);
}

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
      if (!(std::fabs(a[i] - b[i]) <= 1e-12 * (1 + std::fabs(b[i]))) && bad++ == 0) first = i;
    CHECK_MESSAGE(bad == 0, std::string(what) << " output " << k << ": " << bad << " differ; first at " << first << ": " << a[first]
                                 << " vs " << b[first]);
  }
}

TEST_CASE("autodiff op table: derived programs verify and interpret like eager evaluation") {
  for (const AdCase& c : cases()) {
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
      CHECK_MESSAGE(std::fabs(lhs - rhs) <= identity_tolerance(u.dtype()) * (1 + abs_dot({u}, {eager_tangent}) +
                                                                             abs_dot(cts, v)),
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

TEST_CASE("autodiff registry: every primitive has a JVP rule or an explicit zero derivative") {
  for (int i = 0; i < fx::kNumPrims; ++i) {
    fx::Prim p = fx::Prim(i);
    CAPTURE(fx::prim_name(p));
    const fx::PrimitiveRules& r = fx::rules(p);
    CHECK((r.jvp != nullptr || r.zero_derivative));
    CHECK_FALSE((r.jvp != nullptr && r.zero_derivative));  // one or the other, not both
  }
}

TEST_CASE("autodiff registry: the primitives linear in some operand have transpose rules") {
  using P = fx::Prim;
  for (P p : {P::add, P::add_any, P::sub, P::neg, P::mul, P::div, P::convert_element_type, P::broadcast_in_dim,
              P::reshape, P::transpose, P::squeeze, P::rev, P::concatenate, P::pad, P::slice, P::dynamic_slice,
              P::dynamic_update_slice, P::gather, P::scatter, P::scatter_add, P::reduce_sum, P::cumsum,
              P::dot_general, P::select}) {
    CAPTURE(fx::prim_name(p));
    CHECK((fx::rules(p).transpose != nullptr));
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
  return r;
}

}  // namespace

TEST_CASE("autodiff transpose: transpose_program of each linear primitive satisfies the dot-product identity") {
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
        double tol = identity_tolerance(jv[0].dtype());
        CHECK_MESSAGE(std::fabs(lhs - rhs) <= tol * (1 + abs_dot(u, jv) + abs_dot(jtu, v)),
                      "<u, Jv> = " << lhs << ", <J^T u, v> = " << rhs << "\n" << p.str() << "transposed:\n" << pt.str());
      }
    } catch (const std::exception& e) {
      FAIL_CHECK("raised: " << std::string(e.what()));
    }
  }
}


}  // namespace optable
