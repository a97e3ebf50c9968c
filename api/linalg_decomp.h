// fx::linalg: matrix decompositions, solves and norms (jax.numpy.linalg / jax.lax.linalg names),
// batched over leading dims, float32/float64 (integer operands are promoted to float32):
//
//   auto L = fx::linalg::cholesky(a);                 L L^T = a (a symmetric positive definite)
//   auto x = fx::linalg::triangular_solve(L, b);      L x = b (options: upper, transpose, right side)
//   auto [lu, pivots, perm] = fx::linalg::lu(a);      P a = L U packed in lu; perm[i]: row of a in P a
//   auto x = fx::linalg::solve(a, b);                 a x = b; b [..., n] (vector) or [..., n, k]
//   fx::linalg::inv(a); fx::linalg::det(a); auto [sign, logabsdet] = fx::linalg::slogdet(a);
//   auto [q, r] = fx::linalg::qr(a);                  reduced (full_matrices: complete q)
//   auto [w, v] = fx::linalg::eigh(a);                ascending eigenvalues, eigenvectors in columns
//   auto [u, s, vh] = fx::linalg::svd(a);             descending singular values
//   fx::linalg::norm(x); norm(x, 1); norm(m, "fro"); norm(m, "nuc"); norm(m, 2); norm(x, 3.0, {0})
//   fx::linalg::lstsq(a, b); fx::linalg::matrix_power(a, -3);
//
// Bad input: a non-square matrix, a rank below 2 or a dtype that is not float is a ShapeError/
// TypeError naming the op and the line. A matrix that is not positive definite (cholesky) or is
// singular (solve, inv) is a ValueError when the call runs eagerly on concrete values; traced (jit,
// grad, vmap) the result holds NaN or inf instead, as in JAX (the values are not known while
// tracing). Derivatives and their degenerate cases: docs/linalg.md.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "api/elementwise.h"
#include "ir/array.h"

namespace fluxion::linalg {

Array cholesky(const ArrayLike& a, FLUXION_LOC);

/// lax.linalg.triangular_solve's options.
struct Triangular {
  bool left_side = true;       // solve op(a) x = b; false: x op(a) = b
  bool lower = true;           // a's lower triangle is read (else the upper)
  bool transpose_a = false;    // op(a) = a^T
  bool unit_diagonal = false;  // a's diagonal is taken as ones
};
/// A vector b ([..., n] for a [..., n, n]) is solved as one column.
Array triangular_solve(const ArrayLike& a, const ArrayLike& b, Triangular options = {}, FLUXION_LOC);

std::tuple<Array, Array, Array> lu(const ArrayLike& a, FLUXION_LOC);
Array solve(const ArrayLike& a, const ArrayLike& b, FLUXION_LOC);
Array inv(const ArrayLike& a, FLUXION_LOC);
Array det(const ArrayLike& a, FLUXION_LOC);
std::pair<Array, Array> slogdet(const ArrayLike& a, FLUXION_LOC);
std::pair<Array, Array> qr(const ArrayLike& a, bool full_matrices = false, FLUXION_LOC);
/// a is symmetrized, (a + a^T) / 2, as jnp.linalg.eigh does.
std::pair<Array, Array> eigh(const ArrayLike& a, FLUXION_LOC);
std::tuple<Array, Array, Array> svd(const ArrayLike& a, bool full_matrices = false, FLUXION_LOC);

/// numpy's `ord`: a number (1, 2, inf, -inf, p) or "fro" / "nuc"; none: the 2-norm of a vector,
/// Frobenius of a matrix.
struct NormOrder {
  std::optional<double> p;
  std::string name;
  NormOrder() = default;
  NormOrder(double v) : p(v) {}             // NOLINT
  NormOrder(int v) : p(double(v)) {}        // NOLINT
  NormOrder(const char* s) : name(s) {}     // NOLINT
};
/// Over `axes` (one axis: a vector norm; two: a matrix norm); none: every axis of a 1-D or 2-D x.
Array norm(const ArrayLike& x, NormOrder ord = {}, std::vector<int64_t> axes = {}, bool keepdims = false, FLUXION_LOC);
/// The minimum-norm least-squares solution of a x = b (through the SVD; singular values below
/// rcond * max(s) count as zero; rcond < 0: eps * max(m, n), numpy's default).
Array lstsq(const ArrayLike& a, const ArrayLike& b, double rcond = -1, FLUXION_LOC);
/// a^n by repeated squaring; n < 0 inverts first; n = 0 is the identity.
Array matrix_power(const ArrayLike& a, int64_t n, FLUXION_LOC);

}  // namespace fluxion::linalg
