// Matrix structure with jax.numpy names: diagonals (diagonal, diag, trace), triangles (tri, tril,
// triu) and the Kronecker product (kron). Each is a composition of shape ops (a strided slice of the
// flattened matrix, a where against an iota mask, a product of reshaped operands), so every
// transformation sees through it; batch dims in front of the matrix dims come along.
//
//   fx::diagonal(m);  fx::diagonal(m, 1);  fx::trace(m);  fx::diag(v);  fx::tril(m, -1);
//
// Axes may be negative; bad ranks and axes are ShapeErrors naming the op and the caller's line.
#pragma once
#include <cstdint>

#include "api/elementwise.h"

namespace fluxion {

/// numpy diagonal: the elements x[..., i, i + offset] of the matrices over axis1 x axis2 (the
/// other axes first, in order, then the diagonal as the last axis; length 0 when the offset is
/// past the edge).
Array diagonal(const Array& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1, FLUXION_LOC);
/// numpy diag: a 1-D v gives the square matrix with v on diagonal k (zeros elsewhere); a 2-D v
/// gives its diagonal k. Other ranks are a ShapeError.
Array diag(const Array& v, int64_t k = 0, FLUXION_LOC);
/// numpy trace: the sum of diagonal(x, offset, axis1, axis2) along the diagonal, in sum's dtype
/// (bool and narrow integers accumulate in int32).
Array trace(const Array& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1, FLUXION_LOC);

/// numpy tri: an n x m array with ones at and below diagonal k (j <= i + k), zeros above.
Array tri(int64_t n, int64_t m = -1, int64_t k = 0, DType dtype = float32, FLUXION_LOC);
/// numpy tril / triu: x with the elements above (tril) / below (triu) diagonal k of its last two
/// axes set to zero. Rank below 2 is a ShapeError.
Array tril(const Array& x, int64_t k = 0, FLUXION_LOC);
Array triu(const Array& x, int64_t k = 0, FLUXION_LOC);

/// numpy kron: the Kronecker product. The operand of lower rank gets leading axes of size 1; the
/// result's axis d has size a.shape[d] * b.shape[d], with out[i * b_d + j] = a[i] * b[j] along each.
Array kron(const ArrayLike& a, const ArrayLike& b, FLUXION_LOC);

}  // namespace fluxion
