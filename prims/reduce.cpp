// Reductions: reduce_{sum,max,min,prod,and,or}[axes], argmax/argmin[axes index_dtype] (the
// cumulative scans are in prims/cumulative.cpp). Operands arrive promoted (the API layer upcasts bool/int8 sums to int32), so
// the output dtype is the operand's, as in jax.lax.
//
// Accumulation (prims/accumulate.h): float16/bfloat16 accumulate in float32 and float32 in float64
// (sums and products), rounding once at the end; where the reduced axes are innermost, float sums of each
// contiguous run are pairwise as well (which is what keeps float64 sums accurate). Integers
// accumulate in uint64 and wrap modulo 2^bits as XLA's integer arithmetic does, without C++'s
// signed-overflow undefined behaviour.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "lax/lax.h"
#include "prims/accumulate.h"
#include "prims/elementwise.h"

namespace fluxion {
namespace {
using namespace accumulate;
using namespace elementwise;
using namespace lax;
using Arrays = std::span<const Array>;
using BatchedArgs = std::span<const BatchedArray>;

// ---- the family's shared rules --------------------------------------------------------------------

const IntList& checked_axes(const AbstractArray& x, const Params& params) {
  if (!params.has("axes")) rule_error(ErrorKind::Value, "missing param axes");
  const IntList& axes = params.get_ints("axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= x.ndim())
      rule_error(ErrorKind::Shape, "axis " + std::to_string(axes[i]) + " is out of range for an operand of rank " +
                                       std::to_string(x.ndim()));
    if (i && axes[i] <= axes[i - 1]) rule_error(ErrorKind::Shape, "axes must be sorted and unique");
  }
  return axes;
}

Shape reduced_shape(const Shape& s, const IntList& axes) {
  Shape out;
  for (int d = 0; d < s.rank(); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), int64_t(d))) out.push_back(s[size_t(d)]);
  return out;
}

template <Accepts A>
std::vector<AbstractArray> reduce_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand");
  check_dtype(A, in[0].dtype);
  const IntList& axes = checked_axes(in[0], params);
  return {AbstractArray{reduced_shape(in[0].shape, axes), in[0].dtype, in[0].weak_type}};
}

/// The operand's dims with adjacent dims of the same kind (reduced / kept) merged, so the loop
/// below sees alternating groups; `out_stride` is each kept group's stride in the output.
struct Groups {
  std::vector<int64_t> size, out_stride;
  std::vector<bool> reduced;
};

Groups group_dims(const Shape& s, const IntList& axes) {
  Groups g;
  for (int d = 0; d < s.rank(); ++d) {
    bool r = std::binary_search(axes.begin(), axes.end(), int64_t(d));
    if (!g.size.empty() && g.reduced.back() == r) {
      g.size.back() *= s[size_t(d)];
    } else {
      g.size.push_back(s[size_t(d)]);
      g.reduced.push_back(r);
    }
  }
  if (g.size.empty()) {  // rank 0: one kept element
    g.size.push_back(1);
    g.reduced.push_back(false);
  }
  g.out_stride.assign(g.size.size(), 0);
  int64_t stride = 1;
  for (size_t i = g.size.size(); i-- > 0;)
    if (!g.reduced[i]) {
      g.out_stride[i] = stride;
      stride *= g.size[i];
    }
  return g;
}

/// Pairwise summation of a contiguous run: error O(log n) ulps instead of O(n).
template <class Acc, class T>
Acc pairwise_sum(const T* x, int64_t n) {
  if (n <= 128) {
    Acc s = Acc(0);
    for (int64_t i = 0; i < n; ++i) s += to_acc<Acc>(x[i]);
    return s;
  }
  int64_t h = n / 2;
  return pairwise_sum<Acc>(x, h) + pairwise_sum<Acc>(x + h, n - h);
}

/// Reduces `in` over `axes` into `out`: acc starts at `init`, each element is folded in with
/// `op(acc, to_acc(x))`; `run` folds a whole contiguous run (when the last group is reduced).
/// The operand is read once, in memory order.
template <class T, class Acc, class Op, class Run>
void reduce_loop(const View& in, const View& out, const IntList& axes, Acc init, Op op, Run run) {
  const int64_t n_out = out.size();
  std::unique_ptr<Acc[]> acc(new Acc[size_t(n_out)]);  // not std::vector: Acc may be bool
  std::fill(acc.get(), acc.get() + n_out, init);
  if (in.size() > 0) {
    const Groups g = group_dims(in.shape(), axes);
    const size_t last = g.size.size() - 1;
    const int64_t inner = g.size[last];
    const T* x = in.as<const T>();
    const int64_t rows = in.size() / inner;
    std::vector<int64_t> idx(last, 0);
    int64_t out_off = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + r * inner;
      if (g.reduced[last]) {
        acc[size_t(out_off)] = op(acc[size_t(out_off)], run(row, inner));
      } else {
        Acc* a = acc.get() + out_off;
        for (int64_t j = 0; j < inner; ++j) a[j] = op(a[j], to_acc<Acc>(row[j]));
      }
      for (size_t d = last; d-- > 0;) {  // odometer over the outer groups
        out_off += g.out_stride[d];
        if (++idx[d] < g.size[d]) break;
        out_off -= g.out_stride[d] * g.size[d];
        idx[d] = 0;
      }
    }
  }
  T* o = out.as<T>();
  for (int64_t i = 0; i < n_out; ++i) o[i] = from_acc<T>(acc[size_t(i)]);
}

template <class Acc, class T, class Op>
Acc fold_run(const T* x, int64_t n, Acc init, Op op) {
  Acc a = init;
  for (int64_t i = 0; i < n; ++i) a = op(a, to_acc<Acc>(x[i]));
  return a;
}

// The reduced result broadcast back over the operand's shape (the inverse of dropping `axes`).
Array expand_back(const Array& r, const AbstractArray& operand, const IntList& axes, SourceLoc loc) {
  IntList kept;
  for (int d = 0; d < operand.ndim(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(d);
  return bind1(Prim::broadcast_in_dim, {r}, Params{{"shape", operand.shape.dims()}, {"broadcast_dimensions", kept}}, loc);
}
Array reduce_sum_of(const Array& x, const Params& params, SourceLoc loc) {
  return bind1(Prim::reduce_sum, {x}, params, loc);
}

// Batching: the batch dim is never reduced. The axes are renumbered around it, and it stays in
// place (less the reduced dims before it).
// reduce_* and argmax/argmin: the same params with the axes renumbered.
template <Prim P>
std::vector<BatchedArray> reduce_batch(BatchedArgs a, const Params& params, int64_t, SourceLoc loc) {
  const int64_t bd = a[0].dim;
  const IntList& axes = params.get_ints("axes");
  Params p = params;
  p.set("axes", dims_past_batch(axes, bd));
  const int64_t reduced_before = std::count_if(axes.begin(), axes.end(), [&](int64_t d) { return d < bd; });
  return {BatchedArray{bind1(P, {a[0].value}, p, loc), bd - reduced_before}};
}

// ---- reduce_sum[axes]: linear --------------------------------------------------------------------------
void reduce_sum_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  dispatch_dtype_complex(in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    if constexpr (!std::is_same_v<T, bool>) {
      using Acc = acc_t<T>;
      reduce_loop<T>(in[0], out[0], params.get_ints("axes"), Acc(0), [](Acc a, Acc b) { return Acc(a + b); },
                     [](const T* x, int64_t n) {
                       if constexpr (is_float_type<T> || is_complex_type<T>) return pairwise_sum<Acc>(x, n);
                       else return fold_run(x, n, Acc(0), [](Acc a, Acc b) { return Acc(a + b); });
                     });
    }
  });
}

std::vector<Array> reduce_sum_jvp(Arrays, Arrays t, Arrays, const Params& params, SourceLoc loc) {
  return {reduce_sum_of(t[0], params, loc)};
}
// The transpose broadcasts the cotangent back.
std::vector<Array> reduce_sum_transpose(Arrays ct, std::span<const LinearArg> a, const Params& params, SourceLoc loc) {
  return {expand_back(ct[0], a[0].aval, params.get_ints("axes"), loc)};
}

// Sharding: the kept dimensions keep their splits. A sum over split dimensions is a partial sum
// over their axes (each device sums its block; the partitioner adds them where needed); a max or
// min gathers its reduced dimensions first.
template <bool Partial>
std::optional<ShardPlan> reduce_shard(std::span<const PartitionSpec> in, std::span<const AbstractArray> avals,
                                      const Params& params, const Mesh&) {
  const IntList& axes = params.get_ints("axes");
  PartitionSpec x, out;
  AxisList partial;
  for (size_t d = 0; d < avals[0].shape.size(); ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end();
    x.dims.push_back(reduced && !Partial ? AxisList{} : in[0].dim(d));
    if (!reduced) out.dims.push_back(in[0].dim(d));
    else partial.insert(partial.end(), x.dims.back().begin(), x.dims.back().end());
  }
  return ShardPlan{{x}, {Layout{out, partial}}, params, Partial ? 0b1u : 0u};
}

const Registration reduce_sum_registration = PrimitiveRules{
    .prim = Prim::reduce_sum,
    .shape = &reduce_shape<Accepts::Number>,
    .kernel = &reduce_sum_kernel,
    .jvp = &reduce_sum_jvp,
    .transpose = &reduce_sum_transpose,
    .linear = kLinear,
    .batch = &reduce_batch<Prim::reduce_sum>,
    .shard = &reduce_shard<true>,
    .gpu = GpuLowering::generic,
    .reads = Reads::whole,
};

// ---- reduce_prod[axes] -----------------------------------------------------------------------------------
void reduce_prod_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  dispatch_dtype_complex(in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    if constexpr (!std::is_same_v<T, bool>) {
      using Acc = acc_t<T>;
      auto mul = [](Acc a, Acc b) { return Acc(a * b); };
      reduce_loop<T>(in[0], out[0], params.get_ints("axes"), Acc(1), mul,
                     [&](const T* x, int64_t n) { return fold_run(x, n, Acc(1), mul); });
    }
  });
}

// d prod = sum_i t_i * prod_{j != i} x_j, computed without dividing by zero: with no zero in a group
// the product of the others is prod / x_i; with exactly one zero only that position has a nonzero
// product of the others; with more, all are zero.
std::vector<Array> reduce_prod_jvp(Arrays x, Arrays t, Arrays, const Params& params, SourceLoc loc) {
  const IntList& axes = params.get_ints("axes");
  const AbstractArray& av = x[0].aval();
  Array is_zero_x = eq(x[0], scalar_like(x[0], 0));
  Array safe = select(is_zero_x, scalar_like(x[0], 1), x[0]);
  Array safe_prod = expand_back(bind1(Prim::reduce_prod, {safe}, params, loc), av, axes, loc);
  Array zeros_in_group = expand_back(reduce_sum_of(convert(is_zero_x, av.dtype), params, loc), av, axes, loc);
  Array others = select(eq(zeros_in_group, scalar_like(zeros_in_group, 0)), safe_prod / safe,
                        select(bitwise_and(eq(zeros_in_group, scalar_like(zeros_in_group, 1)), is_zero_x), safe_prod,
                               scalar_like(safe_prod, 0)));
  return {reduce_sum_of(t[0] * others, params, loc)};
}

const Registration reduce_prod_registration = PrimitiveRules{
    .prim = Prim::reduce_prod,
    .shape = &reduce_shape<Accepts::Number>,
    .kernel = &reduce_prod_kernel,
    .jvp = &reduce_prod_jvp,
    .batch = &reduce_batch<Prim::reduce_prod>,
    .gpu = GpuLowering::generic,
    .reads = Reads::whole,
};

// ---- reduce_max[axes], reduce_min[axes] --------------------------------------------------------------------
/// max/min propagate NaN (as lax.max): once the accumulator is NaN it stays NaN. Complex values
/// compare lexicographically (real parts first, as lax.max orders them); a NaN in either part
/// propagates the same way.
template <bool IsMax>
void reduce_extremum_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  dispatch_dtype_complex(in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    using C = compute_t<T>;
    C init;
    if constexpr (std::is_same_v<T, bool>) init = !IsMax;
    else if constexpr (is_complex_type<C>) {
      using R = typename C::value_type;
      const R inf = std::numeric_limits<R>::infinity();
      init = IsMax ? C(-inf, -inf) : C(inf, inf);
    } else if constexpr (is_float_type<T>) init = IsMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
    else init = IsMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
    auto pick = [](C a, C b) -> C {
      const bool wins = IsMax ? greater(b, a) : greater(a, b);
      return (wins || b != b) && a == a ? b : a;
    };
    reduce_loop<T>(in[0], out[0], params.get_ints("axes"), init, pick,
                   [&](const T* x, int64_t n) { return fold_run(x, n, init, pick); });
  });
}

// The tangent at the chosen locations, averaged over ties (JAX's chooser rule).
std::vector<Array> reduce_chooser_jvp(Arrays x, Arrays t, Arrays y, const Params& params, SourceLoc loc) {
  const IntList& axes = params.get_ints("axes");
  Array chosen = convert(eq(x[0], expand_back(y[0], x[0].aval(), axes, loc)), x[0].dtype());
  return {reduce_sum_of(t[0] * chosen, params, loc) / reduce_sum_of(chosen, params, loc)};
}

const Registration reduce_max_registration = PrimitiveRules{
    .prim = Prim::reduce_max,
    .shape = &reduce_shape<Accepts::All>,
    .kernel = &reduce_extremum_kernel<true>,
    .jvp = &reduce_chooser_jvp,
    .batch = &reduce_batch<Prim::reduce_max>,
    .shard = &reduce_shard<false>,
    .gpu = GpuLowering::generic,
    .reads = Reads::whole,
};
const Registration reduce_min_registration = PrimitiveRules{
    .prim = Prim::reduce_min,
    .shape = &reduce_shape<Accepts::All>,
    .kernel = &reduce_extremum_kernel<false>,
    .jvp = &reduce_chooser_jvp,
    .batch = &reduce_batch<Prim::reduce_min>,
    .shard = &reduce_shard<false>,
    .gpu = GpuLowering::generic,
    .reads = Reads::whole,
};

// ---- reduce_and[axes], reduce_or[axes] ---------------------------------------------------------------------
/// reduce_and / reduce_or: logical for bool, bitwise for integers.
template <bool IsAnd>
void reduce_bits_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  dispatch_dtype(in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_integral_v<T>) {
      using Acc = uint64_t;
      const Acc init = IsAnd ? ~Acc(0) : Acc(0);
      auto op = [](Acc a, Acc b) { return IsAnd ? Acc(a & b) : Acc(a | b); };
      reduce_loop<T>(in[0], out[0], params.get_ints("axes"), init, op,
                     [&](const T* x, int64_t n) { return fold_run(x, n, init, op); });
    }
  });
}

const Registration reduce_and_registration = PrimitiveRules{
    .prim = Prim::reduce_and,
    .shape = &reduce_shape<Accepts::BoolOrInt>,
    .kernel = &reduce_bits_kernel<true>,
    .zero_derivative = true,
    .batch = &reduce_batch<Prim::reduce_and>,
    .gpu = GpuLowering::generic,
    .reads = Reads::whole,
};
const Registration reduce_or_registration = PrimitiveRules{
    .prim = Prim::reduce_or,
    .shape = &reduce_shape<Accepts::BoolOrInt>,
    .kernel = &reduce_bits_kernel<false>,
    .zero_derivative = true,
    .batch = &reduce_batch<Prim::reduce_or>,
    .gpu = GpuLowering::generic,
    .reads = Reads::whole,
};

// ---- argmax[axes index_dtype], argmin[axes index_dtype]: piecewise constant --------------------------------
// Complex operands are ordered lexicographically (numpy, jnp.argmax).
std::vector<AbstractArray> argminmax_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand");
  const IntList& axes = checked_axes(in[0], params);
  if (axes.size() != 1) rule_error(ErrorKind::Shape, "expects exactly one axis, got " + std::to_string(axes.size()));
  if (in[0].shape[size_t(axes[0])] == 0)
    rule_error(ErrorKind::Shape, "the reduced axis " + std::to_string(axes[0]) + " is empty");
  if (!params.has("index_dtype")) rule_error(ErrorKind::Value, "missing param index_dtype");
  DType index = params.get_dtype("index_dtype");
  if (!is_integer(index))
    rule_error(ErrorKind::Type, "index_dtype must be an integer dtype, got " + std::string(dtype_name(index)));
  return {AbstractArray{reduced_shape(in[0].shape, axes), index, false}};
}

/// Whether `cand` replaces `best` (seen first): NaN (in either part of a complex value) beats
/// everything and the first NaN stays, as numpy's and JAX's argmax/argmin; ties keep the first
/// occurrence.
template <bool IsMax, class C>
bool beats(C cand, C best) {
  if (best != best) return false;
  if (cand != cand) return true;
  return IsMax ? greater(cand, best) : greater(best, cand);
}

template <bool IsMax>
void argminmax_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  const AxisSplit s = split_at(in[0].shape(), params.get_ints("axes")[0]);
  dispatch_dtype_complex(in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    using C = compute_t<T>;
    const T* x = in[0].as<const T>();
    std::vector<int64_t> best_idx(size_t(s.outer * s.inner), 0);
    std::unique_ptr<C[]> best(new C[size_t(s.inner)]);  // not std::vector: C may be bool
    for (int64_t o = 0; o < s.outer; ++o) {
      const T* base = x + o * s.len * s.inner;
      int64_t* bi = best_idx.data() + o * s.inner;
      for (int64_t j = 0; j < s.inner; ++j) best[size_t(j)] = static_cast<C>(base[j]);
      for (int64_t r = 1; r < s.len; ++r) {
        const T* row = base + r * s.inner;
        for (int64_t j = 0; j < s.inner; ++j) {
          C v = static_cast<C>(row[j]);
          if (beats<IsMax>(v, best[size_t(j)])) {
            best[size_t(j)] = v;
            bi[j] = r;
          }
        }
      }
    }
    dispatch_dtype(out[0].dtype(), [&](auto w) {
      using I = decltype(w);
      if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
        I* o = out[0].as<I>();
        for (size_t i = 0; i < best_idx.size(); ++i) o[i] = static_cast<I>(best_idx[i]);
      }
    });
  });
}

const Registration argmax_registration = PrimitiveRules{
    .prim = Prim::argmax,
    .shape = &argminmax_shape,
    .kernel = &argminmax_kernel<true>,
    .zero_derivative = true,
    .batch = &reduce_batch<Prim::argmax>,
    .gpu = GpuLowering::generic,
    .reads = Reads::whole,
};
const Registration argmin_registration = PrimitiveRules{
    .prim = Prim::argmin,
    .shape = &argminmax_shape,
    .kernel = &argminmax_kernel<false>,
    .zero_derivative = true,
    .batch = &reduce_batch<Prim::argmin>,
    .gpu = GpuLowering::generic,
    .reads = Reads::whole,
};

}  // namespace
}  // namespace fluxion
