// The cumulative scans along one axis: cumsum, cumprod, cummax, cummin [axis reverse], as
// jax.lax's. Each output element is the combination of the operand's elements up to it (from the
// end when `reverse`). Operands arrive promoted (the API widens bool and narrow integers for sums
// and products), so the output dtype is the operand's.
//
// Sums and products accumulate as the reductions do (prims/accumulate.h) and round once per
// output element. cummax/cummin propagate NaN like lax.max and order complex values
// lexicographically; their derivative follows the element that holds the running extremum, the
// latest one on ties (PyTorch's cummax indices; JAX's associative-scan JVP splits ties instead).
#include <algorithm>
#include <limits>

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

enum class Scan { sum, prod, max, min };

// ---- the family's shared rules ------------------------------------------------------------------
template <Accepts A>
std::vector<AbstractArray> cumulative_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand");
  check_dtype(A, in[0].dtype);
  if (!params.has("axis") || !params.has("reverse")) rule_error(ErrorKind::Value, "expects params axis and reverse");
  int64_t axis = params.get_int("axis");
  params.get_bool("reverse");
  if (axis < 0 || axis >= in[0].ndim())
    rule_error(ErrorKind::Shape,
               "axis " + std::to_string(axis) + " is out of range for an operand of rank " + std::to_string(in[0].ndim()));
  return {in[0]};
}

/// Runs `step(acc, x)` along every line of the axis, storing each running value.
template <class T, class Acc, class Init, class Step>
void scan_lines(const View& in, const View& out, const Params& params, Init init, Step step) {
  const AxisSplit s = split_at(in.shape(), params.get_int("axis"));
  const bool reverse = params.get_bool("reverse");
  const T* x = in.as<const T>();
  T* y = out.as<T>();
  std::vector<Acc> acc(size_t(s.inner));
  for (int64_t o = 0; o < s.outer; ++o) {
    std::fill(acc.begin(), acc.end(), init());
    for (int64_t k = 0; k < s.len; ++k) {
      const int64_t off = (o * s.len + (reverse ? s.len - 1 - k : k)) * s.inner;
      for (int64_t j = 0; j < s.inner; ++j) {
        acc[size_t(j)] = step(acc[size_t(j)], x[off + j], k == 0);
        y[off + j] = from_acc<T>(acc[size_t(j)]);
      }
    }
  }
}

template <Scan K>
void cumulative_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  dispatch_dtype_complex(in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    if constexpr (K == Scan::sum || K == Scan::prod) {
      if constexpr (!std::is_same_v<T, bool>) {
        using Acc = acc_t<T>;
        scan_lines<T, Acc>(in[0], out[0], params, [] { return Acc(K == Scan::sum ? 0 : 1); },
                           [](Acc a, T v, bool) { return K == Scan::sum ? Acc(a + to_acc<Acc>(v)) : Acc(a * to_acc<Acc>(v)); });
      }
    } else {
      // The running extremum in the compute type; the first element starts it, so no identity.
      using C = compute_t<T>;
      using Acc = std::conditional_t<std::is_same_v<T, bool>, uint8_t, C>;  // not vector<bool>
      scan_lines<T, Acc>(in[0], out[0], params, [] { return Acc(); }, [](Acc a, T t, bool first) {
        const C v = static_cast<C>(t), best = static_cast<C>(a);
        if (first) return Acc(v);
        const bool wins = K == Scan::max ? greater(v, best) : greater(best, v);
        return (wins || v != v) && best == best ? Acc(v) : a;
      });
    }
  });
}

// The batch dim is any dim: the scan's axis moves past it when it sits at or after it.
template <Prim P>
std::vector<BatchedArray> batch_rule(BatchedArgs a, const Params& params, int64_t, SourceLoc loc) {
  const int64_t bd = a[0].dim, axis = params.get_int("axis");
  Params q = params;
  q.set("axis", axis >= bd ? axis + 1 : axis);
  return {BatchedArray{bind1(P, {a[0].value}, q, loc), bd}};
}

// ---- cumsum: linear; its transpose is the cumsum running the other way ----------------------------
std::vector<Array> cumsum_jvp(Arrays, Arrays t, Arrays, const Params& params, SourceLoc loc) {
  return {bind1(Prim::cumsum, {t[0]}, params, loc)};
}
std::vector<Array> cumsum_transpose(Arrays ct, std::span<const LinearArg>, const Params& params, SourceLoc loc) {
  Params p = params;
  p.set("reverse", !params.get_bool("reverse"));
  return {bind1(Prim::cumsum, {ct[0]}, p, loc)};
}

const Registration cumsum_registration = PrimitiveRules{
    .prim = Prim::cumsum,
    .shape = &cumulative_shape<Accepts::Number>,  // complex too (summed in complex<double>)
    .kernel = &cumulative_kernel<Scan::sum>,
    .jvp = &cumsum_jvp,
    .transpose = &cumsum_transpose,
    .linear = kLinear,
    .batch = &batch_rule<Prim::cumsum>,
    .gpu = GpuLowering::generic,
};

// ---- cumprod -------------------------------------------------------------------------------------
// The tangent obeys ty_k = x_k ty_{k-1} + y_{k-1} t_k: a scan of the affine maps u -> x_k u + y_{k-1} t_k.
// It runs as a Hillis-Steele scan (log2(len) rounds of shifted products and sums) built from
// primitives, with no division, so it is exact at zeros and differentiates again to any order
// (a division by x, or a split at the first zero as PyTorch's backward does, is right to first
// order only: the second derivative across two zeros of a line is lost).

/// x moved `by` places along the axis, toward the end (toward the start when reversed), with
/// `fill` entering at the other side.
Array shifted(const Array& x, int64_t by, double fill, int64_t axis, bool reverse) {
  const int64_t rank = x.ndim(), len = x.shape()[size_t(axis)];
  IntList config(size_t(3 * rank), 0), start(size_t(rank), 0), limit = x.shape().dims();
  config[size_t(3 * axis + (reverse ? 1 : 0))] = by;
  if (reverse) start[size_t(axis)] = by, limit[size_t(axis)] = len + by;
  return slice(pad(x, scalar_like(x, fill), config), start, limit);
}

std::vector<Array> cumprod_jvp(Arrays x, Arrays t, Arrays y, const Params& params, SourceLoc) {
  const int64_t axis = params.get_int("axis"), len = x[0].shape()[size_t(axis)];
  const bool reverse = params.get_bool("reverse");
  if (x[0].size() == 0) return {t[0]};
  Array a = x[0], b = shifted(y[0], 1, 1, axis, reverse) * t[0];
  for (int64_t s = 1; s < len; s *= 2) {
    b = b + a * shifted(b, s, 0, axis, reverse);
    if (2 * s < len) a = a * shifted(a, s, 1, axis, reverse);
  }
  return {b};
}

const Registration cumprod_registration = PrimitiveRules{
    .prim = Prim::cumprod,
    .shape = &cumulative_shape<Accepts::Number>,
    .kernel = &cumulative_kernel<Scan::prod>,
    .jvp = &cumprod_jvp,
    .batch = &batch_rule<Prim::cumprod>,
    .gpu = GpuLowering::generic,
};

// ---- cummax, cummin --------------------------------------------------------------------------------
// y_k is x at the latest "record" at or before k (a position where x equals the running extremum,
// or is NaN): that position is the running max of the records' positions (min, from the end, when
// reversed), and the tangent is t gathered there. The gather runs on [lines, len] with the lines as
// paired batch dimensions, so its transpose (a scatter-add) is the VJP.
Array take_along(const Array& t, const Array& idx, int64_t axis, SourceLoc loc) {
  const int64_t rank = t.ndim();
  IntList perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  IntList inverse(size_t(rank), 0);
  for (int64_t d = 0; d < rank; ++d) inverse[size_t(perm[size_t(d)])] = d;
  Shape moved_shape;
  for (int64_t d : perm) moved_shape.push_back(t.shape()[size_t(d)]);
  const int64_t len = t.shape()[size_t(axis)], lines = len ? t.size() / len : 0;
  auto lines_of = [&](const Array& a) { return reshape(transpose(a, perm), Shape({lines, len})); };
  Array g = bind1(Prim::gather, {lines_of(t), lines_of(idx)}, Params{{"axis", int64_t(1)}, {"batch_dims", int64_t(1)}}, loc);
  return transpose(reshape(g, moved_shape), inverse);
}

std::vector<Array> cumextremum_jvp(Arrays x, Arrays t, Arrays y, const Params& params, SourceLoc loc) {
  const int64_t axis = params.get_int("axis"), len = x[0].shape()[size_t(axis)];
  const bool reverse = params.get_bool("reverse");
  if (x[0].size() == 0) return {t[0]};
  Array hit = eq(x[0], y[0]);
  Array record = select(hit, hit, ne(x[0], x[0]));
  Array pos = iota(DType::int32, x[0].shape(), axis);
  Array none = scalar_like(pos, reverse ? double(len) : -1.0);
  Array where = bind1(reverse ? Prim::cummin : Prim::cummax, {select(record, pos, none)}, params, loc);
  return {take_along(t[0], where, axis, loc)};
}

const Registration cummax_registration = PrimitiveRules{
    .prim = Prim::cummax,
    .shape = &cumulative_shape<Accepts::All>,
    .kernel = &cumulative_kernel<Scan::max>,
    .jvp = &cumextremum_jvp,
    .batch = &batch_rule<Prim::cummax>,
    .gpu = GpuLowering::generic,
};
const Registration cummin_registration = PrimitiveRules{
    .prim = Prim::cummin,
    .shape = &cumulative_shape<Accepts::All>,
    .kernel = &cumulative_kernel<Scan::min>,
    .jvp = &cumextremum_jvp,
    .batch = &batch_rule<Prim::cummin>,
    .gpu = GpuLowering::generic,
};

}  // namespace
}  // namespace fluxion
