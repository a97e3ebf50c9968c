// Op-table entries for the products (matmul, dot, inner, outer, vdot, tensordot, einsum), with
// references written as plain loops over every index. Their samples are small integers, so every
// product is exact in every dtype tested. Focused tests: tests/test_dot_general.cpp (the primitive)
// and tests/test_linalg.cpp (the API's errors and programs).
#include <algorithm>
#include <cmath>
#include <map>

#include "op_table.h"

namespace optable {
namespace {

int64_t numel(const fx::Shape& s) { return s.numel(); }

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


void add_product_ops(std::vector<OpInfo>& t) {
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
}

void add_einsum_ops(std::vector<OpInfo>& t) {
  using K = fx::ErrorKind;
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

// preferred_element_type: 16-bit operands, float32 products and result (jax.lax.dot_general's). Its
// result dtype is not the operands', so it is added after add_linalg_ops' common settings.
OpInfo preferred_type_entry() {
  using K = fx::ErrorKind;
  OpInfo e;
  e.name = "matmul (preferred_element_type float32)";
  e.error_name = "matmul(";
  e.op = [](const std::vector<fx::Array>& x) { return fx::matmul(x[0], x[1], fx::float32); };
  e.reference = [](const std::vector<HostArray>& xs, fx::DType) {
    HostArray r = matmul_ref(xs, fx::float32);
    r.dtype = fx::float32;
    return r;
  };
  e.reference_dtype = true;
  e.samples = {ints2({3, 4}, {4, 5}, 61), ints2({2, 3, 4}, {2, 4, 5}, 63), ints2({4}, {4, 5}, 65)};
  e.dtypes = {fx::bfloat16, fx::float16, fx::float32};
  e.errors = {err({2, 3}, {4, 5}, K::Shape, "contracting dims differ")};
  set_tolerance(e, Check::eager, kFloatTypes, Tolerance{0, 0});
  return e;
}

// int8 operands, int32 products and result (quantized inference's product: jax.lax.dot_general
// with preferred_element_type int32), operands over the whole int8 range. The last two samples
// have at least 32^3 multiply-adds per product, so jit takes the int8 GEMM (kernels/gemm_int8.h;
// k = 67 and 45: not multiples of 4). Integers: no derivative, so the AD drivers pass it by.
OpInfo int8_product_entry() {
  using K = fx::ErrorKind;
  OpInfo e;
  e.name = "matmul (int8, preferred_element_type int32)";
  e.error_name = "matmul(";
  e.op = [](const std::vector<fx::Array>& x) { return fx::matmul(x[0], x[1], fx::int32); };
  e.reference = [](const std::vector<HostArray>& xs, fx::DType) {
    HostArray r = matmul_ref(xs, fx::int32);
    r.dtype = fx::int32;
    return r;
  };
  e.reference_dtype = true;
  auto bytes2 = [](fx::Shape a, fx::Shape b, uint64_t seed) {
    return sample({integers(a, -128, 128, seed), integers(b, -128, 128, seed + 1)}, "bytes");
  };
  e.samples = {bytes2({3, 4}, {4, 5}, 71), bytes2({4}, {4, 3}, 73), bytes2({2, 3, 67}, {2, 67, 5}, 75),
               bytes2({33, 67}, {67, 31}, 77), bytes2({2, 20, 45}, {2, 45, 40}, 79)};
  e.dtypes = {fx::int8};
  e.differentiable = false;
  e.errors = {err({2, 3}, {4, 5}, K::Shape, "contracting dims differ")};
  return e;
}

}  // namespace

void add_linalg_ops(std::vector<OpInfo>& t) {
  const size_t first_entry = t.size();
  add_product_ops(t);
  add_einsum_ops(t);
  // Products of small integers are exact in every dtype, and keep the operands' dtype; errors name
  // the op.
  for (size_t i = first_entry; i < t.size(); ++i) {
    OpInfo& e = t[i];
    auto ref = e.reference;
    e.reference = [ref](const std::vector<HostArray>& xs, fx::DType out) {
      HostArray r = ref(xs, out);
      r.dtype = xs[0].dtype;
      return r;
    };
    e.reference_dtype = true;
    set_tolerance(e, Check::eager, kFloatTypes, Tolerance{0, 0});
    e.error_name = e.name + "(";
  }
  t.push_back(preferred_type_entry());
  t.push_back(int8_product_entry());
}

}  // namespace optable
