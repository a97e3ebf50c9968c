// Op-table entries of the sort-based functions (api/sorting.h): searchsorted, top_k, quantile,
// percentile, median and unique with a size. The references sort on the host (NaN last, as numpy)
// and apply numpy's / JAX's definitions; unique without a size (eager only) and unique_all are in
// tests/test_numpy_surface.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "op_table.h"

namespace optable {
namespace {

using Args = std::vector<fx::Array>;
using fx::Shape;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Sample sample(std::vector<HostArray> args, std::string label) { return Sample{std::move(args), std::move(label)}; }

// numpy's order: NaN after everything.
bool before(double a, double b) { return std::isnan(b) ? !std::isnan(a) : a < b; }

// The lines of x along its last axis, each mapped by f to a line of `width` values (the result's
// last axis).
HostArray per_line(const HostArray& x, int64_t width, fx::DType dt,
                   const std::function<std::vector<double>(std::vector<double>)>& f) {
  const int64_t n = x.shape.rank() ? x.shape[size_t(x.shape.rank() - 1)] : 1;
  Shape os(std::vector<int64_t>(x.shape.begin(), x.shape.end() - (x.shape.rank() ? 1 : 0)));
  const int64_t lines = os.numel();  // also when the lines are empty
  os.push_back(width);
  HostArray out{os, {}, dt};
  for (int64_t l = 0; l < lines; ++l) {
    std::vector<double> line(x.data.begin() + l * n, x.data.begin() + (l + 1) * n);
    for (double v : f(line)) out.data.push_back(v);
  }
  return out;
}

// top_k of one line: the k largest (NaN largest), the lower index first among equals.
std::vector<size_t> top_order(const std::vector<double>& line) {
  std::vector<size_t> order(line.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) { return before(line[j], line[i]); });
  return order;
}

// JAX's quantile of one sorted line at q by method (NaN anywhere gives NaN).
double quantile_of(std::vector<double> line, double q, const std::string& method) {
  if (line.empty()) return kNaN;
  for (double v : line)
    if (std::isnan(v)) return kNaN;
  std::sort(line.begin(), line.end());
  const double pos = q * double(line.size() - 1), lo = std::floor(pos), w = pos - lo;
  const double a = line[size_t(lo)], b = line[size_t(std::ceil(pos))];
  if (method == "lower") return a;
  if (method == "higher") return b;
  if (method == "nearest") return w <= 0.5 ? a : b;
  if (method == "midpoint") return (a + b) / 2;
  return w == 0 ? a : a * (1 - w) + b * w;
}

OpInfo entry(std::string name, std::function<fx::Array(const Args&)> op,
             std::function<HostArray(const std::vector<HostArray>&, fx::DType)> ref, std::vector<Sample> samples,
             std::vector<fx::DType> dtypes) {
  OpInfo o;
  o.name = std::move(name);
  o.op = std::move(op);
  o.reference = std::move(ref);
  o.samples = std::move(samples);
  o.dtypes = std::move(dtypes);
  return o;
}

void add_search_ops(std::vector<OpInfo>& t) {
  for (bool left : {true, false}) {
    OpInfo s = entry(
        left ? "searchsorted" : "searchsorted_right",
        [left](const Args& a) { return fx::searchsorted(a[0], a[1], left ? "left" : "right"); },
        [left](const std::vector<HostArray>& a, fx::DType) {
          HostArray out{a[1].shape, {}, fx::int32};
          for (double v : a[1].data) {
            double n = 0;
            for (double e : a[0].data) n += left ? before(e, v) : !before(v, e);
            out.data.push_back(n);
          }
          return out;
        },
        {sample({host({5}, {1, 2, 2, 3, 7}), host({2, 3}, {2, 0, 9, 3, 7, 1})}, "ties and ends"),
         sample({host({0}, {}), host({2}, {1, 2})}, "empty a"), sample({host({3}, {1, 2, 3}), host({}, {2})}, "0-d v")},
        kNumericTypes);
    s.samples.push_back(fixed({host({5}, {-kInf, 1, 2, kInf, kNaN}), host({4}, {kNaN, kInf, -kInf, 1.5})}, "nan last"));
    s.differentiable = false;
    s.reference_dtype = true;
    s.errors = {error_sample({host({2, 2}, {1, 2, 3, 4}), host({1}, {1})}, fx::ErrorKind::Shape, "2-D a")};
    s.error_name = "searchsorted";
    t.push_back(s);
  }

  for (bool indices : {false, true}) {
    OpInfo k = entry(
        indices ? "top_k_indices" : "top_k", [indices](const Args& a) {
          auto [v, i] = fx::top_k(a[0], 2);
          return indices ? i : v;
        },
        [indices](const std::vector<HostArray>& a, fx::DType d) {
          return per_line(a[0], 2, indices ? fx::int32 : d, [&](std::vector<double> l) {
            std::vector<size_t> o = top_order(l);
            return indices ? std::vector<double>{double(o[0]), double(o[1])} : std::vector<double>{l[o[0]], l[o[1]]};
          });
        },
        {sample({distinct_values({5})}, "vector"), sample({distinct_values({3, 4})}, "rows")}, kNumericTypes);
    if (indices) {  // ties, NaN and bool: the order only (finite differences of NaN are NaN)
      k.samples.push_back(fixed({host({2, 3}, {1, 5, 5, kNaN, 2, kInf})}, "ties, nan largest"));
      k.samples.push_back(fixed({distinct_values({4}, fx::bool_)}, "bool"));
    }
    k.errors = {error_sample({distinct_values({1})}, fx::ErrorKind::Value, "k = 2 of 1"),
                error_sample({distinct_values({})}, fx::ErrorKind::Shape, "0-d")};
    k.error_name = "top_k";
    k.reference_dtype = indices;
    k.differentiable = !indices;
    t.push_back(k);
  }
}

void add_quantile_ops(std::vector<OpInfo>& t) {
  // Float data gives its own dtype, integers float32.
  auto qdtype = [](fx::DType d) { return fx::is_float(d) ? d : fx::float32; };
  for (std::string method : {"linear", "lower", "higher", "nearest", "midpoint"}) {
    OpInfo q = entry(
        "quantile_" + method, [method](const Args& a) { return fx::quantile(a[0], fx::array({0.0f, 0.375f, 0.625f, 1.0f}), -1, method); },
        [method, qdtype](const std::vector<HostArray>& a, fx::DType d) {
          // [..., 4] per line, then the q axis moved to the front.
          const std::vector<double> qs = {0.0, 0.375, 0.625, 1.0};
          HostArray lines = per_line(a[0], 4, qdtype(d), [&](std::vector<double> l) {
            std::vector<double> r;
            for (double q : qs) r.push_back(quantile_of(l, q, method));
            return r;
          });
          HostArray out{Shape{4}, {}, lines.dtype};
          const int64_t rest = lines.shape.numel() / 4;
          for (int64_t i = 1; i < lines.shape.rank(); ++i) out.shape.push_back(lines.shape[size_t(i - 1)]);
          for (int64_t k = 0; k < 4; ++k)
            for (int64_t r = 0; r < rest; ++r) out.data.push_back(lines.data[size_t(r * 4 + k)]);
          return out;
        },
        {sample({distinct_values({5})}, "5"), sample({distinct_values({3, 4})}, "rows"), sample({distinct_values({1})}, "one")},
        kNumericTypes);
    q.reference_dtype = true;
    q.errors = {error_sample({distinct_values({})}, fx::ErrorKind::Shape, "axis -1 of a 0-d array")};
    q.error_name = "quantile";
    t.push_back(q);
    // NaN, infinities and empty lines: values only (finite differences of them are NaN).
    OpInfo special = q;
    special.name = "quantile_" + method + "_special";
    special.samples = {fixed({host({2, 3}, {1, kNaN, 2, 3, kInf, -kInf})}, "nan and infinities"),
                       fixed({host({2, 0}, {})}, "empty lines")};
    special.dtypes = {fx::float64};
    special.skip = {Check::jvp, Check::vjp};
    t.push_back(special);
  }
  OpInfo median = entry(
      "median", [](const Args& a) { return fx::median(a[0], 0, true); },
      [qdtype](const std::vector<HostArray>& a, fx::DType d) {
        const int64_t n = a[0].shape[0], rest = a[0].shape.numel() / std::max<int64_t>(n, 1);
        Shape os = a[0].shape;
        os[0] = 1;
        HostArray out{os, {}, qdtype(d)};
        for (int64_t r = 0; r < rest; ++r) {
          std::vector<double> l;
          for (int64_t i = 0; i < n; ++i) l.push_back(a[0].data[size_t(i * rest + r)]);
          out.data.push_back(quantile_of(l, 0.5, "linear"));
        }
        return out;
      },
      {sample({distinct_values({5, 2})}, "odd"), sample({distinct_values({4, 3})}, "even"), sample({distinct_values({7})}, "vector")},
      kNumericTypes);
  median.reference_dtype = true;
  t.push_back(median);
  OpInfo percentile = entry(
      "percentile", [](const Args& a) { return fx::percentile(a[0], 90.0); },
      [qdtype](const std::vector<HostArray>& a, fx::DType d) {
        return HostArray{Shape{}, {quantile_of(a[0].data, 0.9, "linear")}, qdtype(d)};
      },
      {sample({distinct_values({2, 5})}, "flattened"), sample({distinct_values({})}, "0-d")}, kNumericTypes);
  percentile.reference_dtype = true;
  percentile.errors = {};
  t.push_back(percentile);
}

void add_unique_ops(std::vector<OpInfo>& t) {
  OpInfo u = entry(
      "unique_size", [](const Args& a) { return fx::unique(a[0], 4, -1.0); },
      [](const std::vector<HostArray>& a, fx::DType d) {
        std::vector<double> v = a[0].data;
        std::sort(v.begin(), v.end(), before);
        HostArray out{Shape{4}, {}, d};
        for (size_t i = 0; i < v.size() && out.data.size() < 4; ++i)
          if (i == 0 || !(v[i] == v[i - 1] || (std::isnan(v[i]) && std::isnan(v[i - 1])))) out.data.push_back(v[i]);
        while (out.data.size() < 4) out.data.push_back(-1);
        return out;
      },
      {sample({host({6}, {3, 1, 3, 2, 1, 3})}, "3 values, padded"), sample({host({2, 3}, {5, 4, 3, 2, 1, 0})}, "6 values, cut"),
       sample({host({0}, {})}, "empty")},
      {fx::int8, fx::int32, fx::int64, fx::float16, fx::float32, fx::float64});
  u.samples.push_back(fixed({host({5}, {kNaN, 2, kNaN, 2, -kInf})}, "nans are one value"));
  u.reference_dtype = false;
  u.skip = {Check::jvp, Check::vjp};  // differentiable in the values it keeps; checked in test_numpy_surface
  u.errors = {};
  t.push_back(u);
}

}  // namespace

void add_sorting_ops(std::vector<OpInfo>& t) {
  add_search_ops(t);
  add_quantile_ops(t);
  add_unique_ops(t);
}

}  // namespace optable
