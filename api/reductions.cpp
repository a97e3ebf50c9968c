#include "api/reductions.h"

#include <algorithm>
#include <string>

#include "api/creation.h"
#include "api/operands.h"
#include "ir/dim_expr.h"
#include "ir/trace.h"

namespace fluxion {
namespace {

[[noreturn]] void fail(ErrorKind kind, std::string_view op, const Array& x, SourceLoc loc, const std::string& detail) {
  std::vector<AbstractArray> avals{x.aval()};
  op_error(kind, op, avals, loc, detail);
}

/// The operand as an array of its own dtype (a C++ scalar becomes a weak 0-d array).
Array operand(const ArrayLike& x, SourceLoc loc) {
  return detail::as_array(x, x.dtype(), x.weak(), loc);
}

/// Sorted, non-negative, unique axes; every axis when `axes` names none.
IntList normalize_axes(std::string_view op, const Array& x, const Axes& axes, SourceLoc loc) {
  IntList out;
  if (axes.all()) {
    for (int d = 0; d < x.ndim(); ++d) out.push_back(d);
    return out;
  }
  for (int64_t a : axes.list()) out.push_back(detail::normalize_axis(op, a, x.ndim(), x.aval(), loc));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    fail(ErrorKind::Shape, op, x, loc, "repeated axis " + std::to_string(*std::adjacent_find(out.begin(), out.end())));
  return out;
}

/// The number of elements a reduction over `axes` folds into each output element.
double static_count(const Array& x, const IntList& axes) {
  double n = 1;
  for (int64_t a : axes) n *= double(x.shape()[size_t(a)]);
  return n;
}

bool symbolic_axis(const Array& x, const IntList& axes) {
  for (int64_t a : axes)
    if (is_symbolic_dim(x.shape()[size_t(a)])) return true;
  return false;
}


/// Re-inserts the reduced axes of `in_shape` as size-1 dims (keepdims) with one broadcast_in_dim.
Array keep_dims(const Array& r, const Shape& in_shape, const IntList& axes, SourceLoc loc) {
  IntList shape, bdims;
  for (int d = 0; d < in_shape.rank(); ++d) {
    if (std::binary_search(axes.begin(), axes.end(), int64_t(d))) {
      shape.push_back(1);
    } else {
      bdims.push_back(d);
      shape.push_back(in_shape[size_t(d)]);
    }
  }
  return bind1(Prim::broadcast_in_dim, {r}, Params{{"shape", shape}, {"broadcast_dimensions", bdims}}, loc);
}

Array reduce(Prim p, const Array& x, const IntList& axes, bool keepdims, SourceLoc loc) {
  Array r = bind1(p, {x}, Params{{"axes", axes}}, loc);
  return keepdims ? keep_dims(r, x.shape(), axes, loc) : r;
}

/// The same over a symbolic dim of a polymorphic trace, whose size only the compiled kernel knows:
/// the sum of ones over those dims, in dtype d, computed at run time (exact in float32 up to 2^24
/// elements).
Array symbolic_count(const Array& x, const IntList& axes, DType d, SourceLoc loc) {
  int64_t n = 1;
  Shape symbolic;
  for (int64_t a : axes) {
    const int64_t dim = x.shape()[size_t(a)];
    if (is_symbolic_dim(dim)) symbolic.push_back(dim);
    else n *= dim;
  }
  Array count = full(Shape{}, double(n), d, loc);
  IntList all;
  for (size_t k = 0; k < symbolic.size(); ++k) all.push_back(int64_t(k));
  return multiply(count, reduce(Prim::reduce_sum, ones(symbolic, d, loc), all, /*keepdims=*/false, loc), loc);
}

/// jax.numpy's accumulation dtype for sum/prod/cumsum: bool and narrow integers widen to 32 bits.
DType accumulation_dtype(DType d) {
  switch (d) {
    case DType::bool_: case DType::int8: return DType::int32;
    case DType::uint8: return DType::uint32;
    default: return d;
  }
}

/// The operand of mean/var/logsumexp: integers become float32; float16/bfloat16 are computed in
/// float32 (`*restore` is the dtype to round the result back to).
Array float_operand(const ArrayLike& x, bool upcast_half, DType* restore, SourceLoc loc) {
  DType d = x.dtype();
  *restore = is_float(d) ? d : default_float;
  DType compute = *restore;
  if (upcast_half && (d == DType::float16 || d == DType::bfloat16)) compute = DType::float32;
  return detail::as_array(x, compute, x.weak(), loc);
}

Array flatten(const Array& x, SourceLoc loc) {
  if (x.ndim() == 1) return x;
  return bind1(Prim::reshape, {x}, Params{{"new_sizes", IntList{x.size()}}}, loc);
}

Array arg_extremum(Prim p, std::string_view op, const ArrayLike& xl, std::optional<int64_t> axis, bool keepdims,
                   SourceLoc loc) {
  const Array x = operand(xl, loc);
  const Array a = axis ? x : flatten(x, loc);
  const int64_t ax = detail::normalize_axis(op, axis.value_or(0), a.ndim(), x.aval(), loc);
  if (a.shape()[size_t(ax)] == 0) fail(ErrorKind::Value, op, x, loc, "attempt to get " + std::string(op) + " of an empty sequence");
  Array r = bind1(p, {a}, Params{{"axes", IntList{ax}}, {"index_dtype", DType::int32}}, loc);
  if (!keepdims) return r;
  if (axis) return keep_dims(r, a.shape(), IntList{ax}, loc);
  return bind1(Prim::broadcast_in_dim, {r},
               Params{{"shape", IntList(size_t(x.ndim()), 1)}, {"broadcast_dimensions", IntList{}}}, loc);
}

Array extremum(Prim p, std::string_view op, const ArrayLike& xl, const Axes& axes, bool keepdims, SourceLoc loc) {
  const Array x = operand(xl, loc);
  const IntList ax = normalize_axes(op, x, axes, loc);
  for (int64_t a : ax)
    if (x.shape()[size_t(a)] == 0)
      fail(ErrorKind::Value, op, x, loc,
           "zero-size reduction over axis " + std::to_string(a) + ", which has no identity");
  return reduce(p, x, ax, keepdims, loc);
}

Array variance(std::string_view op, const ArrayLike& xl, const Axes& axes, int64_t ddof, bool keepdims, SourceLoc loc) {
  DType out_dtype;
  const Array x = float_operand(xl, /*upcast_half=*/true, &out_dtype, loc);
  const IntList ax = normalize_axes(op, x, axes, loc);
  Array centered, ss, v;
  if (symbolic_axis(x, ax)) {
    const Array n = symbolic_count(x, ax, x.dtype(), loc);
    centered = subtract(x, divide(reduce(Prim::reduce_sum, x, ax, /*keepdims=*/true, loc), n, loc), loc);
    ss = reduce(Prim::reduce_sum, multiply(centered, centered, loc), ax, keepdims, loc);
    v = divide(ss, maximum(subtract(n, double(ddof), loc), 0.0, loc), loc);
  } else {
    const double n = static_count(x, ax);
    centered = subtract(x, divide(reduce(Prim::reduce_sum, x, ax, /*keepdims=*/true, loc), n, loc), loc);
    ss = reduce(Prim::reduce_sum, multiply(centered, centered, loc), ax, keepdims, loc);
    v = divide(ss, std::max(n - double(ddof), 0.0), loc);
  }
  return detail::convert(v, out_dtype, v.weak_type(), loc);
}

}  // namespace

Array sum(const ArrayLike& xl, const Axes& axes, bool keepdims, SourceLoc loc) {
  const Array x = detail::as_array(xl, accumulation_dtype(xl.dtype()), xl.weak(), loc);
  return reduce(Prim::reduce_sum, x, normalize_axes("sum", x, axes, loc), keepdims, loc);
}

Array prod(const ArrayLike& xl, const Axes& axes, bool keepdims, SourceLoc loc) {
  const Array x = detail::as_array(xl, accumulation_dtype(xl.dtype()), xl.weak(), loc);
  return reduce(Prim::reduce_prod, x, normalize_axes("prod", x, axes, loc), keepdims, loc);
}

Array max(const ArrayLike& x, const Axes& axes, bool keepdims, SourceLoc loc) {
  return extremum(Prim::reduce_max, "max", x, axes, keepdims, loc);
}
Array min(const ArrayLike& x, const Axes& axes, bool keepdims, SourceLoc loc) {
  return extremum(Prim::reduce_min, "min", x, axes, keepdims, loc);
}

Array mean(const ArrayLike& xl, const Axes& axes, bool keepdims, SourceLoc loc) {
  DType out_dtype;
  const Array x = float_operand(xl, /*upcast_half=*/true, &out_dtype, loc);
  const IntList ax = normalize_axes("mean", x, axes, loc);
  Array s = reduce(Prim::reduce_sum, x, ax, keepdims, loc);
  Array m = symbolic_axis(x, ax) ? divide(s, symbolic_count(x, ax, x.dtype(), loc), loc)
                                 : divide(s, static_count(x, ax), loc);
  return detail::convert(m, out_dtype, m.weak_type(), loc);
}

Array var(const ArrayLike& x, const Axes& axes, int64_t ddof, bool keepdims, SourceLoc loc) {
  return variance("var", x, axes, ddof, keepdims, loc);
}

Array std(const ArrayLike& x, const Axes& axes, int64_t ddof, bool keepdims, SourceLoc loc) {
  return sqrt(variance("std", x, axes, ddof, keepdims, loc), loc);
}

Array all(const ArrayLike& xl, const Axes& axes, bool keepdims, SourceLoc loc) {
  const Array x = detail::as_array(xl, DType::bool_, false, loc);
  return reduce(Prim::reduce_and, x, normalize_axes("all", x, axes, loc), keepdims, loc);
}
Array any(const ArrayLike& xl, const Axes& axes, bool keepdims, SourceLoc loc) {
  const Array x = detail::as_array(xl, DType::bool_, false, loc);
  return reduce(Prim::reduce_or, x, normalize_axes("any", x, axes, loc), keepdims, loc);
}

Array logsumexp(const ArrayLike& xl, const Axes& axes, bool keepdims, SourceLoc loc) {
  DType out_dtype;
  const Array x = float_operand(xl, /*upcast_half=*/false, &out_dtype, loc);
  const IntList ax = normalize_axes("logsumexp", x, axes, loc);
  // The shift is the max where it is finite (0 for rows of -inf, +inf or NaN, whose result the
  // unshifted formula already gets right); its gradient contribution cancels, so it is stopped.
  Array m = bind1(Prim::reduce_max, {x}, Params{{"axes", ax}}, loc);
  m = stop_gradient(where(isfinite(m, loc), m, 0, loc), loc);
  Array shifted = exp(subtract(x, keep_dims(m, x.shape(), ax, loc), loc), loc);
  Array out = add(log(bind1(Prim::reduce_sum, {shifted}, Params{{"axes", ax}}, loc), loc), m, loc);
  return keepdims ? keep_dims(out, x.shape(), ax, loc) : out;
}

Array argmax(const ArrayLike& x, std::optional<int64_t> axis, bool keepdims, SourceLoc loc) {
  return arg_extremum(Prim::argmax, "argmax", x, axis, keepdims, loc);
}
Array argmin(const ArrayLike& x, std::optional<int64_t> axis, bool keepdims, SourceLoc loc) {
  return arg_extremum(Prim::argmin, "argmin", x, axis, keepdims, loc);
}

namespace {
Array cumulative(Prim p, std::string_view op, Array x, int64_t axis, bool reverse, SourceLoc loc) {
  const int64_t ax = detail::normalize_axis(op, axis, x.ndim(), x.aval(), loc);
  return bind1(p, {x}, Params{{"axis", ax}, {"reverse", reverse}}, loc);
}
Array accumulated(Prim p, std::string_view op, const ArrayLike& xl, std::optional<int64_t> axis, SourceLoc loc) {
  Array x = detail::as_array(xl, accumulation_dtype(xl.dtype()), xl.weak(), loc);
  return cumulative(p, op, axis ? x : flatten(x, loc), axis.value_or(0), false, loc);
}
}  // namespace

Array cumsum(const ArrayLike& x, std::optional<int64_t> axis, SourceLoc loc) {
  return accumulated(Prim::cumsum, "cumsum", x, axis, loc);
}
Array cumprod(const ArrayLike& x, std::optional<int64_t> axis, SourceLoc loc) {
  return accumulated(Prim::cumprod, "cumprod", x, axis, loc);
}
Array cummax(const ArrayLike& x, int64_t axis, bool reverse, SourceLoc loc) {
  return cumulative(Prim::cummax, "cummax", operand(x, loc), axis, reverse, loc);
}
Array cummin(const ArrayLike& x, int64_t axis, bool reverse, SourceLoc loc) {
  return cumulative(Prim::cummin, "cummin", operand(x, loc), axis, reverse, loc);
}

Array sort(const ArrayLike& xl, int64_t axis, SourceLoc loc) {
  const Array x = operand(xl, loc);
  const int64_t ax = detail::normalize_axis("sort", axis, x.ndim(), x.aval(), loc);
  return bind(Prim::sort, {x}, Params{{"dimension", ax}, {"is_stable", true}, {"num_keys", int64_t(1)}}, loc)[0];
}

Array argsort(const ArrayLike& xl, int64_t axis, SourceLoc loc) {
  const Array x = operand(xl, loc);
  const int64_t ax = detail::normalize_axis("argsort", axis, x.ndim(), x.aval(), loc);
  Array index = iota(DType::int32, x.shape(), ax, loc);
  return bind(Prim::sort, {x, index}, Params{{"dimension", ax}, {"is_stable", true}, {"num_keys", int64_t(1)}},
              loc)[1];
}

}  // namespace fluxion
