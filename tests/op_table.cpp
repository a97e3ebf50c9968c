#include "op_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace optable {

namespace {
// Stamps the entries added since `from` with the file that wrote them.
void stamp(std::vector<OpInfo>& t, size_t from, const char* file) {
  for (size_t i = from; i < t.size(); ++i) t[i].file = file;
}
}  // namespace

const std::vector<OpInfo>& op_table() {
  static const std::vector<OpInfo> table = [] {
    std::vector<OpInfo> t;
    add_elementwise_ops(t);
    stamp(t, 0, "op_table_elementwise.cpp");
    size_t n = t.size();
    add_shape_ops(t);
    stamp(t, n, "op_table_shape.cpp");
    n = t.size();
    add_indexing_ops(t);
    stamp(t, n, "op_table_indexing.cpp");
    n = t.size();
    add_reduce_ops(t);
    stamp(t, n, "op_table_reduce.cpp");
    n = t.size();
    add_linalg_ops(t);
    stamp(t, n, "op_table_linalg.cpp");
    n = t.size();
    add_decomposition_ops(t);
    stamp(t, n, "op_table_decomp.cpp");
    n = t.size();
    add_conv_ops(t);
    stamp(t, n, "op_table_conv.cpp");
    n = t.size();
    add_complex_ops(t);
    stamp(t, n, "op_table_complex.cpp");
    n = t.size();
    add_numpy_ops(t);
    stamp(t, n, "op_table_numpy.cpp");
    n = t.size();
    add_sorting_ops(t);
    stamp(t, n, "op_table_sorting.cpp");
    return t;
  }();
  return table;
}

// ---- tolerances -----------------------------------------------------------------------------------

bool close(double got, double want, Tolerance t) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= t.atol + t.rtol * std::fabs(want);
}

Tolerance default_tolerance(Check c, fx::DType d) {
  using D = fx::DType;
  if (!fx::is_float(d)) return {0, 0};
  switch (c) {
    case Check::eager:  // the kernels against references in double
      switch (d) {
        case D::float16: return {1e-2, 1e-2};
        case D::bfloat16: return {1.6e-2, 1.6e-2};
        case D::float32: return {2e-6, 1e-6};
        default: return {1e-12, 1e-13};
      }
    case Check::jit:  // compiled against eager: polynomial approximations (<= 5 ulp; sin/cos ~1e-6
                      // absolute on |x| <= 100), float32 sums in another order, f16/bf16 one ulp apart
      switch (d) {
        case D::float16: return {2e-3, 2e-3};
        case D::bfloat16: return {1.6e-2, 1.6e-2};
        case D::float32: return {2e-5, 1e-5};
        default: return {1e-12, 1e-13};
      }
    case Check::vmap:  // batched against the loop: the same kernels on differently shaped data
      return {1e-5, 1e-5};
    case Check::jvp:  // float64: against finite differences (atol relative to the largest magnitude);
                      // narrower dtypes: against float64, relative to the largest magnitude
      switch (d) {
        case D::float16: return {0, 4e-2};
        case D::bfloat16: return {0, 8e-2};
        case D::float32: return {0, 4e-5};
        default: return {1e-6, 1e-7};
      }
    case Check::vjp:  // the dot-product identity, relative to the sum of the products' magnitudes
      switch (d) {
        case D::float16: return {2e-3, 2e-3};
        case D::bfloat16: return {1.6e-2, 1.6e-2};
        case D::float32: return {1e-6, 1e-6};
        default: return {1e-12, 1e-12};
      }
    case Check::trace:
    case Check::errors: return {0, 0};
  }
  return {0, 0};
}

Tolerance OpInfo::tolerance(Check c, fx::DType d) const {
  for (const ToleranceOverride& o : tolerances)
    if (o.check == c && o.dtype == d) return o.tol;
  Tolerance t = default_tolerance(c, d);
  // tol_scale widens the bounds that rounding sets: eager and jit results, narrow-dtype derivatives.
  if (c == Check::eager || c == Check::jit || (c == Check::jvp && d != fx::float64)) {
    t.rtol *= tol_scale;
    t.atol *= tol_scale;
  }
  return t;
}

void set_tolerance(OpInfo& op, Check c, const std::vector<fx::DType>& dtypes, Tolerance t) {
  for (fx::DType d : dtypes) op.tolerances.push_back(ToleranceOverride{c, d, t});
}

// ---- the drivers' common steps ----------------------------------------------------------------------

std::string describe(const OpInfo& op, fx::DType d, const Sample& s) {
  std::ostringstream os;
  os << op.name << " [" << fx::dtype_name(d) << "] " << s.label << " (";
  for (size_t i = 0; i < s.args.size(); ++i) os << (i ? ", " : "") << s.args[i].shape.str();
  os << ")";
  return os.str();
}

std::vector<fx::Array> sample_args(const Sample& s, fx::DType d) {
  std::vector<fx::Array> args;
  for (const HostArray& h : s.args) args.push_back(to_array(h, s.fixed_dtype ? h.dtype : d));
  return args;
}

bool identical(const fx::Array& a, const fx::Array& b) {
  if (!(a.aval().same_type(b.aval()))) return false;
  HostArray x = to_host(a), y = to_host(b);
  for (size_t i = 0; i < x.data.size(); ++i)
    if (!(x.data[i] == y.data[i] || (std::isnan(x.data[i]) && std::isnan(y.data[i])))) return false;
  return true;
}

// ---- helpers for writing entries ------------------------------------------------------------------

namespace {
uint64_t next(uint64_t& s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return s >> 11;
}
}  // namespace

HostArray uniform(fx::Shape shape, double lo, double hi, uint64_t seed) {
  HostArray h{shape, {}, fx::float64};
  uint64_t s = seed * 7919 + 17;
  for (int64_t i = 0; i < shape.numel(); ++i) h.data.push_back(lo + (hi - lo) * double(next(s)) / double(1ull << 53));
  return h;
}

HostArray integers(fx::Shape shape, int64_t lo, int64_t hi, uint64_t seed, fx::DType dtype) {
  HostArray h{shape, {}, dtype};
  uint64_t s = seed * 104729 + 3;
  for (int64_t i = 0; i < shape.numel(); ++i) h.data.push_back(double(lo + int64_t(next(s) % uint64_t(hi - lo))));
  return h;
}

HostArray small_ints(fx::Shape shape, uint64_t seed, int lo, int hi) {
  HostArray h{shape, std::vector<double>(size_t(shape.numel())), fx::float64};
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (double& v : h.data) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = double(lo + int64_t((s >> 33) % uint64_t(hi - lo + 1)));
  }
  return h;
}

HostArray reals(fx::Shape shape, uint64_t seed) {
  HostArray h{shape, std::vector<double>(size_t(shape.numel())), fx::float64};
  uint64_t s = seed * 2862933555777941757ull + 3037000493ull;
  for (double& v : h.data) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = double(s >> 11) / double(1ull << 53) * 2.0 - 1.0;
  }
  return h;
}

HostArray host(fx::Shape shape, std::vector<double> data, fx::DType dtype) {
  return HostArray{std::move(shape), std::move(data), dtype};
}

namespace {
// Element i is (i * step + seed * seed_step + offset) % modulus (its parity for bool).
HostArray stepped(const fx::Shape& shape, fx::DType dtype, int64_t seed, int64_t step, int64_t seed_step,
                  int64_t offset, int64_t modulus) {
  HostArray h{shape, {}, dtype};
  for (int64_t i = 0; i < shape.numel(); ++i) {
    const int64_t v = (i * step + seed * seed_step + offset) % modulus;
    h.data.push_back(dtype == fx::bool_ ? double(v % 2) : double(v));
  }
  return h;
}
}  // namespace

HostArray distinct_values(fx::Shape shape, fx::DType dtype, int64_t seed) { return stepped(shape, dtype, seed, 37, 11, 5, 101); }
HostArray small_values(fx::Shape shape, fx::DType dtype, int64_t seed) { return stepped(shape, dtype, seed, 7, 3, 1, 11); }

HostArray index_values(fx::Shape shape, std::vector<double> data, fx::DType dtype) {
  return HostArray{std::move(shape), std::move(data), dtype};
}

HostArray with_shape(const HostArray& x, fx::Shape shape, fx::DType dtype) { return HostArray{shape, x.data, dtype}; }

std::vector<int64_t> unravel(int64_t flat, const fx::Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (int d = s.rank() - 1; d >= 0; --d) {
    idx[size_t(d)] = flat % s[size_t(d)];
    flat /= s[size_t(d)];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const fx::Shape& s) {
  int64_t flat = 0;
  for (size_t d = 0; d < idx.size(); ++d) flat = flat * s[d] + idx[d];
  return flat;
}

Sample fixed(std::vector<HostArray> args, std::string label) { return Sample{std::move(args), std::move(label), true}; }
ErrorSample error_sample(std::vector<HostArray> args, fx::ErrorKind kind, std::string label) {
  return ErrorSample{std::move(args), kind, std::move(label)};
}

fx::Array to_array(const HostArray& h, fx::DType dtype) {
  std::vector<uint8_t> bytes(h.data.size() * fx::itemsize(dtype) + 1);
  for (size_t i = 0; i < h.data.size(); ++i) {
    double v = h.data[i];
    // A float sample (NaN, inf) as an integer: INT64_MIN, what x86's conversion gives, without the
    // undefined behaviour of converting it (UBSan's float-cast-overflow).
    const int64_t as_int = std::isfinite(v) && std::abs(v) < 9.2e18 ? int64_t(v) : std::numeric_limits<int64_t>::min();
    fx::Literal l = fx::is_float(dtype) ? fx::Literal::of_double(v, dtype) : fx::Literal::of_int(as_int, dtype);
    l.store(bytes.data() + i * fx::itemsize(dtype));
  }
  return fx::make_concrete(fx::AbstractArray{h.shape, dtype, false}, bytes.data());
}

HostArray to_host(const fx::Array& a) {
  HostArray h{a.shape(), {}, a.dtype()};
  const char* p = static_cast<const char*>(a.data());
  for (int64_t i = 0; i < a.size(); ++i)
    h.data.push_back(fx::Literal::load(p + size_t(i) * fx::itemsize(a.dtype()), a.dtype()).as_double());
  return h;
}

HostArray map_ref(const std::vector<HostArray>& args, const std::function<double(const std::vector<double>&)>& f) {
  int rank = 0;
  for (const HostArray& a : args) rank = std::max(rank, a.shape.rank());
  std::vector<int64_t> out(size_t(rank), 1);
  for (const HostArray& a : args)
    for (int i = 0; i < a.shape.rank(); ++i) {
      int64_t& o = out[size_t(rank - a.shape.rank() + i)];
      if (a.shape[size_t(i)] != 1) o = a.shape[size_t(i)];
    }
  fx::Shape os(out);
  HostArray r{os, std::vector<double>(size_t(os.numel())), fx::float64};
  std::vector<double> xs(args.size());
  for (int64_t flat = 0; flat < os.numel(); ++flat) {
    for (size_t k = 0; k < args.size(); ++k) {
      const HostArray& a = args[k];
      int64_t rem = flat, idx = 0, stride = 1;
      for (int d = rank - 1; d >= 0; --d) {
        int64_t i = rem % os[size_t(d)];
        rem /= os[size_t(d)];
        int ad = d - (rank - a.shape.rank());
        if (ad < 0) continue;
        if (a.shape[size_t(ad)] != 1) idx += i * stride;
        stride *= a.shape[size_t(ad)];
      }
      xs[k] = a.data[size_t(idx)];
    }
    r.data[size_t(flat)] = f(xs);
  }
  return r;
}

}  // namespace optable
