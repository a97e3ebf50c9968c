// dot_general[lhs_contracting rhs_contracting lhs_batch rhs_batch preferred_element_type?] (lax):
// a generalized tensor contraction. Output dims are the batch dims (in lhs_batch order), then the
// lhs free dims, then the rhs free dims, each in operand order. The kernel brings both operands into
// (batch, M, K) x (batch, K, N) form -- a no-op for the common layouts -- and multiplies with Eigen
// for float32/float64 (the path the benchmarks measure), or with a plain loop for other dtypes.
#include <Eigen/Core>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "ir/error.h"
#include "lax/lax.h"
#include "prims/registry.h"

namespace fluxion {
namespace {

std::string list_str(const IntList& xs) {
  std::string s = "(";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? "," : "") + std::to_string(xs[i]);
  return s + ")";
}

// The dimension numbers of one operand: which dims are batch, contracting and free (in order).
struct OperandDims {
  IntList batch, contracting, free;
};

OperandDims operand_dims(const char* side, const AbstractArray& x, const IntList& batch, const IntList& contracting) {
  std::vector<char> used(size_t(x.ndim()), 0);
  auto claim = [&](const IntList& dims, const char* what) {
    for (int64_t d : dims) {
      if (d < 0 || d >= x.ndim())
        rule_error(ErrorKind::Shape, std::string(side) + "_" + what + " dimension " + std::to_string(d) +
                                         " is out of range for an operand of rank " + std::to_string(x.ndim()));
      if (used[size_t(d)])
        rule_error(ErrorKind::Shape, std::string(side) + " dimension " + std::to_string(d) +
                                         " appears more than once in " + side + "_batch " + list_str(batch) +
                                         " and " + side + "_contracting " + list_str(contracting));
      used[size_t(d)] = 1;
    }
  };
  claim(batch, "batch");
  claim(contracting, "contracting");
  OperandDims r{batch, contracting, {}};
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (!used[size_t(d)]) r.free.push_back(d);
  return r;
}

void check_sizes_agree(const AbstractArray& lhs, const AbstractArray& rhs, const IntList& l, const IntList& r,
                       const char* what) {
  if (l.size() != r.size())
    rule_error(ErrorKind::Shape, std::string("lhs_") + what + " " + list_str(l) + " and rhs_" + what + " " +
                                     list_str(r) + " have different lengths");
  for (size_t i = 0; i < l.size(); ++i) {
    // Ranges are checked by operand_dims, which runs after this only for valid lengths.
    if (l[i] < 0 || l[i] >= lhs.ndim() || r[i] < 0 || r[i] >= rhs.ndim()) continue;
    int64_t a = lhs.shape[size_t(l[i])], b = rhs.shape[size_t(r[i])];
    if (a != b)
      rule_error(ErrorKind::Shape, std::string(what) + " dimensions differ: lhs dimension " + std::to_string(l[i]) +
                                       " has size " + std::to_string(a) + ", rhs dimension " + std::to_string(r[i]) +
                                       " has size " + std::to_string(b));
  }
}

struct DotDims {
  OperandDims lhs, rhs;
};

DotDims dot_dims(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 2) rule_error(ErrorKind::Type, "expects 2 operands, got " + std::to_string(in.size()));
  const AbstractArray &lhs = in[0], &rhs = in[1];
  const IntList& lc = params.get_ints("lhs_contracting");
  const IntList& rc = params.get_ints("rhs_contracting");
  const IntList& lb = params.get_ints("lhs_batch");
  const IntList& rb = params.get_ints("rhs_batch");
  DotDims d{operand_dims("lhs", lhs, lb, lc), operand_dims("rhs", rhs, rb, rc)};
  check_sizes_agree(lhs, rhs, lb, rb, "batch");
  check_sizes_agree(lhs, rhs, lc, rc, "contracting");
  return d;
}

std::vector<AbstractArray> dot_general_shape(std::span<const AbstractArray> in, const Params& params) {
  DotDims d = dot_dims(in, params);
  const AbstractArray &lhs = in[0], &rhs = in[1];
  if (lhs.dtype != rhs.dtype)
    rule_error(ErrorKind::Type, "operands must have the same dtype, got " + std::string(dtype_name(lhs.dtype)) +
                                    " and " + std::string(dtype_name(rhs.dtype)));
  DType out = lhs.dtype;
  bool weak = lhs.weak_type && rhs.weak_type;
  if (params.has("preferred_element_type")) {
    out = params.get_dtype("preferred_element_type");
    weak = false;
    if (is_float(lhs.dtype) && !is_float(out))
      rule_error(ErrorKind::Type, "preferred_element_type " + std::string(dtype_name(out)) +
                                      " is not a floating dtype for " + std::string(dtype_name(lhs.dtype)) +
                                      " operands");
    if (is_bool(out) && !is_bool(lhs.dtype))
      rule_error(ErrorKind::Type, "preferred_element_type bool is only valid for bool operands");
  }
  Shape shape;
  for (int64_t b : d.lhs.batch) shape.push_back(lhs.shape[size_t(b)]);
  for (int64_t f : d.lhs.free) shape.push_back(lhs.shape[size_t(f)]);
  for (int64_t f : d.rhs.free) shape.push_back(rhs.shape[size_t(f)]);
  return {AbstractArray{shape, out, weak}};
}

// ---- kernel -------------------------------------------------------------------------------------

int64_t product(const Shape& s, const IntList& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= s[size_t(d)];
  return n;
}

IntList concat(std::initializer_list<const IntList*> parts) {
  IntList r;
  for (const IntList* p : parts) r.insert(r.end(), p->begin(), p->end());
  return r;
}

bool is_identity(const IntList& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i)) return false;
  return true;
}

// dst = src with its dims permuted: dst dim i is src dim perm[i] (row-major, elements of `isz` bytes).
void permute_copy(const char* src, const Shape& shape, const IntList& perm, size_t isz, char* dst) {
  const int rank = int(perm.size());
  const int64_t n = shape.numel();
  if (n == 0) return;
  std::vector<int64_t> src_strides = strides_of(shape);
  std::vector<int64_t> st(static_cast<size_t>(rank)), len(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    st[size_t(i)] = src_strides[size_t(perm[size_t(i)])];
    len[size_t(i)] = shape[size_t(perm[size_t(i)])];
  }
  std::vector<int64_t> idx(size_t(rank), 0);
  int64_t off = 0;
  for (int64_t o = 0; o < n; ++o) {
    std::memcpy(dst + size_t(o) * isz, src + size_t(off) * isz, isz);
    for (int d = rank - 1; d >= 0; --d) {
      off += st[size_t(d)];
      if (++idx[size_t(d)] < len[size_t(d)]) break;
      off -= st[size_t(d)] * len[size_t(d)];
      idx[size_t(d)] = 0;
    }
  }
}

// One operand as a stack of row-major matrices: `data` holds `batch` matrices of rows x cols, and
// `transposed` says the matrix the product needs is the transpose of the stored one.
struct MatrixStack {
  const char* data;
  bool transposed;
  std::vector<char> storage;  // owns `data` when the operand had to be permuted
};

// Arranges an operand as (batch, outer, inner) where `outer` are its free dims and `inner` its
// contracting dims -- or as (batch, inner, outer), which the product reads transposed -- copying
// only when neither layout matches the operand as stored. `want_inner_last` picks the copy's
// layout: (M, K) for lhs, (K, N) for rhs.
MatrixStack as_matrix_stack(const View& v, const OperandDims& d, bool want_inner_last) {
  IntList free_last = concat({&d.batch, &d.contracting, &d.free});
  IntList inner_last = concat({&d.batch, &d.free, &d.contracting});
  const char* data = static_cast<const char*>(v.data);
  if (is_identity(inner_last)) return {data, !want_inner_last, {}};
  if (is_identity(free_last)) return {data, want_inner_last, {}};
  const IntList& perm = want_inner_last ? inner_last : free_last;
  MatrixStack m{nullptr, false, std::vector<char>(size_t(v.aval->nbytes()))};
  permute_copy(data, v.shape(), perm, itemsize(v.dtype()), m.storage.data());
  m.data = m.storage.data();
  return m;
}

struct GemmShape {
  int64_t batch, m, n, k;
};

// Fast path: Eigen's blocked matrix product, one per batch entry, reading the operands in place.
template <class T>
void eigen_gemm(const MatrixStack& a, const MatrixStack& b, T* out, GemmShape g) {
  using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ConstMap = Eigen::Map<const RowMajor>;
  const T* pa = reinterpret_cast<const T*>(a.data);
  const T* pb = reinterpret_cast<const T*>(b.data);
  for (int64_t i = 0; i < g.batch; ++i) {
    Eigen::Map<RowMajor> c(out + i * g.m * g.n, g.m, g.n);
    const T* ai = pa + i * g.m * g.k;
    const T* bi = pb + i * g.k * g.n;
    if (g.k == 0) {
      c.setZero();
    } else if (!a.transposed && !b.transposed) {
      c.noalias() = ConstMap(ai, g.m, g.k) * ConstMap(bi, g.k, g.n);
    } else if (!a.transposed && b.transposed) {
      c.noalias() = ConstMap(ai, g.m, g.k) * ConstMap(bi, g.n, g.k).transpose();
    } else if (a.transposed && !b.transposed) {
      c.noalias() = ConstMap(ai, g.k, g.m).transpose() * ConstMap(bi, g.k, g.n);
    } else {
      c.noalias() = ConstMap(ai, g.k, g.m).transpose() * ConstMap(bi, g.n, g.k).transpose();
    }
  }
}

// The accumulator of the plain path: float for the floats (double when either side is float64),
// uint64 for integers: unsigned arithmetic wraps without undefined behaviour, and the final
// (modular, since C++20) cast gives exactly the sum the operand type would wrap to.
template <class In, class Out>
using accumulator_t =
    std::conditional_t<std::is_same_v<In, double> || std::is_same_v<Out, double>, double,
                       std::conditional_t<std::is_integral_v<compute_t<In>> && std::is_integral_v<compute_t<Out>>,
                                          uint64_t, float>>;

template <class Acc, class T>
Acc to_acc(T v) {
  if constexpr (std::is_same_v<T, bool>) return Acc(v ? 1 : 0);
  else return static_cast<Acc>(static_cast<compute_t<T>>(v));
}

template <class Out, class Acc>
Out from_acc(Acc v) {
  if constexpr (std::is_same_v<Out, bool>) return v != Acc(0);
  else if constexpr (std::is_same_v<Out, float16_t> || std::is_same_v<Out, bfloat16_t>) return Out(float(v));
  else return static_cast<Out>(v);
}

// Element (r, c) of a stored matrix of logical shape rows x cols (stored transposed or not).
template <class T>
T element(const T* p, bool transposed, int64_t rows, int64_t cols, int64_t r, int64_t c) {
  return transposed ? p[c * rows + r] : p[r * cols + c];
}

template <class In, class Out>
void loop_gemm(const MatrixStack& a, const MatrixStack& b, Out* out, GemmShape g) {
  using Acc = accumulator_t<In, Out>;
  const In* pa = reinterpret_cast<const In*>(a.data);
  const In* pb = reinterpret_cast<const In*>(b.data);
  std::vector<Acc> row(size_t(g.n));
  for (int64_t i = 0; i < g.batch; ++i) {
    const In* ai = pa + i * g.m * g.k;
    const In* bi = pb + i * g.k * g.n;
    for (int64_t r = 0; r < g.m; ++r) {
      std::fill(row.begin(), row.end(), Acc(0));
      for (int64_t k = 0; k < g.k; ++k) {
        const Acc x = to_acc<Acc>(element(ai, a.transposed, g.m, g.k, r, k));
        for (int64_t c = 0; c < g.n; ++c) row[size_t(c)] += x * to_acc<Acc>(element(bi, b.transposed, g.k, g.n, k, c));
      }
      Out* o = out + (i * g.m + r) * g.n;
      for (int64_t c = 0; c < g.n; ++c) o[c] = from_acc<Out>(row[size_t(c)]);
    }
  }
}

void dot_general_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  AbstractArray avals[2] = {*in[0].aval, *in[1].aval};
  DotDims d = dot_dims(avals, params);
  const Shape &ls = in[0].shape(), &rs = in[1].shape();
  GemmShape g{product(ls, d.lhs.batch), product(ls, d.lhs.free), product(rs, d.rhs.free),
              product(ls, d.lhs.contracting)};
  if (out[0].size() == 0) return;
  MatrixStack a = as_matrix_stack(in[0], d.lhs, /*want_inner_last=*/true);
  MatrixStack b = as_matrix_stack(in[1], d.rhs, /*want_inner_last=*/false);
  const DType in_dtype = in[0].dtype(), out_dtype = out[0].dtype();
  if (in_dtype == out_dtype && in_dtype == DType::float32) return eigen_gemm(a, b, out[0].as<float>(), g);
  if (in_dtype == out_dtype && in_dtype == DType::float64) return eigen_gemm(a, b, out[0].as<double>(), g);
  // Complex products: Eigen's complex kernels (no conjugation: lax.dot_general's meaning).
  if (in_dtype == out_dtype && in_dtype == DType::complex64) return eigen_gemm(a, b, out[0].as<std::complex<float>>(), g);
  if (in_dtype == out_dtype && in_dtype == DType::complex128)
    return eigen_gemm(a, b, out[0].as<std::complex<double>>(), g);
  dispatch_dtype(in_dtype, [&](auto x) {
    using In = decltype(x);
    dispatch_dtype(out_dtype, [&](auto y) {
      using Out = decltype(y);
      loop_gemm<In, Out>(a, b, out[0].as<Out>(), g);
    });
  });
}

// ---- derivatives --------------------------------------------------------------------------------
// dot_general is bilinear: d(a.b) = ta.b + a.tb, and each side transposes to another dot_general
// (of the cotangent with the other operand) followed by a transpose back into the operand's layout.

IntList kept_dims(int rank, const IntList& contracting, const IntList& batch) {
  IntList out;
  for (int d = 0; d < rank; ++d)
    if (std::find(contracting.begin(), contracting.end(), d) == contracting.end() &&
        std::find(batch.begin(), batch.end(), d) == batch.end())
      out.push_back(d);
  return out;
}
IntList iota_list(int64_t from, size_t n) {
  IntList out(n);
  std::iota(out.begin(), out.end(), from);
  return out;
}
IntList argsort(const IntList& v) {
  IntList idx = iota_list(0, v.size());
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return v[size_t(a)] < v[size_t(b)]; });
  return idx;
}

Array dot(const Array& a, const Array& b, const Params& params, SourceLoc loc) {
  return bind1(Prim::dot_general, {a, b}, params, loc);
}

std::vector<Array> dot_general_jvp(std::span<const Array> x, std::span<const Array> t, std::span<const Array>,
                                   const Params& params, SourceLoc loc) {
  Array da = is_zero(t[0]) ? Array() : dot(t[0], x[1], params, loc);
  Array db = is_zero(t[1]) ? Array() : dot(x[0], t[1], params, loc);
  return {add_tangents(da, db, loc)};
}

// The cotangent of the operand `x` (whose dims are x_contract/x_batch) given the other operand `y`.
// `x_is_lhs` says where x's free dims sit in the output (after the batch dims, before y's free
// dims if x is the lhs).
Array transpose_side(const Array& ct, const AbstractArray& x, const Array& y, const IntList& x_contract,
                     const IntList& x_batch, const IntList& y_contract, const IntList& y_batch, bool x_is_lhs,
                     SourceLoc loc) {
  const IntList x_kept = kept_dims(x.ndim(), x_contract, x_batch);
  const IntList y_kept = kept_dims(y.ndim(), y_contract, y_batch);
  const int64_t nb = int64_t(x_batch.size());
  IntList ans_batch = iota_list(0, x_batch.size()), ans_y;
  if (x_is_lhs)
    ans_y = iota_list(nb + int64_t(x_kept.size()), y_kept.size());
  else
    ans_y = iota_list(nb, y_kept.size());
  // The operands must share a dtype: bring the cotangent to y's (preferred_element_type may differ).
  Array g = lax::convert(ct, y.dtype(), y.weak_type());
  Array r = dot(g, y,
                Params{{"lhs_contracting", ans_y}, {"rhs_contracting", y_kept}, {"lhs_batch", ans_batch},
                       {"rhs_batch", y_batch}},
                loc);
  // r's dims: x_batch..., x_kept..., then x_contract ordered as y_contract sorts.
  IntList order = x_batch;
  order.insert(order.end(), x_kept.begin(), x_kept.end());
  IntList by_y = argsort(y_contract);
  for (int64_t i : by_y) order.push_back(x_contract[size_t(i)]);
  IntList perm = argsort(order);
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  if (!identity) r = bind1(Prim::transpose, {r}, Params{{"permutation", perm}}, loc);
  return lax::convert(r, x.dtype, x.weak_type);
}

std::vector<Array> dot_general_transpose(std::span<const Array> ct, std::span<const LinearArg> a, const Params& params,
                                         SourceLoc loc) {
  const IntList& lc = params.get_ints("lhs_contracting");
  const IntList& rc = params.get_ints("rhs_contracting");
  const IntList& lb = params.get_ints("lhs_batch");
  const IntList& rb = params.get_ints("rhs_batch");
  if (a[0].linear && a[1].linear)
    throw TypeError("TypeError: transpose of dot_general: both operands are linear (the program is not linear)");
  if (a[0].linear) return {transpose_side(ct[0], a[0].aval, a[1].value, lc, lb, rc, rb, true, loc), Array()};
  return {Array(), transpose_side(ct[0], a[1].aval, a[0].value, rc, rb, lc, lb, false, loc)};
}

// ---- batching -----------------------------------------------------------------------------------
// Never a transpose: with both operands batched, their batch dims join lhs_batch/rhs_batch at the
// front (so the output has the batch at 0); with one batched, its batch dim is one more free dim,
// and the output's batch dim is where that free dim lands among the output's dims.
std::vector<BatchedArray> dot_general_batch(std::span<const BatchedArray> a, const Params& params, int64_t,
                                            SourceLoc loc) {
  const int64_t lbd = a[0].dim, rbd = a[1].dim;
  IntList lc = dims_past_batch(params.get_ints("lhs_contracting"), lbd);
  IntList rc = dims_past_batch(params.get_ints("rhs_contracting"), rbd);
  IntList lb = dims_past_batch(params.get_ints("lhs_batch"), lbd);
  IntList rb = dims_past_batch(params.get_ints("rhs_batch"), rbd);
  int64_t out_bd = 0;
  if (lbd != kNotMapped && rbd != kNotMapped) {
    lb.insert(lb.begin(), lbd);
    rb.insert(rb.begin(), rbd);
  } else {
    const bool on_lhs = lbd != kNotMapped;
    const Array& x = a[on_lhs ? 0 : 1].value;
    const int64_t bd = on_lhs ? lbd : rbd;
    const IntList free = kept_dims(x.ndim(), on_lhs ? lc : rc, on_lhs ? lb : rb);
    out_bd = int64_t(lb.size()) + (std::find(free.begin(), free.end(), bd) - free.begin());
    if (!on_lhs) out_bd += int64_t(kept_dims(a[0].value.ndim(), lc, lb).size());
  }
  Params p = params;
  p.set("lhs_contracting", lc);
  p.set("rhs_contracting", rc);
  p.set("lhs_batch", lb);
  p.set("rhs_batch", rb);
  return {BatchedArray{dot(a[0].value, a[1].value, p, loc), out_bd}};
}
// ---- sharding ------------------------------------------------------------------------------------
// Each mesh axis is given to one dimension, in this order of preference: the batch dims (the lhs's
// split, else the rhs's), the lhs's free dims, the rhs's free dims, then the contracting pairs --
// a pair split over the same axes on both sides leaves every device a partial sum over them. So a
// column-split weight keeps its columns split (Megatron's column-parallel product), a row-split
// weight against a column-split activation sums over the axis (row-parallel, one all-reduce), a
// batch-split activation keeps its batch split and gathers a weight split over the same axis
// (FSDP), and the gradient of a weight sums over the batch axis (data parallelism).
std::optional<ShardPlan> dot_general_shard(std::span<const PartitionSpec> in, std::span<const AbstractArray> avals,
                                           const Params& params, const Mesh&) {
  const IntList &lc = params.get_ints("lhs_contracting"), &rc = params.get_ints("rhs_contracting");
  const IntList &lb = params.get_ints("lhs_batch"), &rb = params.get_ints("rhs_batch");
  PartitionSpec ls, rs, out;
  ls.dims.resize(avals[0].shape.size());
  rs.dims.resize(avals[1].shape.size());
  AxisList used;
  auto take = [&](const AxisList& axes) {
    for (const std::string& a : axes)
      if (std::find(used.begin(), used.end(), a) != used.end()) return AxisList{};
    used.insert(used.end(), axes.begin(), axes.end());
    return axes;
  };
  auto pair = [&](int64_t l, int64_t r) {
    AxisList ax = take(in[0].dim(size_t(l)));
    if (ax.empty()) ax = take(in[1].dim(size_t(r)));
    ls.dims[size_t(l)] = rs.dims[size_t(r)] = ax;
    return ax;
  };
  for (size_t k = 0; k < lb.size(); ++k) out.dims.push_back(pair(lb[k], rb[k]));
  for (int64_t d : kept_dims(int(avals[0].shape.size()), lc, lb)) out.dims.push_back(ls.dims[size_t(d)] = take(in[0].dim(size_t(d))));
  for (int64_t d : kept_dims(int(avals[1].shape.size()), rc, rb)) out.dims.push_back(rs.dims[size_t(d)] = take(in[1].dim(size_t(d))));
  AxisList partial;
  for (size_t k = 0; k < lc.size(); ++k) {
    const AxisList ax = pair(lc[k], rc[k]);
    partial.insert(partial.end(), ax.begin(), ax.end());
  }
  return ShardPlan{{ls, rs}, {Layout{out, partial}}, params, 0b11, true};
}

const Registration dot_general_registration = PrimitiveRules{
    .prim = Prim::dot_general,
    .shape = &dot_general_shape,
    .kernel = &dot_general_kernel,
    .jvp = &dot_general_jvp,
    .transpose = &dot_general_transpose,
    .linear = {.operands = 0b11, .one_at_a_time = true},
    .batch = &dot_general_batch,
    .shard = &dot_general_shard,
    .gpu = GpuLowering::library,
    .reads = Reads::whole,
};

}  // namespace
}  // namespace fluxion
