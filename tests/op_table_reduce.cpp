// Op-table entries for reductions, cumulative sums and sorting, with host references written
// independently of the kernels (index arithmetic over doubles, log-add-exp folds, std::stable_sort).
// Focused tests of the family: tests/test_reduce.cpp and tests/test_sort.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "op_table.h"

namespace optable {
namespace {

using IntList = std::vector<int64_t>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- local sample builders (independent of the shared helpers) ------------------------------------

HostArray values(fx::Shape shape, double lo, double hi, uint64_t seed, bool integral = false) {
  HostArray h{shape, std::vector<double>(size_t(shape.numel())), fx::float64};
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (double& v : h.data) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u = double(s >> 11) / double(1ull << 53);
    v = integral ? std::floor(lo + u * (hi - lo)) : lo + u * (hi - lo);
  }
  return h;
}
HostArray literal(fx::Shape shape, std::vector<double> data) { return HostArray{shape, std::move(data), fx::float64}; }

std::vector<int64_t> row_major_strides(const fx::Shape& s) {
  std::vector<int64_t> st(size_t(s.rank()), 1);
  for (int d = s.rank() - 2; d >= 0; --d) st[size_t(d)] = st[size_t(d + 1)] * s[size_t(d + 1)];
  return st;
}

/// Axes as the API takes them (possibly negative; empty = all), normalised and sorted.
IntList host_axes(const IntList& axes, int rank) {
  IntList out;
  if (axes.empty())
    for (int d = 0; d < rank; ++d) out.push_back(d);
  for (int64_t a : axes) out.push_back(a < 0 ? a + rank : a);
  std::sort(out.begin(), out.end());
  return out;
}

/// Gathers, for every output position, the list of input values reduced into it (in input order).
struct Groups {
  fx::Shape out_shape;
  std::vector<std::vector<double>> members;
};
Groups group_by_output(const HostArray& x, const IntList& api_axes, bool keepdims) {
  const IntList axes = host_axes(api_axes, x.shape.rank());
  auto reduced = [&](int d) { return std::find(axes.begin(), axes.end(), d) != axes.end(); };
  fx::Shape out_shape, kept_shape;
  for (int d = 0; d < x.shape.rank(); ++d) {
    if (!reduced(d)) kept_shape.push_back(x.shape[size_t(d)]);
    if (!reduced(d) || keepdims) out_shape.push_back(reduced(d) ? 1 : x.shape[size_t(d)]);
  }
  Groups g{out_shape, std::vector<std::vector<double>>(size_t(kept_shape.numel()))};
  const auto in_st = row_major_strides(x.shape), out_st = row_major_strides(kept_shape);
  for (int64_t i = 0; i < x.shape.numel(); ++i) {
    int64_t o = 0, k = 0;
    for (int d = 0; d < x.shape.rank(); ++d) {
      int64_t idx = (i / in_st[size_t(d)]) % x.shape[size_t(d)];
      if (!reduced(d)) o += idx * out_st[size_t(k++)];
    }
    g.members[size_t(o)].push_back(x.data[size_t(i)]);
  }
  return g;
}

using Fold = std::function<double(const std::vector<double>&)>;
HostArray reduce_ref(const HostArray& x, const IntList& axes, bool keepdims, const Fold& f, fx::DType dtype) {
  Groups g = group_by_output(x, axes, keepdims);
  HostArray out{g.out_shape, {}, dtype};
  for (const auto& m : g.members) out.data.push_back(f(m));
  return out;
}

double fold_sum(const std::vector<double>& v) {
  long double s = 0;
  for (double x : v) s += x;
  return double(s);
}
double fold_prod(const std::vector<double>& v) {
  long double s = 1;
  for (double x : v) s *= x;
  return double(s);
}
double fold_max(const std::vector<double>& v) {
  double m = -kInf;
  for (double x : v) m = (std::isnan(m) || std::isnan(x)) ? kNaN : std::max(m, x);
  return m;
}
double fold_min(const std::vector<double>& v) {
  double m = kInf;
  for (double x : v) m = (std::isnan(m) || std::isnan(x)) ? kNaN : std::min(m, x);
  return m;
}
double fold_mean(const std::vector<double>& v) { return fold_sum(v) / double(v.size()); }
double fold_var(const std::vector<double>& v, int64_t ddof) {
  const double mu = fold_mean(v);
  long double ss = 0;
  for (double x : v) ss += (x - mu) * (x - mu);
  return double(ss) / std::max(double(v.size()) - double(ddof), 0.0);
}
/// log(sum(exp)) as a fold of log-add-exp steps: a different algorithm from the op's max shift.
double fold_logsumexp(const std::vector<double>& v) {
  double acc = -kInf;
  for (double x : v) {
    if (std::isnan(acc) || std::isnan(x)) acc = kNaN;
    else if (x == -kInf) continue;
    else if (acc == -kInf) acc = x;
    else if (acc == kInf || x == kInf) acc = kInf;
    else acc = std::max(acc, x) + std::log1p(std::exp(-std::fabs(acc - x)));
  }
  return acc;
}
/// First index of the max (min); a NaN beats everything.
double first_extremum(const std::vector<double>& v, bool is_max) {
  for (size_t i = 0; i < v.size(); ++i)
    if (std::isnan(v[i])) return double(i);
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (is_max ? v[i] > v[best] : v[i] < v[best]) best = i;
  return double(best);
}

/// Applies `f` to every line of x along `axis`, writing a line of the same length.
HostArray line_ref(const HostArray& x, int64_t axis, fx::DType dtype,
                   const std::function<std::vector<double>(const std::vector<double>&)>& f) {
  const int rank = x.shape.rank();
  if (axis < 0) axis += rank;
  const auto st = row_major_strides(x.shape);
  const int64_t len = x.shape[size_t(axis)], stride = st[size_t(axis)];
  HostArray out{x.shape, std::vector<double>(x.data.size()), dtype};
  for (int64_t i = 0; i < x.shape.numel(); ++i) {
    if ((i / stride) % len != 0) continue;  // i is the start of a line
    std::vector<double> line;
    for (int64_t k = 0; k < len; ++k) line.push_back(x.data[size_t(i + k * stride)]);
    std::vector<double> r = f(line);
    for (int64_t k = 0; k < len; ++k) out.data[size_t(i + k * stride)] = r[size_t(k)];
  }
  return out;
}
std::vector<size_t> nan_last_order(const std::vector<double>& line) {
  std::vector<size_t> idx(line.size());
  std::iota(idx.begin(), idx.end(), size_t(0));
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    if (std::isnan(line[a])) return false;
    return std::isnan(line[b]) || line[a] < line[b];
  });
  return idx;
}
HostArray flat(const HostArray& x) { return HostArray{fx::Shape{x.shape.numel()}, x.data, x.dtype}; }

/// The jax.numpy result dtype of sum/prod/cumsum.
fx::DType accumulated(fx::DType d) {
  if (d == fx::bool_ || d == fx::int8) return fx::int32;
  if (d == fx::uint8) return fx::uint32;
  return d;
}
fx::DType floating(fx::DType d) { return fx::is_float(d) ? d : fx::float32; }

Sample sample(std::vector<HostArray> args, std::string label) { return Sample{std::move(args), std::move(label)}; }
ErrorSample error(HostArray arg, fx::ErrorKind kind, std::string label) {
  return ErrorSample{{std::move(arg)}, kind, std::move(label)};
}

// ---- entries --------------------------------------------------------------------------------------

/// Samples for reductions over "all axes": 0-d, 1-d, n-d, size-0 dims, a long contiguous run.
std::vector<Sample> all_axes_samples(double lo, double hi, bool integral) {
  return {sample({values({}, lo, hi, 1, integral)}, "0-d"),
          sample({values({7}, lo, hi, 2, integral)}, "[7]"),
          sample({values({3, 4}, lo, hi, 3, integral)}, "[3,4]"),
          sample({values({2, 3, 4}, lo, hi, 4, integral)}, "[2,3,4]"),
          sample({values({1000}, lo, hi, 5, integral)}, "[1000] long run"),
          sample({values({0, 3}, lo, hi, 6, integral)}, "[0,3] empty")};
}
/// Samples for reductions over axes {0, -1} (rank >= 2), incl. a middle kept dim and size-0 dims.
std::vector<Sample> two_axes_samples(double lo, double hi, bool integral) {
  return {sample({values({3, 4}, lo, hi, 11, integral)}, "[3,4]"),
          sample({values({2, 3, 4}, lo, hi, 12, integral)}, "[2,3,4]"),
          sample({values({3, 5, 2, 6}, lo, hi, 13, integral)}, "[3,5,2,6]"),
          sample({values({2, 0, 3}, lo, hi, 14, integral)}, "[2,0,3] empty kept dim"),
          sample({values({0, 4}, lo, hi, 15, integral)}, "[0,4] empty reduced dim"),
          sample({values({1, 1}, lo, hi, 16, integral)}, "[1,1]")};
}
/// Samples for a reduction over the middle axis 1 with keepdims (a strided reduction).
std::vector<Sample> middle_axis_samples(double lo, double hi, bool integral) {
  return {sample({values({4, 5, 6}, lo, hi, 21, integral)}, "[4,5,6]"),
          sample({values({2, 300, 3}, lo, hi, 22, integral)}, "[2,300,3] long strided"),
          sample({values({3, 1, 2}, lo, hi, 23, integral)}, "[3,1,2]")};
}
/// Bad axes for an op over axes {0, -1}: out of range on a 0-d operand, repeated on a 1-d one.
std::vector<ErrorSample> axes_errors() {
  return {error(values({}, 0, 1, 31), fx::ErrorKind::Shape, "axis 0 of a 0-d operand"),
          error(values({4}, 0, 1, 32), fx::ErrorKind::Shape, "axes 0 and -1 repeat on a 1-d operand")};
}

using ArrayFn = std::function<fx::Array(const fx::Array&, const fx::Axes&, bool)>;
using RefFold = std::function<double(const std::vector<double>&)>;

/// The three entries of one axes-reducing op: NAME (axes {0,-1}, with the error samples),
/// NAME_all (every axis), NAME_axis1_keepdims.
void add_axes_family(std::vector<OpInfo>& t, const std::string& name, const ArrayFn& fn, const RefFold& fold,
                     const std::function<fx::DType(fx::DType)>& out_dtype, std::vector<fx::DType> dtypes,
                     double lo, double hi, bool differentiable, double tol_scale = 1.0) {
  const bool integral = std::none_of(dtypes.begin(), dtypes.end(), [](fx::DType d) { return fx::is_float(d); });
  auto entry = [&](std::string suffix, fx::Axes axes, IntList ref_axes, bool keepdims, std::vector<Sample> samples) {
    OpInfo e;
    e.name = name + suffix;
    e.op = [fn, axes, keepdims](const std::vector<fx::Array>& a) { return fn(a[0], axes, keepdims); };
    e.reference = [fold, out_dtype, ref_axes, keepdims](const std::vector<HostArray>& a, fx::DType) {
      return reduce_ref(a[0], ref_axes, keepdims, fold, out_dtype(a[0].dtype));
    };
    e.samples = std::move(samples);
    e.dtypes = dtypes;
    e.tol_scale = tol_scale;
    e.differentiable = differentiable;
    return e;
  };
  OpInfo primary = entry("", fx::Axes{0, -1}, IntList{0, -1}, false, two_axes_samples(lo, hi, integral));
  primary.errors = axes_errors();
  t.push_back(std::move(primary));
  t.push_back(entry("_all", fx::Axes{}, IntList{}, false, all_axes_samples(lo, hi, integral)));
  t.push_back(entry("_axis1_keepdims", fx::Axes{1}, IntList{1}, true, middle_axis_samples(lo, hi, integral)));
}

void add_arg_extremum(std::vector<OpInfo>& t, const std::string& name, bool is_max) {
  using ArgFn = fx::Array (*)(const fx::Array&, std::optional<int64_t>, bool);
  ArgFn fn = is_max ? ArgFn([](const fx::Array& x, std::optional<int64_t> ax, bool kd) { return fx::argmax(x, ax, kd); })
                    : ArgFn([](const fx::Array& x, std::optional<int64_t> ax, bool kd) { return fx::argmin(x, ax, kd); });
  auto ref = [is_max](const std::vector<double>& v) { return first_extremum(v, is_max); };
  OpInfo along;
  along.name = name;
  along.op = [fn](const std::vector<fx::Array>& a) { return fn(a[0], 1, false); };
  along.reference = [ref](const std::vector<HostArray>& a, fx::DType) {
    return reduce_ref(a[0], {1}, false, ref, fx::int32);
  };
  along.samples = {sample({values({3, 5}, -10, 10, 41, true)}, "[3,5] with ties"),
                   sample({values({2, 7, 3}, -20, 20, 42)}, "[2,7,3] strided"),
                   sample({literal({2, 4}, {1, kNaN, 3, kNaN, -kInf, -kInf, 2, 2})}, "NaN first wins, ties"),
                   sample({values({0, 3}, -1, 1, 43)}, "[0,3] no rows")};
  along.dtypes = kNumericTypes;
  along.errors = {error(values({4}, 0, 1, 44), fx::ErrorKind::Shape, "axis 1 of a 1-d operand"),
                  error(values({3, 0}, 0, 1, 45), fx::ErrorKind::Value, "empty axis")};
  along.differentiable = false;
  t.push_back(std::move(along));

  OpInfo flattened;
  flattened.name = name + "_flat";
  flattened.op = [fn](const std::vector<fx::Array>& a) { return fn(a[0], std::nullopt, false); };
  flattened.reference = [ref](const std::vector<HostArray>& a, fx::DType) {
    return reduce_ref(flat(a[0]), {}, false, ref, fx::int32);
  };
  flattened.samples = {sample({values({9}, -1, 1, 47)}, "[9]"), sample({values({}, -1, 1, 46)}, "0-d"),
                       sample({values({4, 6}, -1, 1, 48)}, "[4,6]")};
  flattened.dtypes = kNumericTypes;
  flattened.errors = {error(values({0}, 0, 1, 49), fx::ErrorKind::Value, "empty")};
  flattened.differentiable = false;
  t.push_back(std::move(flattened));

  OpInfo keep;
  keep.name = name + "_keepdims";
  keep.op = [fn](const std::vector<fx::Array>& a) { return fn(a[0], -2, true); };
  keep.reference = [ref](const std::vector<HostArray>& a, fx::DType) {
    return reduce_ref(a[0], {-2}, true, ref, fx::int32);
  };
  keep.samples = {sample({values({5, 4}, -1, 1, 50)}, "[5,4]"), sample({values({2, 3, 4}, -1, 1, 51)}, "[2,3,4]")};
  keep.dtypes = {fx::float32, fx::bfloat16, fx::int32};
  keep.differentiable = false;
  t.push_back(std::move(keep));
}

/// cumprod (zeros inside a line exercise its zero-safe derivative) and cummax/cummin (NaN
/// propagates; there is no derivative at ties or NaN, so those samples sit in entries of their
/// own, checked for values only).
std::vector<double> running(const std::vector<double>& l, bool reverse,
                            const std::function<double(double, double)>& op) {
  std::vector<double> r(l.size());
  for (size_t k = 0; k < l.size(); ++k) {
    const size_t i = reverse ? l.size() - 1 - k : k;
    r[i] = k == 0 ? l[i] : op(r[reverse ? i + 1 : i - 1], l[i]);
  }
  return r;
}
double nan_max(double acc, double v) { return std::isnan(acc) || std::isnan(v) ? kNaN : std::max(acc, v); }
double nan_min(double acc, double v) { return std::isnan(acc) || std::isnan(v) ? kNaN : std::min(acc, v); }

void add_scans(std::vector<OpInfo>& t) {
  auto product = [](double a, double b) { return a * b; };
  for (int64_t axis : {int64_t(-1), int64_t(0)}) {
    OpInfo e;
    e.name = axis < 0 ? "cumprod" : "cumprod_axis0";
    e.op = [axis](const std::vector<fx::Array>& a) { return fx::cumprod(a[0], axis); };
    e.reference = [axis, product](const std::vector<HostArray>& a, fx::DType) {
      return line_ref(a[0], axis, accumulated(a[0].dtype), [&](const std::vector<double>& l) { return running(l, false, product); });
    };
    e.samples = {sample({values({3, 5}, -1.5, 1.5, 101)}, "[3,5]"), sample({values({4, 3, 2}, -2, 2, 102)}, "[4,3,2]"),
                 sample({literal({2, 6}, {2, 0, 3, 0.5, 0, 4, 1.5, -2, 0, 3, 0.5, 2})}, "zeros inside lines"),
                 sample({values({2, 0}, -1, 1, 103)}, "[2,0]")};
    e.dtypes = kSignedTypes;  // the reference multiplies the signed values; unsigned ones would wrap
    if (axis < 0) e.errors = {error(values({}, 0, 1, 104), fx::ErrorKind::Shape, "axis -1 of a 0-d operand")};
    t.push_back(std::move(e));
  }
  for (bool is_max : {true, false})
    for (bool reverse : {false, true}) {
      const std::string name = std::string(is_max ? "cummax" : "cummin") + (reverse ? "_reverse" : "");
      auto op = is_max ? nan_max : nan_min;
      const int64_t axis = reverse ? 0 : 1;
      OpInfo e;
      e.name = name;
      e.op = [is_max, axis, reverse](const std::vector<fx::Array>& a) {
        return is_max ? fx::cummax(a[0], axis, reverse) : fx::cummin(a[0], axis, reverse);
      };
      e.reference = [axis, reverse, op](const std::vector<HostArray>& a, fx::DType) {
        return line_ref(a[0], axis, a[0].dtype, [&](const std::vector<double>& l) { return running(l, reverse, op); });
      };
      e.samples = {sample({values({3, 7}, -5, 5, 111)}, "[3,7]"), sample({values({5, 4, 2}, -5, 5, 112)}, "[5,4,2] strided"),
                   sample({values({2, 0}, -1, 1, 113)}, "[2,0]"), sample({values({40, 300}, -9, 9, 114)}, "[40,300] long")};
      e.dtypes = kNumericTypes;
      if (!reverse) e.errors = {error(values({4}, 0, 1, 115), fx::ErrorKind::Shape, "axis 1 of a 1-d operand")};
      t.push_back(e);
      e.name = name + "_ties_nan";
      e.samples = {sample({literal({2, 6}, {1, 3, 3, 2, 5, 5, -kInf, 2, kNaN, 7, -1, kInf})}, "ties, NaN, inf"),
                   sample({values({3, 8}, -3, 3, 116, true)}, "integers with ties")};
      e.errors.clear();
      e.skip = {Check::jvp, Check::vjp};  // no derivative at ties; NaN has none either
      e.dtypes.push_back(fx::bool_);
      t.push_back(std::move(e));
    }
}

void add_line_ops(std::vector<OpInfo>& t) {
  auto cumsum_line = [](const std::vector<double>& l) {
    std::vector<double> r(l.size());
    long double s = 0;
    for (size_t i = 0; i < l.size(); ++i) r[i] = double(s += l[i]);
    return r;
  };
  OpInfo cumsum;
  cumsum.name = "cumsum";
  cumsum.op = [](const std::vector<fx::Array>& a) { return fx::cumsum(a[0], -1); };
  cumsum.reference = [cumsum_line](const std::vector<HostArray>& a, fx::DType) {
    return line_ref(a[0], -1, accumulated(a[0].dtype), cumsum_line);
  };
  cumsum.samples = {sample({values({6}, -5, 5, 61)}, "[6]"), sample({values({3, 5}, -5, 5, 62)}, "[3,5]"),
                    sample({values({2, 0}, -5, 5, 63)}, "[2,0]"), sample({values({1500}, 0, 4, 64)}, "[1500] long")};
  cumsum.dtypes = kNumericTypes;
  cumsum.errors = {error(values({}, 0, 1, 65), fx::ErrorKind::Shape, "axis -1 of a 0-d operand")};
  t.push_back(std::move(cumsum));

  OpInfo cumsum0 = t.back();
  cumsum0.name = "cumsum_axis0";
  cumsum0.op = [](const std::vector<fx::Array>& a) { return fx::cumsum(a[0], 0); };
  cumsum0.reference = [cumsum_line](const std::vector<HostArray>& a, fx::DType) {
    return line_ref(a[0], 0, accumulated(a[0].dtype), cumsum_line);
  };
  cumsum0.samples = {sample({values({4, 3, 2}, -5, 5, 66)}, "[4,3,2] strided"),
                     sample({values({5}, -1, 1, 67)}, "[5]")};
  cumsum0.dtypes = {fx::bool_, fx::int8, fx::uint8, fx::float16, fx::float32};
  cumsum0.errors.clear();
  t.push_back(std::move(cumsum0));

  OpInfo cumsum_flat = t.back();
  cumsum_flat.name = "cumsum_flat";
  cumsum_flat.op = [](const std::vector<fx::Array>& a) { return fx::cumsum(a[0]); };
  cumsum_flat.reference = [cumsum_line](const std::vector<HostArray>& a, fx::DType) {
    return line_ref(flat(a[0]), 0, accumulated(a[0].dtype), cumsum_line);
  };
  cumsum_flat.samples = {sample({values({7}, -1, 1, 68)}, "[7]"), sample({values({}, -1, 1, 69)}, "0-d"),
                         sample({values({3, 4}, -1, 1, 70)}, "[3,4]")};
  cumsum_flat.dtypes = {fx::int32, fx::float32, fx::float64};
  t.push_back(std::move(cumsum_flat));

  add_scans(t);

}

void add_sort_ops(std::vector<OpInfo>& t) {
  auto sort_samples = [] {
    return std::vector<Sample>{
        sample({values({9}, -5, 5, 71, true)}, "[9] with ties"),
        sample({values({4, 6}, -50, 50, 72)}, "[4,6]"),
        sample({literal({2, 5}, {3, kNaN, -kInf, 1, kNaN, 0, kInf, -1, kNaN, 0})}, "NaN, inf"),
        sample({values({3, 0}, -1, 1, 73)}, "[3,0]")};
  };
  OpInfo sort;
  sort.name = "sort";
  sort.op = [](const std::vector<fx::Array>& a) { return fx::sort(a[0]); };
  sort.reference = [](const std::vector<HostArray>& a, fx::DType) {
    return line_ref(a[0], -1, a[0].dtype, [](const std::vector<double>& l) {
      std::vector<double> r;
      for (size_t i : nan_last_order(l)) r.push_back(l[i]);
      return r;
    });
  };
  sort.samples = sort_samples();
  sort.dtypes = {fx::bool_, fx::int8, fx::int32, fx::int64, fx::uint8, fx::uint32, fx::float16, fx::bfloat16,
                 fx::float32, fx::float64};
  sort.errors = {error(values({}, 0, 1, 74), fx::ErrorKind::Shape, "axis -1 of a 0-d operand")};
  t.push_back(std::move(sort));

  OpInfo sort0 = t.back();
  sort0.name = "sort_axis0";
  sort0.op = [](const std::vector<fx::Array>& a) { return fx::sort(a[0], 0); };
  sort0.reference = [](const std::vector<HostArray>& a, fx::DType) {
    return line_ref(a[0], 0, a[0].dtype, [](const std::vector<double>& l) {
      std::vector<double> r;
      for (size_t i : nan_last_order(l)) r.push_back(l[i]);
      return r;
    });
  };
  sort0.samples = {sample({values({5, 3, 2}, -1, 1, 75)}, "[5,3,2]")};
  sort0.dtypes = {fx::float32, fx::int32};
  sort0.errors.clear();
  t.push_back(std::move(sort0));

  OpInfo argsort;
  argsort.name = "argsort";
  argsort.op = [](const std::vector<fx::Array>& a) { return fx::argsort(a[0]); };
  argsort.reference = [](const std::vector<HostArray>& a, fx::DType) {
    return line_ref(a[0], -1, fx::int32, [](const std::vector<double>& l) {
      std::vector<double> r;
      for (size_t i : nan_last_order(l)) r.push_back(double(i));
      return r;
    });
  };
  argsort.samples = sort_samples();
  argsort.samples.push_back(sample({values({3, 4, 5}, -1, 1, 76)}, "[3,4,5]"));
  argsort.dtypes = kNumericTypes;
  argsort.errors = {error(values({}, 0, 1, 77), fx::ErrorKind::Shape, "axis -1 of a 0-d operand")};
  argsort.differentiable = false;
  t.push_back(std::move(argsort));
}

}  // namespace

void add_reduce_ops(std::vector<OpInfo>& t) {
  const size_t first_entry = t.size();
  auto same = [](fx::DType d) { return d; };
  add_axes_family(t, "sum", [](const fx::Array& x, const fx::Axes& ax, bool kd) { return fx::sum(x, ax, kd); },
                  fold_sum, accumulated, kNumericTypes, -10, 10, true);
  add_axes_family(t, "sum_bool", [](const fx::Array& x, const fx::Axes& ax, bool kd) { return fx::sum(x, ax, kd); },
                  fold_sum, accumulated, {fx::bool_}, -1, 1, false);
  add_axes_family(t, "prod", [](const fx::Array& x, const fx::Axes& ax, bool kd) { return fx::prod(x, ax, kd); },
                  fold_prod, accumulated, kFloatTypes, 0.9, 1.1, true, 2.0);
  add_axes_family(t, "prod_int", [](const fx::Array& x, const fx::Axes& ax, bool kd) { return fx::prod(x, ax, kd); },
                  fold_prod, accumulated, kIntTypes, 1, 3, false);
  for (size_t i = t.size() - 3; i < t.size(); ++i) {  // products of at most 2^18 (no int32 overflow)
    auto& s = t[i].samples;
    s.erase(std::remove_if(s.begin(), s.end(), [](const Sample& x) { return x.args[0].shape.numel() > 200; }), s.end());
  }
  add_axes_family(t, "mean", [](const fx::Array& x, const fx::Axes& ax, bool kd) { return fx::mean(x, ax, kd); },
                  fold_mean, floating, kNumericTypes, 0, 10, true);
  add_axes_family(t, "var",
                  [](const fx::Array& x, const fx::Axes& ax, bool kd) { return fx::var(x, ax, 0, kd); },
                  [](const std::vector<double>& v) { return fold_var(v, 0); }, floating, kNumericTypes, 0, 10, true,
                  4.0);
  add_axes_family(t, "std",
                  [](const fx::Array& x, const fx::Axes& ax, bool kd) { return fx::std(x, ax, 1, kd); },
                  [](const std::vector<double>& v) { return std::sqrt(fold_var(v, 1)); }, floating, kFloatTypes, 0, 10,
                  true, 4.0);
  add_axes_family(t, "all", [](const fx::Array& x, const fx::Axes& ax, bool kd) { return fx::all(x, ax, kd); },
                  [](const std::vector<double>& v) { return double(std::all_of(v.begin(), v.end(), [](double x) { return x != 0; })); },
                  [](fx::DType) { return fx::bool_; }, {fx::bool_, fx::int32, fx::float32}, 0, 1.2, false);
  add_axes_family(t, "any", [](const fx::Array& x, const fx::Axes& ax, bool kd) { return fx::any(x, ax, kd); },
                  [](const std::vector<double>& v) { return double(std::any_of(v.begin(), v.end(), [](double x) { return x != 0; })); },
                  [](fx::DType) { return fx::bool_; }, {fx::bool_, fx::uint8, fx::float64}, 0, 1.1, false);
  add_axes_family(t, "logsumexp",
                  [](const fx::Array& x, const fx::Axes& ax, bool kd) { return fx::logsumexp(x, ax, kd); },
                  fold_logsumexp, floating, kFloatTypes, -5, 5, true, 4.0);

  // max/min: no identity, so the empty-axis samples of the families are replaced by error samples.
  auto extremum = [&](const std::string& name, const ArrayFn& fn, const RefFold& fold) {
    const size_t first = t.size();
    add_axes_family(t, name, fn, fold, same, kNumericTypes, -10, 10, true);
    for (size_t i = first; i < t.size(); ++i) {
      auto& s = t[i].samples;
      s.erase(std::remove_if(s.begin(), s.end(), [](const Sample& x) { return x.args[0].shape.numel() == 0; }),
              s.end());
    }
    t[first].errors.push_back(error(values({0, 4}, 0, 1, 33), fx::ErrorKind::Value, "empty reduced axis"));
    t[first].samples.push_back(sample({literal({2, 3}, {1, kNaN, 2, -kInf, -kInf, -kInf})}, "NaN propagates"));
    t[first].samples.push_back(sample({values({2, 0, 3}, 0, 1, 34)}, "[2,0,3] empty kept dim"));
  };
  extremum("max", [](const fx::Array& x, const fx::Axes& ax, bool kd) { return fx::max(x, ax, kd); }, fold_max);
  extremum("min", [](const fx::Array& x, const fx::Axes& ax, bool kd) { return fx::min(x, ax, kd); }, fold_min);

  add_arg_extremum(t, "argmax", true);
  add_arg_extremum(t, "argmin", false);
  add_line_ops(t);
  add_sort_ops(t);

  // The references give the result's dtype; float16 results are held to 2e-3 (accumulation happens
  // in float32); error messages name the op (the entry's name up to its variant suffix).
  for (size_t i = first_entry; i < t.size(); ++i) {
    OpInfo& e = t[i];
    e.reference_dtype = true;
    set_tolerance(e, Check::eager, {fx::float16}, Tolerance{2e-3 * e.tol_scale, 2e-3 * e.tol_scale});
    e.error_name = e.name.substr(0, e.name.find('_'));
  }
}

}  // namespace optable
