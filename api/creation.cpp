#include "api/creation.h"

#include <cmath>
#include <cstring>

#include "api/operands.h"
#include "ir/dim_expr.h"
#include "ir/trace.h"

namespace fluxion {

namespace detail {
Array array_from_host(const void* data, DType dtype, const Shape& shape, size_t count, SourceLoc loc) {
  if (std::string why = shape_problem(shape, dtype); !why.empty()) throw ShapeError("ShapeError: array at " + loc.str() + ": " + why);
  if (int64_t(count) != shape.numel())
    throw ShapeError("ShapeError: array at " + loc.str() + ": " + std::to_string(count) +
                     " elements cannot have shape " + shape.str() + " (" + std::to_string(shape.numel()) +
                     " elements)");
  return make_concrete(AbstractArray{shape, dtype, false}, data);
}
}  // namespace detail

namespace {
// A symbolic dim is allowed: under a polymorphic trace zeros({b, 784}) is a traced broadcast (an
// eager one is refused where bind would allocate it).
void check_shape(std::string_view op, const Shape& shape, DType dtype, SourceLoc loc) {
  if (std::string why = symbolic_shape_problem(shape, dtype); !why.empty()) {
    std::vector<AbstractArray> none;
    op_error(ErrorKind::Shape, op, none, loc, why);
  }
}
Array fill(std::string_view op, const Shape& shape, const Literal& value, SourceLoc loc) {
  check_shape(op, shape, value.dtype, loc);
  return bind1(Prim::broadcast_in_dim, {literal_array(value)},
               Params{{"shape", shape.dims()}, {"broadcast_dimensions", IntList{}}}, loc);
}
}  // namespace

Array zeros(const Shape& shape, DType dtype, SourceLoc loc) { return fill("zeros", shape, Literal::of_int(0, dtype), loc); }
Array ones(const Shape& shape, DType dtype, SourceLoc loc) { return fill("ones", shape, Literal::of_int(1, dtype), loc); }

// A C++ scalar value is weakly typed, as a Python scalar is in jnp.full; an array value keeps its type.
Array full(const Shape& shape, const ArrayLike& value, SourceLoc loc) {
  if (value.is_scalar()) {
    check_shape("full", shape, value.dtype(), loc);
    return broadcast_to(detail::as_array(value, value.dtype(), value.weak(), loc), shape, loc);
  }
  return full(shape, value, value.dtype(), loc);
}
Array full(const Shape& shape, const ArrayLike& value, DType dtype, SourceLoc loc) {
  check_shape("full", shape, dtype, loc);
  Array v = detail::as_array(value, dtype, false, loc);
  return broadcast_to(v, shape, loc);
}
// The *_like functions keep x's dtype and weak type (jnp.zeros_like of a weakly typed array is weak).
namespace {
Array fill_like(std::string_view op, const Array& x, const ArrayLike& value, SourceLoc loc) {
  check_shape(op, x.shape(), x.dtype(), loc);
  return broadcast_to(detail::as_array(value, x.dtype(), x.weak_type(), loc), x.shape(), loc);
}
}  // namespace
Array zeros_like(const Array& x, SourceLoc loc) { return fill_like("zeros_like", x, 0, loc); }
Array ones_like(const Array& x, SourceLoc loc) { return fill_like("ones_like", x, 1, loc); }
Array full_like(const Array& x, const ArrayLike& value, SourceLoc loc) { return fill_like("full_like", x, value, loc); }

namespace detail {
Array weak_scalar(const ArrayLike& v, SourceLoc loc) { return as_array(v, v.dtype(), v.weak(), loc); }
}  // namespace detail

Array iota(DType dtype, const Shape& shape, int64_t dimension, SourceLoc loc) {
  check_shape("iota", shape, dtype, loc);
  return bind1(Prim::iota, {}, Params{{"dtype", dtype}, {"shape", shape.dims()}, {"dimension", dimension}}, loc);
}

namespace {
// start + step * [0, n) in `dtype` (the scalars are weak, so the dtype stays; for an integer
// dtype they enter as integers, which the callers have checked they are).
Array ramp(int64_t n, double start, double step, bool plain, DType dtype, SourceLoc loc) {
  Array i = iota(dtype, Shape{n}, 0, loc);
  if (plain) return i;
  if (is_inexact(dtype)) return add(multiply(i, step, loc), start, loc);
  return add(multiply(i, int64_t(step), loc), int64_t(start), loc);
}
}  // namespace

namespace detail {
Array arange_int(int64_t start, int64_t stop, int64_t step, DType dtype, SourceLoc loc) {
  if (step == 0) throw ValueError("ValueError: arange at " + loc.str() + ": step must not be zero");
  // ceil((stop - start) / step) in integers, for either sign of step (in 128 bits: the bounds may be
  // the ends of int64, and the count past it is iota's ShapeError).
  const __int128 count = (__int128(stop) - start + step - (step > 0 ? 1 : -1)) / step;
  const int64_t n = count <= 0 ? 0 : count > INT64_MAX ? INT64_MAX : int64_t(count);
  if (!is_inexact(dtype)) {
    Array i = iota(dtype, Shape{n}, 0, loc);
    return start == 0 && step == 1 ? i : add(multiply(i, step, loc), start, loc);
  }
  return ramp(n, double(start), double(step), start == 0 && step == 1, dtype, loc);
}

Array arange_float(double start, double stop, double step, DType dtype, SourceLoc loc) {
  if (step == 0) throw ValueError("ValueError: arange at " + loc.str() + ": step must not be zero");
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    throw ValueError("ValueError: arange at " + loc.str() + ": the bounds and the step must be finite");
  const double count = std::ceil((stop - start) / step);
  if (std::isnan(count) || count >= 0x1p63)
    throw ValueError("ValueError: arange at " + loc.str() + ": (stop - start) / step is " + std::to_string(count) +
                     ", not a number of elements (start " + std::to_string(start) + ", stop " + std::to_string(stop) +
                     ", step " + std::to_string(step) + ")");
  const int64_t n = count <= 0 ? 0 : int64_t(count);
  // An integer dtype with fractional bounds: the values computed in float64, then truncated (numpy
  // computes the first values in the bounds' type and converts them).
  if (!is_inexact(dtype) && !(start == std::trunc(start) && step == std::trunc(step)))
    return astype(ramp(n, start, step, false, float64, loc), dtype, loc);
  return ramp(n, start, step, start == 0 && step == 1, dtype, loc);
}

Array linspace(double start, double stop, int64_t n, DType dtype, SourceLoc loc) {
  if (n < 0) throw ValueError("ValueError: linspace at " + loc.str() + ": the number of samples must be >= 0");
  if (!is_float(dtype)) {
    return astype(linspace(start, stop, n, float64, loc), dtype, loc);
  }
  Array i = iota(dtype, Shape{n}, 0, loc);
  double step = n > 1 ? (stop - start) / double(n - 1) : 0.0;
  // Pin the last sample to `stop` exactly, as numpy does.
  Array v = add(multiply(i, step, loc), start, loc);
  if (n > 1) v = where(equal(i, double(n - 1), loc), stop, v, loc);
  return v;
}
}  // namespace detail

Array eye(int64_t n, DType dtype, SourceLoc loc) { return eye(n, n, dtype, loc); }
Array eye(int64_t n, int64_t m, DType dtype, SourceLoc loc) {
  Array r = iota(int32, Shape{n, m}, 0, loc), c = iota(int32, Shape{n, m}, 1, loc);
  return astype(equal(r, c, loc), dtype, loc);
}

}  // namespace fluxion
