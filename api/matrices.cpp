#include "api/matrices.h"

#include <algorithm>
#include <string>

#include "api/creation.h"
#include "api/operands.h"
#include "api/reductions.h"
#include "api/shape_ops.h"
#include "ir/dim_expr.h"

namespace fluxion {
namespace {

void need_matrix(std::string_view op, const Array& x, SourceLoc loc) {
  if (x.ndim() >= 2) return;
  AbstractArray a = x.aval();
  op_error(ErrorKind::Shape, op, std::span<const AbstractArray>(&a, 1), loc,
           "needs an array of rank 2 or more, got rank " + std::to_string(x.ndim()));
}

// The [n, m] mask of the positions (i, j) with j - i <= k (tril's) or >= k (triu's).
Array band_mask(int64_t n, int64_t m, int64_t k, bool lower, SourceLoc loc) {
  Array d = subtract(iota(int64, Shape{n, m}, 1, loc), iota(int64, Shape{n, m}, 0, loc), loc);
  return lower ? less_equal(d, k, loc) : greater_equal(d, k, loc);
}

Array triangle(std::string_view op, const Array& x, int64_t k, bool lower, SourceLoc loc) {
  need_matrix(op, x, loc);
  const Shape& s = x.shape();
  Array mask = band_mask(s[size_t(s.rank() - 2)], s[size_t(s.rank() - 1)], k, lower, loc);
  return where(mask, x, zeros_like(x, loc), loc);
}

}  // namespace

Array diagonal(const Array& x, int64_t offset, int64_t axis1, int64_t axis2, SourceLoc loc) {
  need_matrix("diagonal", x, loc);
  const int r = x.ndim();
  const int64_t a1 = detail::normalize_axis("diagonal", axis1, r, x.aval(), loc);
  const int64_t a2 = detail::normalize_axis("diagonal", axis2, r, x.aval(), loc);
  if (a1 == a2) {
    AbstractArray a = x.aval();
    op_error(ErrorKind::Shape, "diagonal", std::span<const AbstractArray>(&a, 1), loc,
             "axis1 and axis2 must differ (both are " + std::to_string(a1) + ")");
  }
  // The other axes in order, then the two matrix axes; the matrix flattened to n * m elements, in
  // which the diagonal is every (m + 1)-th element from its first.
  IntList perm;
  Shape rest;
  for (int d = 0; d < r; ++d)
    if (d != a1 && d != a2) perm.push_back(d), rest.push_back(x.shape()[size_t(d)]);
  perm.push_back(a1);
  perm.push_back(a2);
  const int64_t n = x.shape()[size_t(a1)], m = x.shape()[size_t(a2)];
  if (is_symbolic_dim(n) || is_symbolic_dim(m)) {  // the slice below is laid out from the sizes
    AbstractArray a = x.aval();
    op_error(ErrorKind::Shape, "diagonal", std::span<const AbstractArray>(&a, 1), loc,
             "the matrix axes " + std::to_string(a1) + " and " + std::to_string(a2) +
                 " need concrete sizes: a symbolic one is not served (docs/shape_polymorphism.md)");
  }
  const int64_t len = std::max<int64_t>(0, offset >= 0 ? std::min(n, m - offset) : std::min(n + offset, m));
  Shape flat_shape = rest;
  flat_shape.push_back(n * m);
  Array flat = reshape(transpose(x, perm, loc), flat_shape, loc);
  IntList start(size_t(rest.rank() + 1), 0), limit = flat_shape.dims(), strides(size_t(rest.rank() + 1), 1);
  const int64_t first = len == 0 ? 0 : std::max<int64_t>(-offset, 0) * m + std::max<int64_t>(offset, 0);
  start.back() = first;
  limit.back() = len == 0 ? 0 : first + (len - 1) * (m + 1) + 1;
  strides.back() = m + 1;
  return slice(flat, start, limit, strides, loc);
}

Array diag(const Array& v, int64_t k, SourceLoc loc) {
  if (v.ndim() == 2) return diagonal(v, k, 0, 1, loc);
  if (v.ndim() != 1) {
    AbstractArray a = v.aval();
    op_error(ErrorKind::Shape, "diag", std::span<const AbstractArray>(&a, 1), loc,
             "takes a 1-D array (to build a matrix) or a 2-D one (to read its diagonal), got rank " +
                 std::to_string(v.ndim()));
  }
  // v on the main diagonal of an n x n matrix, then padded so that it lands on diagonal k.
  const int64_t n = v.shape()[0], up = std::max<int64_t>(k, 0), down = std::max<int64_t>(-k, 0);
  Array eye_mask = equal(iota(int32, Shape{n, n}, 0, loc), iota(int32, Shape{n, n}, 1, loc), loc);
  Array column = broadcast_to(reshape(v, Shape{n, 1}, loc), Shape{n, n}, loc);
  Array square = where(eye_mask, column, detail::as_array(0, v.dtype(), v.weak_type(), loc), loc);
  return pad(square, {{down, up}, {up, down}}, 0, loc);
}

Array trace(const Array& x, int64_t offset, int64_t axis1, int64_t axis2, SourceLoc loc) {
  return sum(diagonal(x, offset, axis1, axis2, loc), {-1}, false, loc);
}

Array tri(int64_t n, int64_t m, int64_t k, DType dtype, SourceLoc loc) {
  if (m < 0) m = n;
  if (n < 0) throw ValueError("ValueError: tri at " + loc.str() + ": negative size " + std::to_string(n));
  return astype(band_mask(n, m, k, true, loc), dtype, loc);
}
Array tril(const Array& x, int64_t k, SourceLoc loc) { return triangle("tril", x, k, true, loc); }
Array triu(const Array& x, int64_t k, SourceLoc loc) { return triangle("triu", x, k, false, loc); }

Array kron(const ArrayLike& a_in, const ArrayLike& b_in, SourceLoc loc) {
  ArrayLike xs[] = {a_in, b_in};
  const DType d = detail::promote(xs).dtype;
  Array a = detail::as_array(a_in, d, false, loc), b = detail::as_array(b_in, d, false, loc);
  const int r = std::max(a.ndim(), b.ndim());
  // a as [a0, 1, a1, 1, ...] times b as [1, b0, 1, b1, ...]: [a0, b0, a1, b1, ...], then each pair merged.
  Shape as, bs, out;
  for (int i = 0; i < r; ++i) {
    const int ia = i - (r - a.ndim()), ib = i - (r - b.ndim());
    const int64_t da = ia >= 0 ? a.shape()[size_t(ia)] : 1, db = ib >= 0 ? b.shape()[size_t(ib)] : 1;
    as.push_back(da), as.push_back(1);
    bs.push_back(1), bs.push_back(db);
    out.push_back(mul_dims(da, db));
  }
  return reshape(multiply(reshape(a, as, loc), reshape(b, bs, loc), loc), out, loc);
}

}  // namespace fluxion
