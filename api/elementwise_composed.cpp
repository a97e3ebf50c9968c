// The elementwise functions jax.numpy writes as compositions of primitives rather than primitives
// of their own: the tests for NaN and infinities, log2/log10, hypot, isclose/allclose. Each is a few
// ops of api/elementwise.h, so every transformation sees through it.
#include <cmath>
#include <limits>

#include "api/elementwise.h"
#include "api/operands.h"
#include "api/reductions.h"
#include "ir/trace.h"

namespace fluxion {
namespace {
// The operand as an array of its own (promoted) dtype.
Array own(const ArrayLike& x, SourceLoc loc) {
  return detail::as_array(x, detail::promote(std::span(&x, 1)).dtype, x.weak(), loc);
}
// Both parts of a complex operand, tested by `test`, joined by or.
template <class F>
Array either_part(const Array& a, F test, SourceLoc loc) {
  return logical_or(test(bind1(Prim::real, {a}, {}, loc)), test(bind1(Prim::imag, {a}, {}, loc)), loc);
}
// false with x's shape (integer and bool operands have neither NaN nor infinities).
Array none_of(const Array& a, SourceLoc loc) { return not_equal(a, a, loc); }
// The operand promoted to a float dtype (integers and bool to float32), as unary_float does.
Array as_inexact(const ArrayLike& x, SourceLoc loc) {
  const DType d = is_inexact(x.dtype()) ? x.dtype() : default_float;
  return detail::as_array(x, d, x.weak(), loc);
}
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

Array isnan(const ArrayLike& x, SourceLoc loc) {
  Array a = own(x, loc);
  if (is_complex(a.dtype())) return either_part(a, [&](const Array& p) { return isnan(p, loc); }, loc);
  return not_equal(a, a, loc);  // only NaN differs from itself (integers: never)
}
Array isinf(const ArrayLike& x, SourceLoc loc) {
  Array a = own(x, loc);
  if (is_complex(a.dtype())) return either_part(a, [&](const Array& p) { return isinf(p, loc); }, loc);
  if (!is_float(a.dtype())) return none_of(a, loc);
  return equal(abs(a, loc), kInf, loc);
}
Array isposinf(const ArrayLike& x, SourceLoc loc) {
  Array a = own(x, loc);
  if (!is_float(a.dtype())) return is_complex(a.dtype()) ? isposinf(bind1(Prim::real, {a}, {}, loc), loc) : none_of(a, loc);
  return equal(a, kInf, loc);
}
Array isneginf(const ArrayLike& x, SourceLoc loc) {
  Array a = own(x, loc);
  if (!is_float(a.dtype())) return is_complex(a.dtype()) ? isneginf(bind1(Prim::real, {a}, {}, loc), loc) : none_of(a, loc);
  return equal(a, -kInf, loc);
}

// log(2) and log(10) enter as weak literals, so they take x's dtype: log(2) rounded to x's precision,
// as JAX's lax.log of a constant of x's dtype.
Array log2(const ArrayLike& x, SourceLoc loc) { return divide(log(as_inexact(x, loc), loc), std::log(2.0), loc); }
Array log10(const ArrayLike& x, SourceLoc loc) { return divide(log(as_inexact(x, loc), loc), std::log(10.0), loc); }

Array hypot(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  ArrayLike xs[] = {x, y};
  PromotedType t = detail::promote(xs);
  if (is_complex(t.dtype)) {
    std::vector<AbstractArray> avals{x.aval(), y.aval()};
    op_error(ErrorKind::Type, "hypot", avals, loc, "hypot takes real operands (use abs of a complex number)");
  }
  const DType d = is_float(t.dtype) ? t.dtype : default_float;
  std::vector<Array> a = detail::elementwise_operands("hypot", xs, loc, &d);
  Array ax = abs(a[0], loc), ay = abs(a[1], loc);
  Array big = maximum(ax, ay, loc), small = minimum(ax, ay, loc);
  // big * sqrt(1 + (small / big)^2); a zero `big` divides by 1 instead (the result is 0 there,
  // and the derivative stays finite).
  Array ratio = divide(small, where(equal(big, 0, loc), 1, big, loc), loc);
  Array h = multiply(big, sqrt(add(square(ratio, loc), 1, loc), loc), loc);
  return where(logical_or(isinf(ax, loc), isinf(ay, loc), loc), kInf, h, loc);
}

Array isclose(const ArrayLike& a, const ArrayLike& b, double rtol, double atol, bool equal_nan, SourceLoc loc) {
  ArrayLike xs[] = {a, b};
  std::vector<Array> v = detail::elementwise_operands("isclose", xs, loc);
  const Array &x = v[0], &y = v[1];
  if (!is_inexact(x.dtype())) return equal(x, y, loc);
  Array close = less_equal(abs(subtract(x, y, loc), loc), add(multiply(abs(y, loc), rtol, loc), atol, loc), loc);
  // Infinities: close only to the same infinity. NaN: close to nothing, or to NaN with equal_nan.
  Array any_inf = logical_or(isinf(x, loc), isinf(y, loc), loc);
  close = where(any_inf, equal(x, y, loc), close, loc);
  Array nan_x = isnan(x, loc), nan_y = isnan(y, loc);
  close = logical_and(close, logical_not(logical_or(nan_x, nan_y, loc), loc), loc);
  if (equal_nan) close = logical_or(close, logical_and(nan_x, nan_y, loc), loc);
  return close;
}

Array allclose(const ArrayLike& a, const ArrayLike& b, double rtol, double atol, bool equal_nan, SourceLoc loc) {
  return all(isclose(a, b, rtol, atol, equal_nan, loc), {}, false, loc);
}

}  // namespace fluxion
