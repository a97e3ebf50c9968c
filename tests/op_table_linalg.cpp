// Op-table entries for the products (matmul, dot, inner, outer, vdot, tensordot, einsum), with
// references written as plain loops over every index, and focused tests of the dot_general
// primitive itself (eager and traced) against the same loops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "api/elementwise.h"
#include "api/linalg.h"
#include "op_table.h"
#include "prims/registry.h"

namespace optable {
namespace {

// ---- host arrays (local, so these tests stand without the shared helpers) ----------------------

int64_t numel(const fx::Shape& s) { return s.numel(); }

// Small integers in [lo, hi]: exact in every dtype under test, so integer and 16-bit-float
// results can be compared exactly for the integer samples.
HostArray small_ints(fx::Shape shape, uint64_t seed, int lo = -3, int hi = 3) {
  HostArray h{shape, std::vector<double>(size_t(numel(shape))), fx::float64};
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (double& v : h.data) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = double(lo + int64_t((s >> 33) % uint64_t(hi - lo + 1)));
  }
  return h;
}

HostArray reals(fx::Shape shape, uint64_t seed) {
  HostArray h{shape, std::vector<double>(size_t(numel(shape))), fx::float64};
  uint64_t s = seed * 2862933555777941757ull + 3037000493ull;
  for (double& v : h.data) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = double(s >> 11) / double(1ull << 53) * 2.0 - 1.0;
  }
  return h;
}

fx::Array device_array(const HostArray& h, fx::DType dtype) {
  fx::Array a = fx::detail::array_from_host(h.data.data(), fx::float64, h.shape, h.data.size(), {});
  return fx::astype(a, dtype);
}

HostArray host_array(const fx::Array& a) { return {a.shape(), a.to_vector<double>(), a.dtype()}; }

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

// ---- references -------------------------------------------------------------------------------

// einsum by brute force: every assignment of values to the labels adds the product of the operands'
// elements to the output element its output labels select. Terms are comma-separated letters.
HostArray einsum_ref(const std::string& inputs, const std::string& output, const std::vector<HostArray>& xs) {
  std::vector<std::string> terms(1);
  for (char c : inputs) {
    if (c == ',') terms.emplace_back();
    else terms.back() += c;
  }
  std::map<char, int64_t> size;
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d) size[terms[i][d]] = xs[i].shape[d];
  std::vector<char> labels;
  fx::Shape all;
  for (auto [l, n] : size) {
    labels.push_back(l);
    all.push_back(n);
  }
  fx::Shape out_shape;
  for (char c : output) out_shape.push_back(size.at(c));
  HostArray out{out_shape, std::vector<double>(size_t(numel(out_shape)), 0.0), fx::float64};
  auto value_of = [&](const std::vector<int64_t>& at, char l) {
    return at[size_t(std::find(labels.begin(), labels.end(), l) - labels.begin())];
  };
  for (int64_t flat = 0; flat < numel(all); ++flat) {
    std::vector<int64_t> at = unravel(flat, all);
    double p = 1;
    for (size_t i = 0; i < terms.size(); ++i) {
      std::vector<int64_t> idx;
      for (char l : terms[i]) idx.push_back(value_of(at, l));
      p *= xs[i].data[size_t(ravel(idx, xs[i].shape))];
    }
    std::vector<int64_t> o;
    for (char l : output) o.push_back(value_of(at, l));
    out.data[size_t(ravel(o, out_shape))] += p;
  }
  return out;
}

// numpy matmul written out: 1-D operands become a row / a column, batch dims broadcast (size 1
// repeats), and a triple loop per batch entry.
HostArray matmul_ref(const std::vector<HostArray>& xs, fx::DType) {
  fx::Shape a = xs[0].shape, b = xs[1].shape;
  const bool a_vec = a.rank() == 1, b_vec = b.rank() == 1;
  if (a_vec) a = fx::Shape{1, a[0]};
  if (b_vec) b = fx::Shape{b[0], 1};
  const int nb = std::max(a.rank(), b.rank()) - 2;
  fx::Shape batch;
  auto dim_or_1 = [](const fx::Shape& s, int i, int nb) {
    int j = i - (nb - (s.rank() - 2));
    return j < 0 ? int64_t(1) : s[size_t(j)];
  };
  for (int i = 0; i < nb; ++i) batch.push_back(std::max(dim_or_1(a, i, nb), dim_or_1(b, i, nb)));
  const int64_t M = a[size_t(a.rank() - 2)], K = a[size_t(a.rank() - 1)], N = b[size_t(b.rank() - 1)];
  fx::Shape out_shape = batch;
  if (!a_vec) out_shape.push_back(M);
  if (!b_vec) out_shape.push_back(N);
  HostArray out{out_shape, std::vector<double>(size_t(numel(batch) * M * N)), fx::float64};
  auto batch_offset = [&](const std::vector<int64_t>& bi, const fx::Shape& s) {
    int64_t off = 0;
    const int lead = s.rank() - 2;
    for (int j = 0; j < lead; ++j) {
      int64_t i = bi[size_t(nb - lead + j)];
      off = off * s[size_t(j)] + (s[size_t(j)] == 1 ? 0 : i);
    }
    return off;
  };
  for (int64_t bflat = 0; bflat < numel(batch); ++bflat) {
    std::vector<int64_t> bi = unravel(bflat, batch);
    const double* pa = xs[0].data.data() + batch_offset(bi, a) * M * K;
    const double* pb = xs[1].data.data() + batch_offset(bi, b) * K * N;
    double* po = out.data.data() + bflat * M * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += pa[i * K + k] * pb[k * N + j];
        po[i * N + j] = s;
      }
  }
  return out;
}

// Letters for building einsum references of the other ops.
std::string letters(char from, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += char(from + i);
  return s;
}

// numpy dot: a's last axis against b's second-to-last (its only one when b is 1-D).
HostArray dot_ref(const std::vector<HostArray>& xs, fx::DType) {
  const int ra = xs[0].shape.rank(), rb = xs[1].shape.rank();
  std::string a = letters('a', ra), b = letters('A', rb);
  if (ra == 0 || rb == 0) return einsum_ref(a + "," + b, a + b, xs);
  a.back() = 'z';
  b[size_t(rb == 1 ? 0 : rb - 2)] = 'z';
  std::string out = a.substr(0, a.size() - 1);
  for (char c : b)
    if (c != 'z') out += c;
  return einsum_ref(a + "," + b, out, xs);
}

HostArray inner_ref(const std::vector<HostArray>& xs, fx::DType) {
  std::string a = letters('a', xs[0].shape.rank()), b = letters('A', xs[1].shape.rank());
  a.back() = 'z';
  b.back() = 'z';
  return einsum_ref(a + "," + b, a.substr(0, a.size() - 1) + b.substr(0, b.size() - 1), xs);
}

HostArray tensordot_ref(const std::vector<HostArray>& xs, const std::vector<int64_t>& aa,
                        const std::vector<int64_t>& ba) {
  std::string a = letters('a', xs[0].shape.rank()), b = letters('A', xs[1].shape.rank());
  for (size_t i = 0; i < aa.size(); ++i) b[size_t(ba[i])] = a[size_t(aa[i])];
  std::string out;
  for (char c : a)
    if (b.find(c) == std::string::npos) out += c;
  for (char c : b)
    if (c >= 'A' && c <= 'Z') out += c;
  return einsum_ref(a + "," + b, out, xs);
}

// The per-dtype tolerance of an elementwise comparison (relative to the magnitudes involved).
double tolerance(fx::DType d) {
  switch (d) {
    case fx::DType::float16: return 4e-3;
    case fx::DType::bfloat16: return 3e-2;
    case fx::DType::float32: return 2e-6;
    case fx::DType::float64: return 1e-13;
    default: return 0;
  }
}

void check_close(const HostArray& got, const HostArray& want, double tol, const std::string& what) {
  INFO(what);
  REQUIRE(got.shape == want.shape);
  double scale = 1;
  for (double w : want.data) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.data.size(); ++i) {
    INFO("element " << i);
    CHECK(std::abs(got.data[i] - want.data[i]) <= tol * scale);
  }
}

Sample sample(std::vector<HostArray> args, std::string label) { return Sample{std::move(args), std::move(label)}; }
Sample ints2(fx::Shape a, fx::Shape b, uint64_t seed) {
  return sample({small_ints(a, seed), small_ints(b, seed + 1)}, "a" + a.str() + " b" + b.str());
}
ErrorSample err(fx::Shape a, fx::Shape b, fx::ErrorKind kind, std::string label) {
  return ErrorSample{{small_ints(a, 1), small_ints(b, 2)}, kind, std::move(label)};
}

const std::vector<fx::DType> kLinalgTypes = {fx::float32, fx::float64, fx::int32, fx::float16, fx::bfloat16};

OpInfo einsum_entry(std::string name, const char* spec, std::string ref_in, std::string ref_out,
                    std::vector<Sample> samples) {
  OpInfo e;
  e.name = std::move(name);
  e.op = [spec](const std::vector<fx::Array>& x) { return fx::einsum(spec, x); };
  e.reference = [ref_in, ref_out](const std::vector<HostArray>& xs, fx::DType) {
    return einsum_ref(ref_in, ref_out, xs);
  };
  e.samples = std::move(samples);
  e.dtypes = kLinalgTypes;
  return e;
}

}  // namespace

void add_linalg_ops(std::vector<OpInfo>& t) {
  using K = fx::ErrorKind;
  {
    OpInfo e;
    e.name = "matmul";
    e.op = [](const std::vector<fx::Array>& x) { return fx::matmul(x[0], x[1]); };
    e.reference = matmul_ref;
    e.samples = {ints2({3, 4}, {4, 5}, 1),       ints2({4}, {4, 5}, 3),          ints2({3, 4}, {4}, 5),
                 ints2({4}, {4}, 7),             ints2({2, 3, 4}, {4, 5}, 9),     ints2({2, 3, 4}, {4}, 11),
                 ints2({4}, {2, 4, 5}, 13),      ints2({3, 4}, {2, 4, 5}, 15),    ints2({2, 3, 4}, {2, 4, 5}, 17),
                 ints2({2, 1, 3, 4}, {5, 4, 2}, 19), ints2({1, 3, 4}, {2, 4, 5}, 21), ints2({3, 0}, {0, 2}, 23)};
    e.dtypes = kLinalgTypes;
    e.errors = {err({2, 3}, {4, 5}, K::Shape, "contracting dims differ"),
                err({3}, {4}, K::Shape, "vector lengths differ"),
                err({2, 2, 3}, {3, 3, 4}, K::Shape, "batch dims do not broadcast"),
                err({}, {3}, K::Value, "scalar operand")};
    t.push_back(std::move(e));
  }
  {
    OpInfo e;
    e.name = "dot";
    e.op = [](const std::vector<fx::Array>& x) { return fx::dot(x[0], x[1]); };
    e.reference = dot_ref;
    e.samples = {ints2({5}, {5}, 31),         ints2({3, 4}, {4, 2}, 33),    ints2({2, 3, 4}, {4}, 35),
                 ints2({2, 3, 4}, {5, 4, 2}, 37), ints2({4}, {3, 4, 2}, 39), ints2({}, {2, 3}, 41)};
    e.dtypes = kLinalgTypes;
    e.errors = {err({2, 3}, {4, 5}, K::Shape, "contracting dims differ"), err({3}, {2}, K::Shape, "lengths differ")};
    t.push_back(std::move(e));
  }
  {
    OpInfo e;
    e.name = "inner";
    e.op = [](const std::vector<fx::Array>& x) { return fx::inner(x[0], x[1]); };
    e.reference = inner_ref;
    e.samples = {ints2({5}, {5}, 51), ints2({2, 3}, {4, 3}, 53), ints2({2, 3, 4}, {4}, 55)};
    e.dtypes = kLinalgTypes;
    e.errors = {err({2, 3}, {3, 2}, K::Shape, "last dims differ")};
    t.push_back(std::move(e));
  }
  {
    OpInfo e;
    e.name = "outer";
    e.op = [](const std::vector<fx::Array>& x) { return fx::outer(x[0], x[1]); };
    e.reference = [](const std::vector<HostArray>& xs, fx::DType) {
      std::vector<HostArray> v = xs;
      for (HostArray& h : v) h.shape = fx::Shape{numel(h.shape)};
      return einsum_ref("i,j", "ij", v);
    };
    e.samples = {ints2({3}, {4}, 61), ints2({}, {2}, 63)};
    e.dtypes = kLinalgTypes;
    e.errors = {err({2, 2}, {3}, K::Shape, "matrix operand")};
    t.push_back(std::move(e));
  }
  {
    OpInfo e;
    e.name = "vdot";
    e.op = [](const std::vector<fx::Array>& x) { return fx::vdot(x[0], x[1]); };
    e.reference = [](const std::vector<HostArray>& xs, fx::DType) {
      std::string l = letters('a', xs[0].shape.rank());
      return einsum_ref(l + "," + l, "", xs);
    };
    e.samples = {ints2({6}, {6}, 71), ints2({2, 3}, {2, 3}, 73)};
    e.dtypes = kLinalgTypes;
    e.errors = {err({2, 3}, {3, 2}, K::Shape, "shapes differ")};
    t.push_back(std::move(e));
  }
  {
    OpInfo e;
    e.name = "tensordot";
    e.op = [](const std::vector<fx::Array>& x) {
      if (x[0].ndim() == 4) return fx::tensordot(x[0], x[1], {1, -1}, {2, 0});
      return fx::tensordot(x[0], x[1], 2);
    };
    e.reference = [](const std::vector<HostArray>& xs, fx::DType) {
      const int ra = xs[0].shape.rank();
      if (ra == 4) return tensordot_ref(xs, {1, 3}, {2, 0});
      return tensordot_ref(xs, {ra - 2, ra - 1}, {0, 1});
    };
    e.samples = {ints2({2, 3, 4}, {3, 4, 5}, 81), ints2({3, 4}, {3, 4}, 83), ints2({2, 3, 2, 5}, {5, 4, 3}, 85)};
    e.dtypes = kLinalgTypes;
    e.errors = {err({2, 3, 4}, {4, 3, 5}, K::Shape, "axis sizes differ"),
                err({2}, {2, 3}, K::Value, "more axes than rank")};
    t.push_back(std::move(e));
  }
  {
    OpInfo e = einsum_entry("einsum", "ij,jk->ik", "ij,jk", "ik", {ints2({3, 4}, {4, 5}, 91)});
    e.errors = {err({3, 4}, {5, 6}, K::Shape, "label j has two sizes"),
                ErrorSample{{small_ints({3, 4}, 1)}, K::Value, "one operand for two terms"},
                err({3, 4, 5}, {4, 5}, K::Value, "rank differs from the term")};
    t.push_back(std::move(e));
  }
  t.push_back(einsum_entry("einsum bij,bjk->bik", "bij,bjk->bik", "bij,bjk", "bik", {ints2({2, 3, 4}, {2, 4, 5}, 93)}));
  t.push_back(einsum_entry("einsum ij,kj (implicit)", "ij,kj", "ij,kj", "ik", {ints2({3, 4}, {5, 4}, 95)}));
  t.push_back(einsum_entry("einsum ij,jk->ki", "ij,jk->ki", "ij,jk", "ki", {ints2({3, 4}, {4, 5}, 97)}));
  t.push_back(einsum_entry("einsum i,i->", "i,i->", "i,i", "", {ints2({6}, {6}, 99)}));
  t.push_back(einsum_entry("einsum ij->j", "ij->j", "ij", "j", {sample({small_ints({3, 4}, 101)}, "a[3,4]")}));
  t.push_back(einsum_entry("einsum ba (implicit transpose)", "ba", "ba", "ab", {sample({small_ints({3, 4}, 103)}, "a[3,4]")}));
  t.push_back(einsum_entry("einsum ij,jk,kl->il", "ij,jk,kl->il", "ij,jk,kl", "il",
                           {sample({small_ints({2, 3}, 105), small_ints({3, 4}, 106), small_ints({4, 2}, 107)},
                                   "chain of three")}));
  t.push_back(einsum_entry("einsum bhqd,bhkd->bhqk", "bhqd,bhkd->bhqk", "bhqd,bhkd", "bhqk",
                           {ints2({2, 2, 3, 4}, {2, 2, 5, 4}, 109)}));
  t.push_back(einsum_entry("einsum ...ij,...jk->...ik", "...ij,...jk->...ik", "zij,zjk", "zik",
                           {ints2({2, 3, 4}, {2, 4, 5}, 111)}));
  t.push_back(einsum_entry("einsum ...ij,jk (implicit, one ellipsis)", "...ij,jk", "zyij,jk", "zyik",
                           {ints2({2, 2, 3, 4}, {4, 5}, 117)}));
  t.push_back(einsum_entry("einsum i,j,k (outer of three)", "i,j,k", "i,j,k", "ijk",
                           {sample({small_ints({2}, 113), small_ints({3}, 114), small_ints({2}, 115)}, "three vectors")}));
}

}  // namespace optable

// ---- focused tests (the generic driver in test_op_table.cpp runs the entries above as well) -----
namespace {
namespace fx = fluxion;
using optable::HostArray;

bool has_kernel(fx::Prim p) { return fx::rules(p).shape && fx::rules(p).kernel; }

// Primitives other than dot_general that an einsum entry emits (transpose, reduce_sum), found by
// tracing it abstractly is impossible before their shape rules exist, so the name says it.
bool entry_runs_now(const optable::OpInfo& e) {
  const bool needs_transpose = e.name.find("->ki") != std::string::npos || e.name.find("ba") != std::string::npos;
  const bool needs_sum = e.name.find("ij->j") != std::string::npos;
  return (!needs_transpose || has_kernel(fx::Prim::transpose)) && (!needs_sum || has_kernel(fx::Prim::reduce_sum));
}

fx::Array dot_general(const fx::Array& a, const fx::Array& b, fx::IntList lc, fx::IntList rc, fx::IntList lb,
                      fx::IntList rb, std::optional<fx::DType> preferred = {},
                      fx::SourceLoc loc = std::source_location::current()) {
  fx::Params p{{"lhs_contracting", lc}, {"rhs_contracting", rc}, {"lhs_batch", lb}, {"rhs_batch", rb}};
  if (preferred) p.set("preferred_element_type", *preferred);
  return fx::bind1(fx::Prim::dot_general, {a, b}, p, loc);
}

// dot_general by its definition: for every output index (batch, lhs free, rhs free) the sum over
// every contracting index of lhs * rhs.
HostArray dot_general_ref(const HostArray& a, const HostArray& b, const fx::IntList& lc, const fx::IntList& rc,
                          const fx::IntList& lb, const fx::IntList& rb) {
  auto free_dims = [](int rank, const fx::IntList& x, const fx::IntList& y) {
    fx::IntList f;
    for (int64_t d = 0; d < rank; ++d)
      if (std::find(x.begin(), x.end(), d) == x.end() && std::find(y.begin(), y.end(), d) == y.end()) f.push_back(d);
    return f;
  };
  fx::IntList af = free_dims(a.shape.rank(), lc, lb), bf = free_dims(b.shape.rank(), rc, rb);
  fx::Shape out_shape, contract_shape;
  for (int64_t d : lb) out_shape.push_back(a.shape[size_t(d)]);
  for (int64_t d : af) out_shape.push_back(a.shape[size_t(d)]);
  for (int64_t d : bf) out_shape.push_back(b.shape[size_t(d)]);
  for (int64_t d : lc) contract_shape.push_back(a.shape[size_t(d)]);
  HostArray out{out_shape, std::vector<double>(size_t(out_shape.numel()), 0.0), fx::float64};
  for (int64_t o = 0; o < out_shape.numel(); ++o) {
    std::vector<int64_t> oi(out_shape.size());
    for (int64_t r = o, d = out_shape.rank() - 1; d >= 0; --d) {
      oi[size_t(d)] = r % out_shape[size_t(d)];
      r /= out_shape[size_t(d)];
    }
    std::vector<int64_t> ai(a.shape.size()), bi(b.shape.size());
    size_t at = 0;
    for (size_t i = 0; i < lb.size(); ++i, ++at) ai[size_t(lb[i])] = bi[size_t(rb[i])] = oi[at];
    for (int64_t d : af) ai[size_t(d)] = oi[at++];
    for (int64_t d : bf) bi[size_t(d)] = oi[at++];
    double s = 0;
    for (int64_t c = 0; c < contract_shape.numel(); ++c) {
      for (int64_t r = c, d = contract_shape.rank() - 1; d >= 0; --d) {
        ai[size_t(lc[size_t(d)])] = bi[size_t(rc[size_t(d)])] = r % contract_shape[size_t(d)];
        r /= contract_shape[size_t(d)];
      }
      int64_t fa = 0, fb = 0;
      for (size_t d = 0; d < ai.size(); ++d) fa = fa * a.shape[d] + ai[d];
      for (size_t d = 0; d < bi.size(); ++d) fb = fb * b.shape[d] + bi[d];
      s += a.data[size_t(fa)] * b.data[size_t(fb)];
    }
    out.data[size_t(o)] = s;
  }
  return out;
}

// The same element values rounded to `dtype` (what the kernel actually sees).
HostArray rounded(const HostArray& h, fx::DType dtype) { return optable::host_array(optable::device_array(h, dtype)); }

struct DotCase {
  fx::Shape a, b;
  fx::IntList lc, rc, lb, rb;
  const char* label;
};

// Layouts that take every path of the kernel: operands read in place as (M,K)/(K,M) x (K,N)/(N,K),
// operands that must be permuted, batch dims in odd places, several contracting dims, no
// contracting dims (an outer product), vectors and scalars.
const std::vector<DotCase> kDotCases = {
    {{3, 4}, {4, 5}, {1}, {0}, {}, {}, "matmul"},
    {{4, 3}, {4, 5}, {0}, {0}, {}, {}, "lhs transposed"},
    {{3, 4}, {5, 4}, {1}, {1}, {}, {}, "rhs transposed"},
    {{4, 3}, {5, 4}, {0}, {1}, {}, {}, "both transposed"},
    {{2, 3, 4}, {2, 4, 5}, {2}, {1}, {0}, {0}, "batched matmul"},
    {{3, 2, 4}, {4, 5, 2}, {2}, {0}, {1}, {2}, "batch dims in the middle and last"},
    {{2, 3, 4, 5}, {5, 6, 2, 3}, {1, 3}, {3, 0}, {0}, {2}, "two contracting dims, permuted"},
    {{3, 4}, {2, 5}, {}, {}, {}, {}, "outer product"},
    {{6}, {6}, {0}, {0}, {}, {}, "inner product"},
    {{}, {2, 3}, {}, {}, {}, {}, "scalar times matrix"},
    {{2, 3, 4}, {3, 2, 4}, {1, 2}, {0, 2}, {0}, {1}, "batch only after contracting"},
    {{3, 0}, {0, 4}, {1}, {0}, {}, {}, "empty contraction gives zeros"},
    {{0, 4}, {4, 2}, {1}, {0}, {}, {}, "empty output"},
};

}  // namespace

TEST_CASE("dot_general matches its definition for every layout and dtype") {
  for (const DotCase& c : kDotCases) {
    for (fx::DType dt : optable::kNumericTypes) {
      INFO(std::string(c.label) << " in " << fx::dtype_name(dt));
      // (Unsigned dtypes saturate the negative values to 0 on conversion, so read the inputs back.)
      HostArray a = rounded(optable::small_ints(c.a, 7), dt), b = rounded(optable::small_ints(c.b, 8), dt);
      fx::Array out = dot_general(optable::device_array(a, dt), optable::device_array(b, dt), c.lc, c.rc, c.lb, c.rb);
      CHECK(out.dtype() == dt);
      HostArray want = dot_general_ref(a, b, c.lc, c.rc, c.lb, c.rb);
      optable::check_close(optable::host_array(out), want, 0, c.label);
    }
  }
}

TEST_CASE("dot_general on real values: the Eigen path and the 16-bit floats") {
  for (const DotCase& c : kDotCases) {
    for (fx::DType dt : {fx::float32, fx::float64, fx::float16, fx::bfloat16}) {
      INFO(std::string(c.label) << " in " << fx::dtype_name(dt));
      HostArray a = rounded(optable::reals(c.a, 3), dt), b = rounded(optable::reals(c.b, 4), dt);
      fx::Array out = dot_general(optable::device_array(a, dt), optable::device_array(b, dt), c.lc, c.rc, c.lb, c.rb);
      optable::check_close(optable::host_array(out), dot_general_ref(a, b, c.lc, c.rc, c.lb, c.rb),
                           optable::tolerance(dt) * 4, c.label);
    }
  }
  // Big enough for Eigen's blocked kernels, in each operand layout.
  for (const DotCase& c : std::vector<DotCase>{{{67, 130}, {130, 45}, {1}, {0}, {}, {}, "large"},
                                               {{130, 67}, {45, 130}, {0}, {1}, {}, {}, "large transposed"},
                                               {{3, 40, 70}, {70, 3, 33}, {2}, {0}, {0}, {1}, "large permuted"}}) {
    for (fx::DType dt : {fx::float32, fx::float64}) {
      HostArray a = optable::reals(c.a, 5), b = optable::reals(c.b, 6);
      a = rounded(a, dt), b = rounded(b, dt);
      fx::Array out = dot_general(optable::device_array(a, dt), optable::device_array(b, dt), c.lc, c.rc, c.lb, c.rb);
      optable::check_close(optable::host_array(out), dot_general_ref(a, b, c.lc, c.rc, c.lb, c.rb),
                           dt == fx::float32 ? 1e-5 : 1e-13, c.label);
    }
  }
}

TEST_CASE("dot_general integer products wrap like the integer type; preferred_element_type widens") {
  HostArray a = HostArray{fx::Shape{2, 2}, {100, 100, -128, 127}}, b = HostArray{fx::Shape{2, 1}, {100, 7}};
  fx::Array ai = optable::device_array(a, fx::int8), bi = optable::device_array(b, fx::int8);
  fx::Array wrapped = dot_general(ai, bi, {1}, {0}, {}, {});
  CHECK(wrapped.dtype() == fx::int8);
  CHECK(wrapped.to_vector<int>() == std::vector<int>{int(int8_t(10700)), int(int8_t(-12800 + 889))});
  fx::Array wide = dot_general(ai, bi, {1}, {0}, {}, {}, fx::int32);
  CHECK(wide.dtype() == fx::int32);
  CHECK(wide.to_vector<int>() == std::vector<int>{10700, -11911});
  // float16 operands accumulate in float32: 2048 + 1 + ... would stall in float16 arithmetic.
  HostArray ones = HostArray{fx::Shape{1, 9}, {2048, 1, 1, 1, 1, 1, 1, 1, 1}};
  HostArray col = HostArray{fx::Shape{9, 1}, std::vector<double>(9, 1.0)};
  fx::Array h = dot_general(optable::device_array(ones, fx::float16), optable::device_array(col, fx::float16), {1},
                            {0}, {}, {}, fx::float32);
  CHECK(h.dtype() == fx::float32);
  CHECK(h.item<float>() == 2056.f);
}

TEST_CASE("dot_general under make_ir: one eqn with its params, and eval agrees with eager") {
  const DotCase& c = kDotCases[6];
  HostArray a = optable::small_ints(c.a, 11), b = optable::small_ints(c.b, 12);
  fx::Array x = optable::device_array(a, fx::float32), y = optable::device_array(b, fx::float32);
  auto f = [&](const fx::Array& p, const fx::Array& q) { return dot_general(p, q, c.lc, c.rc, c.lb, c.rb); };
  fx::Program prog = fx::make_ir(f)(x, y);
  REQUIRE(prog.eqns.size() == 1);
  CHECK(prog.eqns[0].prim == fx::Prim::dot_general);
  std::ostringstream os;
  os << prog;
  INFO(os.str());
  CHECK(os.str().find("dot_general[") != std::string::npos);
  CHECK(os.str().find("lhs_contracting=(1, 3)") != std::string::npos);
  CHECK(os.str().find("f32[2,4,6]") != std::string::npos);
  std::vector<fx::Array> r = fx::eval(prog, {x, y});
  optable::check_close(optable::host_array(r[0]), dot_general_ref(a, b, c.lc, c.rc, c.lb, c.rb), 0, "eval");
}

TEST_CASE("dot_general rejects malformed dimension numbers with typed errors") {
  fx::Array a = fx::zeros({2, 3, 4}), b = fx::zeros({2, 4, 5});
  auto msg_of = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const fx::Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  struct Bad {
    fx::IntList lc, rc, lb, rb;
    const char* expect;
  };
  for (const Bad& bad : std::vector<Bad>{{{2}, {1, 2}, {0}, {0}, "different lengths"},
                                         {{2}, {1}, {0}, {}, "different lengths"},
                                         {{3}, {1}, {0}, {0}, "out of range"},
                                         {{-1}, {1}, {0}, {0}, "out of range"},
                                         {{0}, {0}, {0}, {0}, "more than once"},
                                         {{1}, {1}, {0}, {0}, "contracting dimensions differ"},
                                         {{2}, {1}, {1}, {0}, "batch dimensions differ"}}) {
    std::string m = msg_of([&] { dot_general(a, b, bad.lc, bad.rc, bad.lb, bad.rb); });
    INFO(m);
    CHECK(m.rfind("ShapeError: dot_general(f32[2,3,4], f32[2,4,5]) at op_table_linalg.cpp:", 0) == 0);
    CHECK(m.find(bad.expect) != std::string::npos);
  }
  CHECK_THROWS_AS(dot_general(a, fx::astype(b, fx::float64), {2}, {1}, {0}, {0}), fx::TypeError);
  CHECK_THROWS_AS(dot_general(a, b, {2}, {1}, {0}, {0}, fx::int32), fx::TypeError);
  // Validation happens when tracing, too.
  auto traced = [&](const fx::Array& p) { return dot_general(p, b, {1}, {1}, {0}, {0}); };
  CHECK_THROWS_AS(fx::make_ir(traced)(a), fx::ShapeError);
}

TEST_CASE("linalg op-table entries agree with their loop references") {
  std::vector<optable::OpInfo> table;
  optable::add_linalg_ops(table);
  for (const optable::OpInfo& e : table) {
    if (!entry_runs_now(e)) {
      MESSAGE("skipping " << e.name << " until transpose/reduce_sum kernels are registered");
      continue;
    }
    for (fx::DType dt : e.dtypes)
      for (const optable::Sample& s : e.samples) {
        INFO(e.name << " " << s.label << " in " << fx::dtype_name(dt));
        std::vector<fx::Array> args;
        for (const HostArray& h : s.args) args.push_back(optable::device_array(h, dt));
        fx::Array out = e.op(args);
        CHECK(out.dtype() == dt);
        optable::check_close(optable::host_array(out), e.reference(s.args, dt), optable::tolerance(dt), s.label);
      }
    for (const optable::ErrorSample& s : e.errors) {
      INFO(e.name << ": " << s.label);
      std::vector<fx::Array> args;
      for (const HostArray& h : s.args) args.push_back(optable::device_array(h, fx::float32));
      std::string what;
      try {
        e.op(args);
      } catch (const fx::Error& err) {
        CHECK(err.kind() == s.kind);
        what = err.what();
      }
      INFO(what);
      CHECK(what.find(e.name + "(") != std::string::npos);
      CHECK(what.find("op_table_linalg.cpp:") != std::string::npos);
    }
  }
}

TEST_CASE("matmul error text names the op, the operands and the line; programs stay minimal") {
  fx::Array a = fx::zeros({2, 3}), b = fx::zeros({4, 5});
  try {
    fx::matmul(a, b);
    FAIL("expected a ShapeError");
  } catch (const fx::ShapeError& e) {
    CHECK(std::string(e.what()).rfind("ShapeError: matmul(f32[2,3], f32[4,5]) at op_table_linalg.cpp:", 0) == 0);
    CHECK(std::string(e.what()).find("contracting dimensions differ (3 vs 4)") != std::string::npos);
  }
  // x @ W with a batched x is one dot_general, W is not broadcast.
  auto dense = [](const fx::Array& x, const fx::Array& w) { return fx::matmul(x, w); };
  fx::Program p = fx::make_ir(dense)(fx::zeros({8, 3, 4}), fx::zeros({4, 5}));
  CHECK(p.eqns.size() == 1);
  CHECK(p.out_avals()[0].shape == fx::Shape{8, 3, 5});
  // Mixed dtypes promote first (one convert), and the product has the promoted dtype.
  fx::Program q = fx::make_ir(dense)(fx::zeros({3, 4}, fx::int32), fx::zeros({4, 5}, fx::float16));
  CHECK(q.out_avals()[0].dtype == fx::float16);
  CHECK(q.eqns.size() == 2);
  // einsum's batched contraction is a single dot_general already in output order.
  auto attn = [](const fx::Array& x, const fx::Array& y) { return fx::einsum("bhqd,bhkd->bhqk", x, y); };
  fx::Program r = fx::make_ir(attn)(fx::zeros({2, 3, 4, 5}), fx::zeros({2, 3, 6, 5}));
  CHECK(r.eqns.size() == 1);
  CHECK(r.out_avals()[0].shape == fx::Shape{2, 3, 4, 6});
  // A weak scalar defers to the array's dtype.
  CHECK(fx::dot(fx::zeros({3}, fx::float16), 2.0).dtype() == fx::float16);
}

TEST_CASE("einsum rejects malformed subscripts with ValueError naming the subscripts") {
  fx::Array m = fx::zeros({3, 3});
  auto msg = [&](auto call) -> std::string {
    try {
      call();
    } catch (const fx::ValueError& e) {
      return e.what();
    }
    return "(no ValueError)";
  };
  CHECK(msg([&] { fx::einsum("ii->i", m); }).find("repeats within operand 0") != std::string::npos);
  CHECK(msg([&] { fx::einsum("ij->k", m); }).find("'k' appears in no operand") != std::string::npos);
  CHECK(msg([&] { fx::einsum("ij->ii", m); }).find("repeats") != std::string::npos);
  CHECK(msg([&] { fx::einsum("i1", m); }).find("unexpected character '1'") != std::string::npos);
  CHECK(msg([&] { fx::einsum("ij,jk", m); }).find("2 operand terms for 1 operands") != std::string::npos);
  CHECK(msg([&] { fx::einsum("ij->i->j", m); }).find("unexpected character") != std::string::npos);
  CHECK(msg([&] { fx::einsum("ij", std::vector<fx::Array>{}); }).find("at least one operand") != std::string::npos);
  CHECK(msg([&] { fx::einsum("ij", m); }) == "(no ValueError)");
  CHECK(msg([&] { fx::einsum("..i..", m); }).find("ellipsis") != std::string::npos);
}
