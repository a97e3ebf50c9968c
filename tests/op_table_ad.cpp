#include "op_table_ad.h"

#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

namespace optable {

std::vector<double> host_data(const fx::Array& a) { return to_host(a).data; }

double dot(const Arrays& a, const Arrays& b) {
  double s = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    std::vector<double> x = host_data(a[k]), y = host_data(b[k]);
    for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  }
  return s;
}
double abs_dot(const Arrays& a, const Arrays& b) {
  double s = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    std::vector<double> x = host_data(a[k]), y = host_data(b[k]);
    for (size_t i = 0; i < x.size(); ++i) s += std::fabs(x[i] * y[i]);
  }
  return s;
}
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

std::vector<double> flat(const Arrays& xs) {
  std::vector<double> r;
  for (const fx::Array& x : xs)
    for (double v : host_data(x)) r.push_back(v);
  return r;
}

bool has_float_dtype(const OpInfo& op) {
  for (fx::DType d : op.dtypes)
    if (fx::is_float(d)) return true;
  return false;
}

// Every differentiable entry's samples with at least one float operand, converted to float64, whose
// eager evaluation succeeds and gives a finite float result.
namespace {
std::vector<AdCase> collect_ad_cases() {
  std::vector<AdCase> cases;
  uint64_t seed = 1;
  for (const OpInfo& op : op_table()) {
    if (!op.differentiable || !has_float_dtype(op) || (!op.applies(Check::jvp) && !op.applies(Check::vjp))) continue;
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
}  // namespace
const std::vector<AdCase>& ad_cases() {
  static const std::vector<AdCase> all = collect_ad_cases();
  return all;
}

Arrays random_like(const Arrays& xs, double lo, double hi, uint64_t seed) {
  Arrays r;
  for (size_t k = 0; k < xs.size(); ++k) r.push_back(to_array(uniform(xs[k].shape(), lo, hi, seed * 31 + k), xs[k].dtype()));
  return r;
}

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

namespace {
// The 5-point central difference of g along v at step h, elementwise over g's (flattened) outputs.
using HostFn = std::function<std::vector<double>(const Arrays&)>;
std::vector<double> five_point(const HostFn& g, const Arrays& x, const Arrays& v, double h) {
  std::vector<double> p1 = g(axpy(x, h, v)), m1 = g(axpy(x, -h, v)), p2 = g(axpy(x, 2 * h, v)), m2 = g(axpy(x, -2 * h, v));
  std::vector<double> d(p1.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = (8 * (p1[i] - m1[i]) - (p2[i] - m2[i])) / (12 * h);
  return d;
}
}  // namespace

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

void check_against_fd(const std::vector<double>& ad, const std::vector<double>& fd, const std::string& what) {
  REQUIRE(ad.size() == fd.size());
  double scale = 1;
  for (double v : fd) scale = std::max(scale, std::fabs(v));
  Tolerance t = default_tolerance(Check::jvp, fx::float64);
  t.atol *= scale;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < ad.size(); ++i)
    if (!close(ad[i], fd[i], t) && bad++ == 0) first = i;
  CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << ad.size() << " differ; first at " << first << ": AD "
                               << ad[first] << ", finite differences " << fd[first]);
}

fx::Array weighted_sum(const fx::Array& y, const fx::Array& u) { return fx::sum(y * u); }

}  // namespace optable
