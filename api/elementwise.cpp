#include "api/elementwise.h"

#include "api/operands.h"
#include "ir/trace.h"

namespace fluxion {
namespace {
using detail::elementwise_operands;

// Float-valued unary math: integer and bool inputs are promoted to float32 first (jax.numpy).
Array unary_float(Prim p, const ArrayLike& x, SourceLoc loc, const Params& params = {}) {
  DType d = x.dtype();
  bool weak = x.weak();
  if (!is_inexact(d)) d = default_float;
  Array a = detail::as_array(x, d, weak, loc);
  return bind1(p, {a}, params, loc);
}
// Unary ops that keep the operand's dtype.
Array unary_same(Prim p, const ArrayLike& x, SourceLoc loc, const Params& params = {}) {
  Array a = detail::as_array(x, detail::promote(std::span(&x, 1)).dtype, x.weak(), loc);
  return bind1(p, {a}, params, loc);
}
Array binary(Prim p, std::string_view op, const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  ArrayLike xs[] = {x, y};
  std::vector<Array> a = elementwise_operands(op, xs, loc);
  return bind1(p, {a[0], a[1]}, {}, loc);
}
// Binary ops whose result is float even for integer operands (true division, atan2, pow).
Array binary_float(Prim p, std::string_view op, const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  ArrayLike xs[] = {x, y};
  PromotedType t = detail::promote(xs);
  DType d = is_inexact(t.dtype) ? t.dtype : default_float;
  std::vector<Array> a = elementwise_operands(op, xs, loc, &d);
  if (t.weak) {  // keep weak-ness when both operands were weak
    a[0] = detail::convert(a[0], d, true, loc);
    a[1] = detail::convert(a[1], d, true, loc);
  }
  return bind1(p, {a[0], a[1]}, {}, loc);
}
[[noreturn]] void type_error(std::string_view op, std::initializer_list<ArrayLike> xs, SourceLoc loc,
                             std::string_view detail) {
  std::vector<AbstractArray> avals;
  for (const ArrayLike& x : xs) avals.push_back(x.aval());
  op_error(ErrorKind::Type, op, avals, loc, detail);
}
}  // namespace

Array negative(const ArrayLike& x, SourceLoc loc) {
  if (x.dtype() == DType::bool_) type_error("negative", {x}, loc, "negative of a bool array; use logical_not");
  return unary_same(Prim::neg, x, loc);
}
Array sign(const ArrayLike& x, SourceLoc loc) { return unary_same(Prim::sign, x, loc); }
Array floor(const ArrayLike& x, SourceLoc loc) {
  if (!is_inexact(x.dtype())) return detail::as_array(x, x.dtype(), x.weak(), loc);  // complex: the prim's TypeError
  return unary_float(Prim::floor, x, loc);
}
Array ceil(const ArrayLike& x, SourceLoc loc) {
  if (!is_inexact(x.dtype())) return detail::as_array(x, x.dtype(), x.weak(), loc);  // complex: the prim's TypeError
  return unary_float(Prim::ceil, x, loc);
}
Array round(const ArrayLike& x, SourceLoc loc) {
  if (!is_inexact(x.dtype())) return detail::as_array(x, x.dtype(), x.weak(), loc);  // complex: the prim's TypeError
  return unary_float(Prim::round, x, loc, Params{{"rounding_method", int64_t(1)}});
}
Array isfinite(const ArrayLike& x, SourceLoc loc) {
  if (is_complex(x.dtype())) {  // both parts finite
    Array a = detail::as_array(x, x.dtype(), false, loc);
    return logical_and(isfinite(bind1(Prim::real, {a}, {}, loc), loc), isfinite(bind1(Prim::imag, {a}, {}, loc), loc), loc);
  }
  if (!is_float(x.dtype())) {
    Array a = detail::as_array(x, x.dtype(), false, loc);
    return bind1(Prim::ne, {a, a}, {}, loc) == false;  // all true, with a's shape
  }
  return unary_float(Prim::is_finite, x, loc);
}
#define FLUXION_X(fn, prim) \
  Array fn(const ArrayLike& x, SourceLoc loc) { return unary_float(Prim::prim, x, loc); }
FLUXION_FLOAT_UNARY_FUNCTIONS(FLUXION_X)
#undef FLUXION_X

Array digamma(const ArrayLike& x, SourceLoc loc) { return polygamma(0, x, loc); }
Array polygamma(int64_t m, const ArrayLike& x, SourceLoc loc) {
  if (m < 0) type_error("polygamma", {x}, loc, "the order m must be >= 0, got " + std::to_string(m));
  return unary_float(Prim::polygamma, x, loc, Params{{"m", m}});
}
Array abs(const ArrayLike& x, SourceLoc loc) {
  if (x.dtype() == DType::bool_) return detail::as_array(x, DType::bool_, false, loc);
  return unary_same(Prim::abs, x, loc);
}
Array square(const ArrayLike& x, SourceLoc loc) { return integer_pow(x, 2, loc); }
Array reciprocal(const ArrayLike& x, SourceLoc loc) { return divide(1, x, loc); }
Array logical_not(const ArrayLike& x, SourceLoc loc) {
  Array a = detail::as_array(x, DType::bool_, false, loc);
  return bind1(Prim::not_, {a}, {}, loc);
}
Array bitwise_not(const ArrayLike& x, SourceLoc loc) {
  if (is_inexact(x.dtype())) type_error("bitwise_not", {x}, loc, "expects a bool or integer dtype");
  return unary_same(Prim::not_, x, loc);
}
Array integer_pow(const ArrayLike& x, int64_t n, SourceLoc loc) {
  if (x.dtype() == DType::bool_) type_error("integer_pow", {x}, loc, "expects a numeric dtype");
  if (n < 0 && !is_inexact(x.dtype())) return unary_float(Prim::integer_pow, x, loc, Params{{"y", n}});
  return unary_same(Prim::integer_pow, x, loc, Params{{"y", n}});
}
Array stop_gradient(const ArrayLike& x, SourceLoc loc) { return unary_same(Prim::stop_gradient, x, loc); }

// ---- binary -------------------------------------------------------------------------------------
Array add(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  ArrayLike xs[] = {x, y};
  if (detail::promote(xs).dtype == DType::bool_) return binary(Prim::or_, "add", x, y, loc);
  return binary(Prim::add, "add", x, y, loc);
}
Array subtract(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  ArrayLike xs[] = {x, y};
  if (detail::promote(xs).dtype == DType::bool_)
    type_error("subtract", {x, y}, loc, "subtraction of bool arrays; use logical_xor");
  return binary(Prim::sub, "subtract", x, y, loc);
}
Array multiply(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  ArrayLike xs[] = {x, y};
  if (detail::promote(xs).dtype == DType::bool_) return binary(Prim::and_, "multiply", x, y, loc);
  return binary(Prim::mul, "multiply", x, y, loc);
}
Array divide(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  return binary_float(Prim::div, "divide", x, y, loc);
}
Array floor_divide(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  ArrayLike xs[] = {x, y};
  PromotedType t = detail::promote(xs);
  if (t.dtype == DType::bool_) type_error("floor_divide", {x, y}, loc, "expects numeric operands");
  std::vector<Array> a = elementwise_operands("floor_divide", xs, loc);
  if (is_float(t.dtype)) {
    // As jnp.floor_divide (CPython's float_divmod): from the remainder, so that x // y and x % y
    // agree -- 1.0 // 0.1 is 9.0 since 1.0 % 0.1 is 0.0999..., where floor(1.0 / 0.1) rounds to
    // 10 -- and x // 0.0 is NaN. The quotient is rounded as lax.round rounds (away from zero).
    Array mod = bind1(Prim::rem, {a[0], a[1]}, {}, loc);
    Array div = bind1(Prim::div, {subtract(a[0], mod, loc), a[1]}, {}, loc);
    Array step = logical_and(not_equal(mod, 0, loc), not_equal(sign(a[1], loc), sign(mod, loc), loc), loc);
    return bind1(Prim::round, {where(step, subtract(div, 1, loc), div, loc)}, Params{{"rounding_method", int64_t(0)}}, loc);
  }
  // Integer floor division, as jnp.floor_divide: truncate (lax.div: x / 0 == -1, INT_MIN / -1 ==
  // INT_MIN), then step down where the signs differ and it was inexact. The signs are compared with
  // sign(), so a zero divisor counts as differing: [7, -7] // 0 == [-2, -2], as in JAX.
  Array q = bind1(Prim::div, {a[0], a[1]}, {}, loc);
  if (is_unsigned_int(t.dtype)) return q;
  Array r = bind1(Prim::rem, {a[0], a[1]}, {}, loc);
  Array fix = logical_and(not_equal(r, 0, loc), not_equal(sign(a[0], loc), sign(a[1], loc), loc), loc);
  return where(fix, subtract(q, 1, loc), q, loc);
}

namespace {
// jnp.remainder and jnp.fmod divide integers by 1 where the divisor is 0, so x % 0 == 0.
Array nonzero_divisor(const Array& y, SourceLoc loc) {
  if (is_inexact(y.dtype()) || y.dtype() == DType::bool_) return y;
  return where(equal(y, 0, loc), 1, y, loc);
}
}  // namespace

Array fmod(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  ArrayLike xs[] = {x, y};
  std::vector<Array> a = elementwise_operands("fmod", xs, loc);
  return bind1(Prim::rem, {a[0], nonzero_divisor(a[1], loc)}, {}, loc);
}
Array remainder(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  ArrayLike xs[] = {x, y};
  std::vector<Array> a = elementwise_operands("remainder", xs, loc);
  const Array d = nonzero_divisor(a[1], loc);
  Array r = bind1(Prim::rem, {a[0], d}, {}, loc);
  if (is_unsigned_int(r.dtype())) return r;
  Array fix = logical_and(not_equal(r, 0, loc), not_equal(less(r, 0, loc), less(d, 0, loc), loc), loc);
  return where(fix, add(r, d, loc), r, loc);
}
Array power(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  // A C++ integer exponent is static: integer_pow (exact, and the cheap derivative).
  if (y.is_scalar() && !is_inexact(y.scalar_kind())) return integer_pow(x, y.scalar_int(), loc);
  ArrayLike xs[] = {x, y};
  PromotedType t = detail::promote(xs);
  if (!is_inexact(t.dtype)) {
    type_error("power", {x, y}, loc,
               "integer arrays raised to integer array powers are not supported; use a static C++ integer "
               "exponent (integer_pow) or convert to float");
  }
  return binary_float(Prim::pow, "power", x, y, loc);
}
Array pow(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) { return power(x, y, loc); }
Array maximum(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  return binary(Prim::max, "maximum", x, y, loc);
}
Array minimum(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  return binary(Prim::min, "minimum", x, y, loc);
}
Array arctan2(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  return binary_float(Prim::atan2, "arctan2", x, y, loc);
}
Array logical_and(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  Array a = detail::as_array(x, DType::bool_, false, loc), b = detail::as_array(y, DType::bool_, false, loc);
  return binary(Prim::and_, "logical_and", a, b, loc);
}
Array logical_or(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  Array a = detail::as_array(x, DType::bool_, false, loc), b = detail::as_array(y, DType::bool_, false, loc);
  return binary(Prim::or_, "logical_or", a, b, loc);
}
Array logical_xor(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  Array a = detail::as_array(x, DType::bool_, false, loc), b = detail::as_array(y, DType::bool_, false, loc);
  return binary(Prim::xor_, "logical_xor", a, b, loc);
}
#define FLUXION_BITWISE(fn, prim)                                                              \
  Array fn(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {                 \
    if (is_float(x.dtype()) || is_float(y.dtype())) type_error(#fn, {x, y}, loc, "expects bool or integer operands"); \
    return binary(Prim::prim, #fn, x, y, loc);                                                 \
  }
FLUXION_BITWISE(bitwise_and, and_)
FLUXION_BITWISE(bitwise_or, or_)
FLUXION_BITWISE(bitwise_xor, xor_)
#undef FLUXION_BITWISE
#define FLUXION_COMPARE(fn, prim)                                                  \
  Array fn(const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {     \
    return binary(Prim::prim, #fn, x, y, loc);                                     \
  }
FLUXION_COMPARE(equal, eq)
FLUXION_COMPARE(not_equal, ne)
FLUXION_COMPARE(less, lt)
FLUXION_COMPARE(less_equal, le)
FLUXION_COMPARE(greater, gt)
FLUXION_COMPARE(greater_equal, ge)
#undef FLUXION_COMPARE

Array where(const ArrayLike& cond, const ArrayLike& x, const ArrayLike& y, SourceLoc loc) {
  ArrayLike cases[] = {x, y};
  PromotedType t = detail::promote(cases);
  ArrayLike all[] = {cond, x, y};
  Shape s = detail::broadcast_shapes("where", all, loc);
  Array c = detail::as_array(cond, DType::bool_, false, loc);
  Array a = detail::as_array(x, t.dtype, t.weak, loc), b = detail::as_array(y, t.dtype, t.weak, loc);
  if (c.ndim()) c = detail::broadcast(c, s, loc);
  if (a.ndim()) a = detail::broadcast(a, s, loc);
  if (b.ndim()) b = detail::broadcast(b, s, loc);
  if (s.rank() && c.ndim() == 0 && a.ndim() == 0 && b.ndim() == 0) a = detail::broadcast(a, s, loc);
  return bind1(Prim::select, {c, a, b}, {}, loc);
}

Array clip(const ArrayLike& x, const ArrayLike& lo, const ArrayLike& hi, SourceLoc loc) {
  return minimum(maximum(x, lo, loc), hi, loc);
}

// ---- operators ----------------------------------------------------------------------------------
Array operator-(const ArrayLike& x) { return negative(x, x.loc()); }
Array operator+(const ArrayLike& x, const ArrayLike& y) { return add(x, y, x.loc()); }
Array operator-(const ArrayLike& x, const ArrayLike& y) { return subtract(x, y, x.loc()); }
Array operator*(const ArrayLike& x, const ArrayLike& y) { return multiply(x, y, x.loc()); }
Array operator/(const ArrayLike& x, const ArrayLike& y) { return divide(x, y, x.loc()); }
Array operator%(const ArrayLike& x, const ArrayLike& y) { return remainder(x, y, x.loc()); }
Array operator==(const ArrayLike& x, const ArrayLike& y) { return equal(x, y, x.loc()); }
Array operator!=(const ArrayLike& x, const ArrayLike& y) { return not_equal(x, y, x.loc()); }
Array operator<(const ArrayLike& x, const ArrayLike& y) { return less(x, y, x.loc()); }
Array operator<=(const ArrayLike& x, const ArrayLike& y) { return less_equal(x, y, x.loc()); }
Array operator>(const ArrayLike& x, const ArrayLike& y) { return greater(x, y, x.loc()); }
Array operator>=(const ArrayLike& x, const ArrayLike& y) { return greater_equal(x, y, x.loc()); }
Array operator&(const ArrayLike& x, const ArrayLike& y) { return bitwise_and(x, y, x.loc()); }
Array operator|(const ArrayLike& x, const ArrayLike& y) { return bitwise_or(x, y, x.loc()); }
Array operator^(const ArrayLike& x, const ArrayLike& y) { return bitwise_xor(x, y, x.loc()); }
Array operator~(const ArrayLike& x) { return bitwise_not(x, x.loc()); }
Array& operator+=(Array& x, const ArrayLike& y) { return x = add(x, y, y.loc()); }
Array& operator-=(Array& x, const ArrayLike& y) { return x = subtract(x, y, y.loc()); }
Array& operator*=(Array& x, const ArrayLike& y) { return x = multiply(x, y, y.loc()); }
Array& operator/=(Array& x, const ArrayLike& y) { return x = divide(x, y, y.loc()); }

}  // namespace fluxion
