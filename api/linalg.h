// Products and contractions (jax.numpy names): matmul, dot, vdot, inner, outer, tensordot, einsum.
// Each promotes its operands with JAX's rules and emits one dot_general per pairwise contraction
// (plus transpose / reduce_sum where einsum needs them). Errors name the op, the operands' types
// and the caller's line, e.g.
//   ShapeError: matmul(f32[2,3], f32[4,5]) at model.cpp:12: contracting dimensions differ (3 vs 4)
#pragma once
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "api/elementwise.h"
#include "ir/array.h"

namespace fluxion {

/// numpy matmul (the @ operator). 1-D operands are promoted to a matrix (a row for the left, a
/// column for the right) and that dimension is removed from the result; leading (batch) dims
/// broadcast by numpy rules. Scalars are a ValueError (use multiply).
Array matmul(const ArrayLike& a, const ArrayLike& b, FLUXION_LOC);
/// matmul with jax.lax.dot_general's preferred_element_type: the products accumulate in, and the
/// result has, dtype `preferred_element_type` -- bfloat16/float16 operands giving a float32 result
/// (mixed precision), never rounded to the operands' dtype in between. Gradients come back in the
/// operands' dtype.
Array matmul(const ArrayLike& a, const ArrayLike& b, DType preferred_element_type, FLUXION_LOC);

/// numpy dot: scalars multiply; 1-D.1-D is the inner product; otherwise the sum over the last axis
/// of `a` and the second-to-last of `b` (the only axis when `b` is 1-D), giving
/// shape a[:-1] + b[:-2] + b[-1:].
Array dot(const ArrayLike& a, const ArrayLike& b, FLUXION_LOC);
/// dot with preferred_element_type (as matmul's).
Array dot(const ArrayLike& a, const ArrayLike& b, DType preferred_element_type, FLUXION_LOC);

/// numpy vdot for operands of equal shape: the sum of all elementwise products, a scalar.
/// (Operands of equal size but different shapes are a ShapeError: reshape them first.)
Array vdot(const ArrayLike& a, const ArrayLike& b, FLUXION_LOC);

/// numpy inner: the sum over the last axes of both; shape a[:-1] + b[:-1]. Scalars multiply.
Array inner(const ArrayLike& a, const ArrayLike& b, FLUXION_LOC);

/// numpy outer of vectors (0-d operands count as length 1): out[i, j] = a[i] * b[j].
/// Operands of rank above 1 are a ShapeError (numpy would flatten them: reshape them first).
Array outer(const ArrayLike& a, const ArrayLike& b, FLUXION_LOC);

/// numpy tensordot with explicit axis lists: contracts a_axes[i] of `a` with b_axes[i] of `b`
/// (negative axes count from the end); the result has a's free dims, then b's.
Array tensordot(const ArrayLike& a, const ArrayLike& b, const std::vector<int64_t>& a_axes,
                const std::vector<int64_t>& b_axes, FLUXION_LOC);
/// tensordot(a, b, n): the last n axes of `a` against the first n of `b` (numpy's default n = 2).
Array tensordot(const ArrayLike& a, const ArrayLike& b, int64_t axes = 2, FLUXION_LOC);

/// An einsum subscript string together with the caller's line (einsum is variadic, so the line
/// rides on its first parameter).
struct EinsumSpec {
  std::string_view text;
  SourceLoc loc;
  EinsumSpec(const char* s, std::source_location l = std::source_location::current())  // NOLINT
      : text(s), loc(l) {}
  EinsumSpec(std::string_view s, std::source_location l = std::source_location::current())  // NOLINT
      : text(s), loc(l) {}
  EinsumSpec(const std::string& s, std::source_location l = std::source_location::current())  // NOLINT
      : text(s), loc(l) {}
};

/// numpy einsum over any number of operands: "ij,jk->ik" (explicit output) or "ij,jk" (implicit:
/// the labels that occur once, in alphabetical order). "..." stands for the same leading dims in
/// every operand that uses it (they must agree exactly, no size-1 broadcasting). Labels are ASCII
/// letters. A label repeated within one operand (a trace or diagonal) is a ValueError. Operands
/// are contracted pairwise, left to right; a label is summed away as soon as no later operand
/// and not the output needs it.
Array einsum(const EinsumSpec& spec, const std::vector<ArrayLike>& operands);
template <class... Xs>
  requires(sizeof...(Xs) > 0 && (std::is_convertible_v<const Xs&, ArrayLike> && ...))
Array einsum(const EinsumSpec& spec, const Xs&... xs) {
  return einsum(spec, std::vector<ArrayLike>{ArrayLike(xs)...});
}
inline Array einsum(const EinsumSpec& spec, const std::vector<Array>& operands) {
  return einsum(spec, std::vector<ArrayLike>(operands.begin(), operands.end()));
}

}  // namespace fluxion
