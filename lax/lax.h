// lax: one function per primitive, without numpy's type promotion or broadcasting -- the ops that
// primitive rules (prims/) and program transformations (transforms/) are written with, as JAX's
// rules are written with jax.lax rather than jax.numpy.
//
// Each function binds its primitive as it is: operands must already have one dtype and agree in
// shape (elementwise primitives take rank-0 operands alongside any shape; that is the primitive's
// own rule). A rule that gets a shape or a dtype wrong therefore fails in the primitive's shape
// rule, naming the primitive and the user's line, instead of being broadcast or converted into a
// silently different computation. The numpy-style layer users call is api/.
//
// The operators (x * y, t * 2.0, 1 - y) mean the same functions; a C++ number next to an array is
// a rank-0 literal of that array's dtype and weak type. They live in this namespace: a rule file
// says `using namespace lax;`.
#pragma once
#include <cstdint>
#include <span>

#include "ir/trace.h"

namespace fluxion::lax {

// ---- elementwise --------------------------------------------------------------------------------
Array neg(const Array& x);
Array sign(const Array& x);
Array floor(const Array& x);
Array abs(const Array& x);
Array exp(const Array& x);
Array log(const Array& x);
Array sin(const Array& x);
Array cos(const Array& x);
Array sinh(const Array& x);
Array cosh(const Array& x);
Array rsqrt(const Array& x);
Array integer_pow(const Array& x, int64_t n);
/// The m-th derivative of digamma; polygamma(0, x) is digamma.
Array polygamma(int64_t m, const Array& x);
/// The parts of a complex array (real dtypes: c64 -> f32), its conjugate, and re + i im.
Array real(const Array& x);
Array imag(const Array& x);
Array conj(const Array& x);
Array complex(const Array& re, const Array& im);

Array add(const Array& x, const Array& y);
Array sub(const Array& x, const Array& y);
Array mul(const Array& x, const Array& y);
Array div(const Array& x, const Array& y);
Array pow(const Array& x, const Array& y);
Array max(const Array& x, const Array& y);
Array min(const Array& x, const Array& y);
/// and of bool (or integer) operands.
Array bitwise_and(const Array& x, const Array& y);

Array eq(const Array& x, const Array& y);
Array ne(const Array& x, const Array& y);
Array lt(const Array& x, const Array& y);
Array le(const Array& x, const Array& y);
Array gt(const Array& x, const Array& y);
Array ge(const Array& x, const Array& y);

/// on_true where pred, else on_false (pred bool; the cases of one dtype).
Array select(const Array& pred, const Array& on_true, const Array& on_false);
/// x as `dtype` (nothing is emitted if x already has that dtype and weak type).
Array convert(const Array& x, DType dtype, bool weak = false);

// ---- literals and fills -------------------------------------------------------------------------
/// A rank-0 literal of x's dtype and weak type.
Array scalar_like(const Array& x, double value);
/// An array of `shape` filled with `value` (one broadcast_in_dim of the literal). `loc` is for
/// callers outside a rule (inside one, the eqn's location applies: ir/trace.h LocationScope).
Array full(const Shape& shape, const Literal& value, SourceLoc loc = {});
/// Zeros of the given type (not weakly typed).
Array zeros(const AbstractArray& aval, SourceLoc loc = {});
Array zeros_like(const Array& x, SourceLoc loc = {});

// ---- structure ----------------------------------------------------------------------------------
Array broadcast_in_dim(const Array& x, const Shape& shape, const IntList& broadcast_dimensions);
Array reshape(const Array& x, const Shape& new_sizes);
Array transpose(const Array& x, const IntList& permutation);
Array reduce_sum(const Array& x, const IntList& axes);
/// Sums every axis of x into a rank-0 array.
Array reduce_sum_all(const Array& x);
Array iota(DType dtype, const Shape& shape, int64_t dimension);
Array slice(const Array& x, const IntList& start, const IntList& limit);
Array slice(const Array& x, const IntList& start, const IntList& limit, const IntList& strides);
Array pad(const Array& x, const Array& padding_value, const IntList& padding_config);

// ---- operators ----------------------------------------------------------------------------------
Array operator-(const Array& x);
Array operator+(const Array& x, const Array& y);
Array operator-(const Array& x, const Array& y);
Array operator*(const Array& x, const Array& y);
Array operator/(const Array& x, const Array& y);
Array operator+(const Array& x, double c);
Array operator-(const Array& x, double c);
Array operator*(const Array& x, double c);
Array operator/(const Array& x, double c);
Array operator+(double c, const Array& x);
Array operator-(double c, const Array& x);
Array operator*(double c, const Array& x);
Array operator/(double c, const Array& x);

}  // namespace fluxion::lax
