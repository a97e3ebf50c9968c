// Elementwise math with numpy broadcasting and JAX type promotion (jax.numpy names), and the C++
// operators. Every function records the caller's line for error messages.
#pragma once
#include <source_location>

#include "ir/array.h"

namespace fluxion {

#define FLUXION_LOC ::fluxion::SourceLoc loc = std::source_location::current()

// ---- unary (integer inputs to float functions are promoted to float32, as in jax.numpy) -------
Array negative(const ArrayLike& x, FLUXION_LOC);
Array sign(const ArrayLike& x, FLUXION_LOC);
Array floor(const ArrayLike& x, FLUXION_LOC);
Array ceil(const ArrayLike& x, FLUXION_LOC);
Array round(const ArrayLike& x, FLUXION_LOC);  // half to even, as numpy
Array isfinite(const ArrayLike& x, FLUXION_LOC);
// The float math functions, one line each: X(name, the primitive it binds). Each is
//   Array name(const ArrayLike& x, SourceLoc loc = <the caller's line>);
#define FLUXION_FLOAT_UNARY_FUNCTIONS(X)                                                            \
  X(exp, exp) X(exp2, exp2) X(log, log) X(log1p, log1p) X(expm1, expm1) X(tanh, tanh)               \
  X(sigmoid, logistic) X(sin, sin) X(cos, cos) X(tan, tan) X(arcsin, asin) X(arccos, acos)          \
  X(arctan, atan) X(sinh, sinh) X(cosh, cosh) X(arcsinh, asinh) X(arccosh, acosh) X(arctanh, atanh) \
  X(sqrt, sqrt) X(rsqrt, rsqrt) X(cbrt, cbrt) X(erf, erf) X(lgamma, lgamma)
#define FLUXION_X(name, prim) Array name(const ArrayLike& x, FLUXION_LOC);
FLUXION_FLOAT_UNARY_FUNCTIONS(FLUXION_X)
#undef FLUXION_X
Array abs(const ArrayLike& x, FLUXION_LOC);
Array digamma(const ArrayLike& x, FLUXION_LOC);
/// The m-th derivative of digamma (m >= 0, static).
Array polygamma(int64_t m, const ArrayLike& x, FLUXION_LOC);
Array square(const ArrayLike& x, FLUXION_LOC);
Array reciprocal(const ArrayLike& x, FLUXION_LOC);
Array logical_not(const ArrayLike& x, FLUXION_LOC);
Array bitwise_not(const ArrayLike& x, FLUXION_LOC);
/// x ** n for a static integer n (lax.integer_pow): exact for integers, cheap to differentiate.
Array integer_pow(const ArrayLike& x, int64_t n, FLUXION_LOC);
/// The identity whose derivative is zero.
Array stop_gradient(const ArrayLike& x, FLUXION_LOC);

// ---- binary -------------------------------------------------------------------------------------
Array add(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array subtract(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array multiply(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array divide(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);  // true division
Array floor_divide(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array remainder(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);  // numpy mod: sign of y
Array fmod(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);       // C fmod: sign of x
Array power(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array pow(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array maximum(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array minimum(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array arctan2(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array logical_and(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array logical_or(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array logical_xor(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array bitwise_and(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array bitwise_or(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array bitwise_xor(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array equal(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array not_equal(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array less(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array less_equal(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array greater(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
Array greater_equal(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);

// ---- compositions, as jax.numpy writes them (api/elementwise_composed.cpp) -----------------------
/// Elementwise tests (bool results): NaN; +-inf; +inf; -inf. Integer and bool operands are never
/// NaN or infinite; a complex value is NaN (infinite) when either part is.
Array isnan(const ArrayLike& x, FLUXION_LOC);
Array isinf(const ArrayLike& x, FLUXION_LOC);
Array isposinf(const ArrayLike& x, FLUXION_LOC);
Array isneginf(const ArrayLike& x, FLUXION_LOC);
/// Base-2 and base-10 logarithms, log(x) / log(2) and log(x) / log(10) in x's float dtype (as
/// jnp.log2 / jnp.log10 compute them: integers promote to float32).
Array log2(const ArrayLike& x, FLUXION_LOC);
Array log10(const ArrayLike& x, FLUXION_LOC);
/// sqrt(x^2 + y^2) without overflow or underflow in the squares (the larger magnitude factored
/// out); inf when either is infinite, even against NaN, as numpy. Differentiable, also at 0.
Array hypot(const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
/// |a - b| <= atol + rtol * |b| elementwise (numpy's isclose, not symmetric in a and b): equal
/// infinities are close, NaN is close to nothing unless `equal_nan`; integers compare exactly.
Array isclose(const ArrayLike& a, const ArrayLike& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false, FLUXION_LOC);
/// all(isclose(a, b, ...)): a bool[] array, so `if (fx::allclose(a, b))` reads its value.
Array allclose(const ArrayLike& a, const ArrayLike& b, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false, FLUXION_LOC);

/// where(cond, x, y): x where cond is true, else y (broadcasting all three).
Array where(const ArrayLike& cond, const ArrayLike& x, const ArrayLike& y, FLUXION_LOC);
/// clip(x, lo, hi) = minimum(maximum(x, lo), hi).
Array clip(const ArrayLike& x, const ArrayLike& lo, const ArrayLike& hi, FLUXION_LOC);

// ---- operators (the left operand's conversion records the line) ---------------------------------
Array operator-(const ArrayLike& x);
Array operator+(const ArrayLike& x, const ArrayLike& y);
Array operator-(const ArrayLike& x, const ArrayLike& y);
Array operator*(const ArrayLike& x, const ArrayLike& y);
Array operator/(const ArrayLike& x, const ArrayLike& y);
Array operator%(const ArrayLike& x, const ArrayLike& y);
Array operator==(const ArrayLike& x, const ArrayLike& y);
Array operator!=(const ArrayLike& x, const ArrayLike& y);
Array operator<(const ArrayLike& x, const ArrayLike& y);
Array operator<=(const ArrayLike& x, const ArrayLike& y);
Array operator>(const ArrayLike& x, const ArrayLike& y);
Array operator>=(const ArrayLike& x, const ArrayLike& y);
Array operator&(const ArrayLike& x, const ArrayLike& y);
Array operator|(const ArrayLike& x, const ArrayLike& y);
Array operator^(const ArrayLike& x, const ArrayLike& y);
Array operator~(const ArrayLike& x);
// No operator!: as in Python, `!x` asks for the truth value (ConcretizationError on a tracer).
// Use fx::logical_not for the elementwise negation.
Array& operator+=(Array& x, const ArrayLike& y);
Array& operator-=(Array& x, const ArrayLike& y);
Array& operator*=(Array& x, const ArrayLike& y);
Array& operator/=(Array& x, const ArrayLike& y);

}  // namespace fluxion
