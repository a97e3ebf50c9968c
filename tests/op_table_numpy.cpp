// Op-table entries of the numpy functions a user reaches for in the first week (issue 34) that are
// compositions in api/: log2, log10, hypot, isnan/isinf, isclose/allclose (api/elementwise.h),
// diagonal, diag, trace, tril, triu, kron (api/matrices.h), roll, repeat, split, meshgrid
// (api/shape_ops.h). The references are numpy's definitions written as host loops; the drivers run
// each entry eagerly, traced, through jvp/vjp (finite differences), vmap (against a loop) and jit.
// The sort-based ones: tests/op_table_sorting.cpp.
#include <algorithm>
#include <cmath>
#include <limits>

#include "op_table.h"

namespace optable {
namespace {

using Args = std::vector<fx::Array>;
using fx::Shape;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Sample sample(std::vector<HostArray> args, std::string label) { return Sample{std::move(args), std::move(label)}; }

HostArray unary_map(const HostArray& x, fx::DType dt, const std::function<double(double)>& f) {
  HostArray r = map_ref({x}, [&](const std::vector<double>& v) { return f(v[0]); });
  r.dtype = dt;
  return r;
}

// out[..., i] = x[..., i + r0, i + c0] of the matrices over the last two axes (after moving axes
// a1, a2 there): numpy's diagonal, element by element.
HostArray ref_diagonal(const HostArray& x, int64_t offset, int64_t a1, int64_t a2, fx::DType dt) {
  const int r = x.shape.rank();
  Shape rest;
  std::vector<int64_t> others;
  for (int d = 0; d < r; ++d)
    if (d != a1 && d != a2) others.push_back(d), rest.push_back(x.shape[size_t(d)]);
  const int64_t n = x.shape[size_t(a1)], m = x.shape[size_t(a2)];
  const int64_t len = std::max<int64_t>(0, offset >= 0 ? std::min(n, m - offset) : std::min(n + offset, m));
  Shape os = rest;
  os.push_back(len);
  HostArray out{os, {}, dt};
  for (int64_t o = 0; o < os.numel(); ++o) {
    std::vector<int64_t> oi = unravel(o, os), ii(static_cast<size_t>(r));
    for (size_t k = 0; k < others.size(); ++k) ii[size_t(others[k])] = oi[k];
    ii[size_t(a1)] = oi.back() + std::max<int64_t>(-offset, 0);
    ii[size_t(a2)] = oi.back() + std::max<int64_t>(offset, 0);
    out.data.push_back(x.data[size_t(ravel(ii, x.shape))]);
  }
  return out;
}

// x with the elements of the last two axes outside the band zeroed: kept where j - i <= k (lower)
// or j - i >= k (upper).
HostArray ref_triangle(const HostArray& x, int64_t k, bool lower, fx::DType dt) {
  HostArray out{x.shape, x.data, dt};
  const int r = x.shape.rank();
  for (int64_t o = 0; o < x.shape.numel(); ++o) {
    std::vector<int64_t> i = unravel(o, x.shape);
    const int64_t d = i[size_t(r - 1)] - i[size_t(r - 2)];
    if (lower ? d > k : d < k) out.data[size_t(o)] = 0;
  }
  return out;
}

HostArray ref_kron(const HostArray& a, const HostArray& b, fx::DType dt) {
  const int r = std::max(a.shape.rank(), b.shape.rank());
  auto dim = [&](const HostArray& h, int d) { return d - (r - h.shape.rank()) >= 0 ? h.shape[size_t(d - (r - h.shape.rank()))] : 1; };
  Shape os;
  for (int d = 0; d < r; ++d) os.push_back(dim(a, d) * dim(b, d));
  HostArray out{os, {}, dt};
  for (int64_t o = 0; o < os.numel(); ++o) {
    std::vector<int64_t> oi = unravel(o, os), ai, bi;
    for (int d = 0; d < r; ++d) {
      const int64_t bd = dim(b, d);
      if (d >= r - a.shape.rank()) ai.push_back(oi[size_t(d)] / bd);
      if (d >= r - b.shape.rank()) bi.push_back(oi[size_t(d)] % bd);
    }
    out.data.push_back(a.data[size_t(ravel(ai, a.shape))] * b.data[size_t(ravel(bi, b.shape))]);
  }
  return out;
}

// numpy roll along one axis (axis < 0: the flattened array, keeping the shape).
HostArray ref_roll(const HostArray& x, int64_t shift, int64_t axis, fx::DType dt) {
  HostArray out{x.shape, x.data, dt};
  if (axis < 0) {
    const int64_t n = x.shape.numel();
    for (int64_t i = 0; i < n; ++i) out.data[size_t(((i + shift) % n + n) % n)] = x.data[size_t(i)];
    return out;
  }
  const int64_t n = x.shape[size_t(axis)];
  for (int64_t o = 0; o < x.shape.numel(); ++o) {
    std::vector<int64_t> i = unravel(o, x.shape);
    i[size_t(axis)] = ((i[size_t(axis)] + shift) % n + n) % n;
    out.data[size_t(ravel(i, x.shape))] = x.data[size_t(o)];
  }
  return out;
}

// numpy repeat along `axis` with a count per element.
HostArray ref_repeat(const HostArray& x, const std::vector<int64_t>& counts, int64_t axis, fx::DType dt) {
  std::vector<int64_t> source;
  for (size_t i = 0; i < counts.size(); ++i) source.insert(source.end(), size_t(counts[i]), int64_t(i));
  Shape os = x.shape;
  os[size_t(axis)] = int64_t(source.size());
  HostArray out{os, {}, dt};
  for (int64_t o = 0; o < os.numel(); ++o) {
    std::vector<int64_t> i = unravel(o, os);
    i[size_t(axis)] = source[size_t(i[size_t(axis)])];
    out.data.push_back(x.data[size_t(ravel(i, x.shape))]);
  }
  return out;
}

// x[..., from:to, ...] along `axis`.
HostArray ref_piece(const HostArray& x, int64_t axis, int64_t from, int64_t to, fx::DType dt) {
  Shape os = x.shape;
  os[size_t(axis)] = to - from;
  HostArray out{os, {}, dt};
  for (int64_t o = 0; o < os.numel(); ++o) {
    std::vector<int64_t> i = unravel(o, os);
    i[size_t(axis)] += from;
    out.data.push_back(x.data[size_t(ravel(i, x.shape))]);
  }
  return out;
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

void add_elementwise_compositions(std::vector<OpInfo>& t) {
  const std::vector<Sample> positive = {sample({uniform({}, 0.2, 6, 1)}, "scalar"),
                                        sample({uniform({7}, 0.2, 6, 2)}, "vector"),
                                        sample({uniform({0, 3}, 0.2, 6, 3)}, "empty")};
  OpInfo log2 = entry(
      "log2", [](const Args& a) { return fx::log2(a[0]); },
      [](const std::vector<HostArray>& a, fx::DType d) { return unary_map(a[0], d, [](double x) { return std::log2(x); }); },
      positive, kFloatTypes);
  log2.samples.push_back(sample({host({4}, {1, 2, 8, 1024})}, "powers of two"));
  t.push_back(log2);
  t.push_back(entry(
      "log10", [](const Args& a) { return fx::log10(a[0]); },
      [](const std::vector<HostArray>& a, fx::DType d) { return unary_map(a[0], d, [](double x) { return std::log10(x); }); },
      positive, kFloatTypes));

  OpInfo hypot = entry(
      "hypot", [](const Args& a) { return fx::hypot(a[0], a[1]); },
      [](const std::vector<HostArray>& a, fx::DType d) {
        HostArray r = map_ref(a, [](const std::vector<double>& v) { return std::hypot(v[0], v[1]); });
        r.dtype = d;
        return r;
      },
      {sample({reals({5}, 4), reals({5}, 5)}, "vectors"), sample({reals({2, 3}, 6), reals({3}, 7)}, "broadcast"),
       sample({reals({}, 8), reals({4}, 9)}, "scalar")},
      kFloatTypes);
  // Magnitudes whose squares overflow (float64's range; float32's would round in the reference).
  hypot.samples.push_back(fixed({host({2}, {3e200, -4e200}), host({2}, {4e200, 3e-200})}, "huge and tiny"));
  hypot.samples.push_back(fixed({host({3}, {kInf, kNaN, 0}), host({3}, {kNaN, -kInf, 0})}, "inf beats NaN"));
  hypot.errors = {error_sample({reals({2}, 1), reals({3}, 2)}, fx::ErrorKind::Shape, "shapes do not broadcast")};
  hypot.error_name = "hypot";
  hypot.skip = {Check::jvp, Check::vjp};  // the fixed samples' infinities; gradients: the entry below
  t.push_back(hypot);
  OpInfo hypot_ad = hypot;
  hypot_ad.name = "hypot_smooth";
  hypot_ad.samples.resize(3);
  hypot_ad.skip = {};
  t.push_back(hypot_ad);
}

void add_elementwise_tests(std::vector<OpInfo>& t) {
  const HostArray specials = host({2, 3}, {1.5, kNaN, kInf, -kInf, 0, -2});
  auto flags = [](double (*f)(double)) {
    return [f](const std::vector<HostArray>& a, fx::DType) {
      HostArray r = map_ref(a, [f](const std::vector<double>& v) { return f(v[0]); });
      r.dtype = fx::bool_;
      return r;
    };
  };
  auto predicate_entry = [&](std::string name, fx::Array (*op)(const fx::ArrayLike&, fx::SourceLoc), double (*f)(double)) {
    OpInfo o = entry(
        name, [op](const Args& a) { return op(a[0], std::source_location::current()); }, flags(f),
        {sample({specials}, "nan and infinities"), sample({reals({4}, 3)}, "finite")}, kFloatTypes);
    for (fx::DType d : {fx::int32, fx::uint8, fx::bool_}) o.samples.push_back(fixed({distinct_values({3}, d)}, "integers"));
    o.differentiable = false;
    o.reference_dtype = true;
    return o;
  };
  t.push_back(predicate_entry("isnan", fx::isnan, [](double x) { return double(std::isnan(x)); }));
  t.push_back(predicate_entry("isinf", fx::isinf, [](double x) { return double(std::isinf(x)); }));
  t.push_back(predicate_entry("isposinf", fx::isposinf, [](double x) { return double(x == kInf); }));
  t.push_back(predicate_entry("isneginf", fx::isneginf, [](double x) { return double(x == -kInf); }));

  // numpy's isclose: |a - b| <= atol + rtol |b|, infinities close only to themselves, NaN to nothing.
  auto isclose_ref = [](double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return 0.0;
    if (std::isinf(a) || std::isinf(b)) return double(a == b);
    return double(std::fabs(a - b) <= 1e-8 + 1e-5 * std::fabs(b));
  };
  OpInfo isclose = entry(
      "isclose", [](const Args& a) { return fx::isclose(a[0], a[1]); },
      [isclose_ref](const std::vector<HostArray>& a, fx::DType) {
        HostArray r = map_ref(a, [&](const std::vector<double>& v) { return isclose_ref(v[0], v[1]); });
        r.dtype = fx::bool_;
        return r;
      },
      {fixed({host({6}, {1, 1, kInf, kInf, kNaN, 1e-9}), host({6}, {1 + 2e-5, 1 + 5e-6, kInf, -kInf, kNaN, 0})}, "edges"),
       fixed({distinct_values({4}, fx::int32), distinct_values({4}, fx::int32, 1)}, "integers exactly")},
      {fx::float64});
  isclose.differentiable = false;
  isclose.reference_dtype = true;
  t.push_back(isclose);
  OpInfo allclose = entry(
      "allclose", [](const Args& a) { return fx::allclose(a[0], a[1], 1e-3, 0.0); },
      [](const std::vector<HostArray>& a, fx::DType) {
        bool all = true;
        for (size_t i = 0; i < a[0].data.size(); ++i)
          all = all && std::fabs(a[0].data[i] - a[1].data[i]) <= 1e-3 * std::fabs(a[1].data[i]);
        return HostArray{Shape{}, {double(all)}, fx::bool_};
      },
      {sample({host({3}, {1, 2, 3}), host({3}, {1, 2, 3.001})}, "close"),
       sample({host({3}, {1, 2, 3}), host({3}, {1, 2, 3.1})}, "not close"), sample({reals({0}, 1), reals({0}, 2)}, "empty")},
      {fx::float32, fx::float64});
  allclose.differentiable = false;
  allclose.reference_dtype = true;
  t.push_back(allclose);
}

void add_matrix_ops(std::vector<OpInfo>& t) {
  const fx::ErrorKind kShape = fx::ErrorKind::Shape;
  OpInfo diagonal = entry(
      "diagonal", [](const Args& a) { return fx::diagonal(a[0], 1); },
      [](const std::vector<HostArray>& a, fx::DType d) { return ref_diagonal(a[0], 1, 0, 1, d); },
      {sample({distinct_values({3, 4})}, "wide"), sample({distinct_values({4, 3})}, "tall"),
       sample({distinct_values({2, 3, 2})}, "batch behind"), sample({distinct_values({1, 1})}, "past the edge")},
      kNumericTypes);
  diagonal.errors = {error_sample({distinct_values({3})}, kShape, "rank 1")};
  diagonal.error_name = "diagonal";
  t.push_back(diagonal);
  t.push_back(entry(
      "diagonal_axes", [](const Args& a) { return fx::diagonal(a[0], -1, -1, 0); },
      [](const std::vector<HostArray>& a, fx::DType d) {
        return ref_diagonal(a[0], -1, a[0].shape.rank() - 1, 0, d);
      },
      {sample({distinct_values({3, 4})}, "matrix"), sample({distinct_values({4, 2, 3})}, "axes -1, 0")}, {fx::float32, fx::float64}));

  OpInfo diag = entry(
      "diag", [](const Args& a) { return fx::diag(a[0], a[0].ndim() == 1 ? 1 : -1); },
      [](const std::vector<HostArray>& a, fx::DType d) {
        if (a[0].shape.rank() == 2) return ref_diagonal(a[0], -1, 0, 1, d);
        const int64_t n = a[0].shape[0];
        HostArray out{Shape{n + 1, n + 1}, std::vector<double>(size_t((n + 1) * (n + 1))), d};
        for (int64_t i = 0; i < n; ++i) out.data[size_t(i * (n + 1) + i + 1)] = a[0].data[size_t(i)];
        return out;
      },
      {sample({distinct_values({3})}, "vector to matrix, k=1"), sample({distinct_values({0})}, "empty vector"),
       sample({distinct_values({3, 3})}, "matrix to diagonal, k=-1")},
      kNumericTypes);
  diag.samples.push_back(fixed({distinct_values({3}, fx::bool_)}, "bool vector"));
  diag.errors = {error_sample({distinct_values({2, 2, 2})}, kShape, "rank 3"),
                 error_sample({distinct_values({})}, kShape, "rank 0")};
  diag.error_name = "diag";
  t.push_back(diag);

  OpInfo trace = entry(
      "trace", [](const Args& a) { return fx::trace(a[0], 1, -2, -1); },
      [](const std::vector<HostArray>& a, fx::DType d) {
        const int r = a[0].shape.rank();
        HostArray dg = ref_diagonal(a[0], 1, r - 2, r - 1, d);
        Shape os(std::vector<int64_t>(dg.shape.begin(), dg.shape.end() - 1));
        const int64_t len = dg.shape[size_t(dg.shape.rank() - 1)];
        // sum's dtype: narrow integers and bool accumulate in int32 (uint8 in uint32).
        const fx::DType out = d == fx::int8 ? fx::int32 : d == fx::uint8 ? fx::uint32 : d;
        HostArray s{os, std::vector<double>(size_t(os.numel())), out};
        for (int64_t i = 0; i < os.numel(); ++i)
          for (int64_t j = 0; j < len; ++j) s.data[size_t(i)] += dg.data[size_t(i * len + j)];
        return s;
      },
      {sample({small_values({3, 4}, fx::float64)}, "matrix"), sample({small_values({2, 3, 4}, fx::float64)}, "batch")},
      kNumericTypes);
  trace.reference_dtype = true;
  t.push_back(trace);

  for (bool lower : {true, false}) {
    const int64_t k = lower ? 0 : 1;
    OpInfo tri = entry(
        lower ? "tril" : "triu", [lower](const Args& a) { return lower ? fx::tril(a[0]) : fx::triu(a[0], 1); },
        [k, lower](const std::vector<HostArray>& a, fx::DType d) { return ref_triangle(a[0], k, lower, d); },
        {sample({distinct_values({3, 4})}, "wide"), sample({distinct_values({2, 3, 3})}, "batch")}, kNumericTypes);
    tri.samples.push_back(fixed({distinct_values({3, 2}, fx::bool_)}, "bool"));
    tri.errors = {error_sample({distinct_values({4})}, kShape, "rank 1")};
    tri.error_name = lower ? "tril" : "triu";
    t.push_back(tri);
  }

  t.push_back(entry(
      "kron", [](const Args& a) { return fx::kron(a[0], a[1]); },
      [](const std::vector<HostArray>& a, fx::DType d) { return ref_kron(a[0], a[1], d); },
      {sample({small_values({2, 3}, fx::float64), small_values({2}, fx::float64, 1)}, "matrix x vector"),
       sample({small_values({2}, fx::float64), small_values({3}, fx::float64, 2)}, "vectors"),
       sample({small_values({2, 2}, fx::float64), small_values({2, 3}, fx::float64, 3)}, "matrices"),
       sample({small_values({}, fx::float64), small_values({2}, fx::float64, 4)}, "scalar")},
      kNumericTypes));
}

void add_rearrangements(std::vector<OpInfo>& t) {
  OpInfo roll = entry(
      "roll", [](const Args& a) { return fx::roll(a[0], -7); },
      [](const std::vector<HostArray>& a, fx::DType d) { return ref_roll(a[0], -7, -1, d); },
      {sample({distinct_values({5})}, "vector"), sample({distinct_values({2, 3})}, "flattened"),
       sample({distinct_values({0})}, "empty")},
      kNumericTypes);
  t.push_back(roll);
  t.push_back(entry(
      "roll_axes", [](const Args& a) { return fx::roll(a[0], {1, -1}, {-1, 0}); },
      [](const std::vector<HostArray>& a, fx::DType d) {
        return ref_roll(ref_roll(a[0], 1, a[0].shape.rank() - 1, d), -1, 0, d);
      },
      {sample({distinct_values({3, 4})}, "matrix"), sample({distinct_values({2, 3, 2})}, "rank 3")}, {fx::float32, fx::float64}));

  OpInfo repeat = entry(
      "repeat", [](const Args& a) { return fx::repeat(a[0], 2, 0); },
      [](const std::vector<HostArray>& a, fx::DType d) {
        return ref_repeat(a[0], std::vector<int64_t>(size_t(a[0].shape[0]), 2), 0, d);
      },
      {sample({distinct_values({3})}, "vector"), sample({distinct_values({2, 3})}, "rows")}, kAllTypes);
  repeat.errors = {error_sample({distinct_values({})}, fx::ErrorKind::Shape, "axis 0 of a 0-d array")};
  repeat.error_name = "repeat";
  t.push_back(repeat);
  OpInfo counts = entry(
      "repeat_counts", [](const Args& a) { return fx::repeat(a[0], fx::IntList{1, 0, 3}, -1); },
      [](const std::vector<HostArray>& a, fx::DType d) { return ref_repeat(a[0], {1, 0, 3}, a[0].shape.rank() - 1, d); },
      {sample({distinct_values({3})}, "vector"), sample({distinct_values({2, 3})}, "columns")}, kNumericTypes);
  counts.errors = {error_sample({distinct_values({4})}, fx::ErrorKind::Shape, "3 counts for 4 elements")};
  counts.error_name = "repeat";
  t.push_back(counts);

  OpInfo split = entry(
      "split", [](const Args& a) { return fx::split(a[0], 3, 1)[1]; },
      [](const std::vector<HostArray>& a, fx::DType d) {
        const int64_t each = a[0].shape[1] / 3;
        return ref_piece(a[0], 1, each, 2 * each, d);
      },
      {sample({distinct_values({2, 6})}, "6 into 3"), sample({distinct_values({1, 3, 2})}, "3 into 3")}, kAllTypes);
  split.errors = {error_sample({distinct_values({2, 4})}, fx::ErrorKind::Value, "4 into 3"),
                  error_sample({distinct_values({4})}, fx::ErrorKind::Shape, "axis 1 of a vector")};
  split.error_name = "split";
  t.push_back(split);
  t.push_back(entry(
      "split_indices", [](const Args& a) { return fx::split(a[0], {5, 3})[2]; },  // numpy: [:5], [5:3], [3:]
      [](const std::vector<HostArray>& a, fx::DType d) { return ref_piece(a[0], 0, 3, a[0].shape[0], d); },
      {sample({distinct_values({10})}, "10"), sample({distinct_values({4, 2})}, "past the end")}, {fx::float32, fx::int32}));
  t.push_back(entry(
      "array_split", [](const Args& a) { return fx::array_split(a[0], 3, -1)[0]; },
      [](const std::vector<HostArray>& a, fx::DType d) {
        const int64_t ax = a[0].shape.rank() - 1, n = a[0].shape[size_t(ax)];
        return ref_piece(a[0], ax, 0, n / 3 + (n % 3 ? 1 : 0), d);
      },
      {sample({distinct_values({7})}, "7 into 3, the first has 3"), sample({distinct_values({2, 2})}, "2 into 3")},
      {fx::float32, fx::int32}));

  for (int which : {0, 1}) {
    t.push_back(entry(
        which ? "meshgrid_ij" : "meshgrid_xy",
        [which](const Args& a) { return fx::meshgrid({a[0], a[1]}, which ? "ij" : "xy")[size_t(which)]; },
        [which](const std::vector<HostArray>& a, fx::DType d) {
          const int64_t n0 = a[0].shape.numel(), n1 = a[1].shape.numel();
          // "xy": both are [n1, n0]; "ij": [n0, n1]. Output `which` varies along its own input.
          HostArray out{which ? Shape{n0, n1} : Shape{n1, n0}, {}, d};
          for (int64_t i = 0; i < out.shape[0]; ++i)
            for (int64_t j = 0; j < out.shape[1]; ++j)
              out.data.push_back(which ? a[1].data[size_t(j)] : a[0].data[size_t(j)]);
          return out;
        },
        {sample({distinct_values({3}), distinct_values({2}, fx::float64, 1)}, "3 and 2"),
         sample({distinct_values({}), distinct_values({4}, fx::float64, 1)}, "0-d and 4")},
        kNumericTypes));
  }
}

}  // namespace

void add_numpy_ops(std::vector<OpInfo>& t) {
  add_elementwise_compositions(t);
  add_elementwise_tests(t);
  add_matrix_ops(t);
  add_rearrangements(t);
}

}  // namespace optable
