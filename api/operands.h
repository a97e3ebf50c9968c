// How the numpy-style API prepares operands for a primitive: JAX's type promotion (weak C++
// scalars included) and numpy broadcasting, written once and used by every op in api/.
#pragma once
#include <span>
#include <string_view>
#include <vector>

#include "ir/array.h"
#include "ir/trace.h"

namespace fluxion {

/// numpy broadcasting of `x` to `shape` (one broadcast_in_dim; nothing if already that shape).
Array broadcast_to(const ArrayLike& x, const Shape& shape,
                   SourceLoc loc = std::source_location::current());
/// numpy's astype (one convert_element_type; nothing if already that dtype).
Array astype(const ArrayLike& x, DType dtype, SourceLoc loc = std::source_location::current());

/// The dtype numpy/JAX would give an op over these operands.
DType result_type(std::span<const ArrayLike> xs);

namespace detail {

/// Joins the operands' types on the promotion lattice.
PromotedType promote(std::span<const ArrayLike> xs);
/// The operand as an array of `dtype` (a scalar becomes a 0-d array, a literal when traced).
Array as_array(const ArrayLike& x, DType dtype, bool weak, SourceLoc loc);
/// Converts an array if its dtype differs (keeping weak-ness as given).
Array convert(const Array& x, DType dtype, bool weak, SourceLoc loc);
/// The numpy broadcast of the operands' shapes; ShapeError naming `op` if incompatible.
Shape broadcast_shapes(std::string_view op, std::span<const ArrayLike> xs, SourceLoc loc);
/// Broadcasts an array to `shape` by numpy rules (one broadcast_in_dim of its dims onto the trailing
/// ones; nothing if it already has that shape). ShapeError if `shape` has a lower rank.
Array broadcast(const Array& x, const Shape& shape, SourceLoc loc);
/// Promotes to a common dtype (or `force` if given) and broadcasts to a common shape; rank-0
/// operands stay rank-0 because elementwise primitives broadcast them themselves.
std::vector<Array> elementwise_operands(std::string_view op, std::span<const ArrayLike> xs, SourceLoc loc,
                                        const DType* force = nullptr);
/// Normalises an axis (negative counts from the end) or throws ShapeError naming `op`.
int64_t normalize_axis(std::string_view op, int64_t axis, int rank, const AbstractArray& x, SourceLoc loc);

}  // namespace detail
}  // namespace fluxion
