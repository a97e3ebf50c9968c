#include "api/linalg_decomp.h"

#include <cmath>
#include <limits>

#include "api/creation.h"
#include "api/indexing.h"
#include "api/linalg.h"
#include "api/operands.h"
#include "api/reductions.h"
#include "api/shape_ops.h"
#include "ir/trace.h"

namespace fluxion::linalg {
namespace {

// The operand as an array of a float dtype (integers and bools promote to float32).
Array as_float(const ArrayLike& x, SourceLoc loc) {
  return detail::as_array(x, is_float(x.dtype()) ? x.dtype() : default_float, false, loc);
}

[[noreturn]] void fail(ErrorKind kind, std::string_view op, const Array& a, SourceLoc loc, const std::string& detail) {
  AbstractArray aval = a.aval();
  op_error(kind, op, std::span<const AbstractArray>(&aval, 1), loc, detail);
}

void need_matrix(std::string_view op, const Array& a, bool square, SourceLoc loc) {
  if (a.ndim() < 2) fail(ErrorKind::Shape, op, a, loc, "expects a matrix (rank >= 2)");
  if (square && a.shape()[size_t(a.ndim() - 1)] != a.shape()[size_t(a.ndim() - 2)])
    fail(ErrorKind::Shape, op, a, loc, "expects square matrices in the last two dims");
}

// Eagerly (concrete values), a result that is not finite from an input that is: the typed error
// of a bad matrix. Traced, nothing can be known: the NaN/inf stays in the result (documented).
void check_eager(std::string_view op, const Array& input, const Array& result, SourceLoc loc, const char* what) {
  if (input.is_tracer() || result.is_tracer()) return;
  if (all(isfinite(result, loc), {}, false, loc).item<bool>() || !all(isfinite(input, loc), {}, false, loc).item<bool>())
    return;
  fail(ErrorKind::Value, op, input, loc, std::string(what) + " (under jit, grad or vmap the result is NaN/inf instead)");
}

Array diagonal_of(const Array& a, SourceLoc loc) {
  const int64_t n = a.shape()[size_t(a.ndim() - 1)];
  return sum(multiply(a, eye(n, a.dtype(), loc), loc), {-1}, false, loc);
}

Array swap_last(const Array& a, SourceLoc loc) { return swapaxes(a, -1, -2, loc); }

// numpy's batch broadcasting of a [..., n, n] against b [..., n, k]: both to one batch shape.
std::pair<Array, Array> broadcast_batches(const Array& a, const Array& b, SourceLoc loc) {
  Shape batch_a(std::vector<int64_t>(a.shape().begin(), a.shape().end() - 2));
  Shape batch_b(std::vector<int64_t>(b.shape().begin(), b.shape().end() - 2));
  ArrayLike xs[] = {zeros(batch_a, a.dtype(), loc), zeros(batch_b, b.dtype(), loc)};
  Shape batch = detail::broadcast_shapes("linalg.solve", xs, loc);
  auto full_shape = [&](const Array& x) {
    Shape s = batch;
    s.push_back(x.shape()[size_t(x.ndim() - 2)]);
    s.push_back(x.shape()[size_t(x.ndim() - 1)]);
    return broadcast_to(x, s, loc);
  };
  return {full_shape(a), full_shape(b)};
}

Array bind_triangular(const Array& a, const Array& b, Triangular o, SourceLoc loc) {
  Params p{{"left_side", o.left_side}, {"lower", o.lower}, {"transpose_a", o.transpose_a}, {"unit_diagonal", o.unit_diagonal}};
  return bind1(Prim::triangular_solve, {a, b}, p, loc);
}

// (-1)^(number of row swaps) from LAPACK pivots [..., n].
Array pivot_sign(const Array& pivots, DType dtype, SourceLoc loc) {
  Array swaps = sum(astype(not_equal(pivots, iota(DType::int32, pivots.shape(), pivots.ndim() - 1, loc), loc), DType::int32, loc), {-1},
                    false, loc);
  Array odd = equal(remainder(swaps, 2, loc), 1, loc);
  return where(odd, full(Shape{}, -1, dtype, loc), full(Shape{}, 1, dtype, loc), loc);
}

}  // namespace

Array cholesky(const ArrayLike& x, SourceLoc loc) {
  Array a = as_float(x, loc);
  Array l = bind1(Prim::cholesky, {a}, {}, loc);
  check_eager("linalg.cholesky", a, l, loc, "the matrix is not positive definite");
  return l;
}

Array triangular_solve(const ArrayLike& a_in, const ArrayLike& b_in, Triangular o, SourceLoc loc) {
  Array a = as_float(a_in, loc), b = detail::as_array(b_in, a.dtype(), false, loc);
  need_matrix("linalg.triangular_solve", a, true, loc);
  const bool vector = b.ndim() == a.ndim() - 1;
  if (vector) b = expand_dims(b, o.left_side ? -1 : -2, loc);
  auto [ab, bb] = broadcast_batches(a, b, loc);
  Array x = bind_triangular(ab, bb, o, loc);
  return vector ? squeeze(x, {o.left_side ? -1 : -2}, loc) : x;
}

std::tuple<Array, Array, Array> lu(const ArrayLike& x, SourceLoc loc) {
  Array a = as_float(x, loc);
  std::vector<Array> r = bind(Prim::lu, {a}, {}, loc);
  return {r[0], r[1], r[2]};
}

Array solve(const ArrayLike& a_in, const ArrayLike& b_in, SourceLoc loc) {
  Array a = as_float(a_in, loc), b = detail::as_array(b_in, a.dtype(), false, loc);
  need_matrix("linalg.solve", a, true, loc);
  const bool vector = b.ndim() == a.ndim() - 1;
  if (vector) b = expand_dims(b, -1, loc);
  if (b.ndim() < 2 || b.shape()[size_t(b.ndim() - 2)] != a.shape()[size_t(a.ndim() - 1)])
    fail(ErrorKind::Shape, "linalg.solve", b, loc, "b must have " + std::to_string(a.shape()[size_t(a.ndim() - 1)]) +
                                                      " rows to match a " + a.aval().str());
  auto [ab, bb] = broadcast_batches(a, b, loc);
  auto [packed, pivots, perm] = lu(ab, loc);
  if (!packed.is_tracer() && any(equal(diagonal_of(packed, loc), 0, loc), {}, false, loc).item<bool>())
    fail(ErrorKind::Value, "linalg.solve", a, loc, "the matrix is singular (under jit, grad or vmap the result is inf/NaN instead)");
  const int64_t nb = ab.ndim() - 2;
  Array pb = take(bb, perm, nb, nb, loc);  // the rows of b in P's order
  Array y = bind_triangular(packed, pb, {.lower = true, .unit_diagonal = true}, loc);
  Array sol = bind_triangular(packed, y, {.lower = false}, loc);
  return vector ? squeeze(sol, {-1}, loc) : sol;
}

Array inv(const ArrayLike& x, SourceLoc loc) {
  Array a = as_float(x, loc);
  need_matrix("linalg.inv", a, true, loc);
  return solve(a, broadcast_to(eye(a.shape()[size_t(a.ndim() - 1)], a.dtype(), loc), a.shape(), loc), loc);
}

Array det(const ArrayLike& x, SourceLoc loc) {
  Array a = as_float(x, loc);
  need_matrix("linalg.det", a, true, loc);
  auto [packed, pivots, perm] = lu(a, loc);
  return multiply(pivot_sign(pivots, a.dtype(), loc), prod(diagonal_of(packed, loc), {-1}, false, loc), loc);
}

std::pair<Array, Array> slogdet(const ArrayLike& x, SourceLoc loc) {
  Array a = as_float(x, loc);
  need_matrix("linalg.slogdet", a, true, loc);
  auto [packed, pivots, perm] = lu(a, loc);
  Array d = diagonal_of(packed, loc);
  Array sign_ = multiply(pivot_sign(pivots, a.dtype(), loc), prod(sign(d, loc), {-1}, false, loc), loc);
  return {sign_, sum(log(abs(d, loc), loc), {-1}, false, loc)};
}

std::pair<Array, Array> qr(const ArrayLike& x, bool full_matrices, SourceLoc loc) {
  std::vector<Array> r = bind(Prim::qr, {as_float(x, loc)}, Params{{"full_matrices", full_matrices}}, loc);
  return {r[0], r[1]};
}

std::pair<Array, Array> eigh(const ArrayLike& x, SourceLoc loc) {
  Array a = as_float(x, loc);
  need_matrix("linalg.eigh", a, true, loc);
  std::vector<Array> r = bind(Prim::eigh, {a}, {}, loc);  // the primitive symmetrizes a itself
  return {r[1], r[0]};
}

std::tuple<Array, Array, Array> svd(const ArrayLike& x, bool full_matrices, SourceLoc loc) {
  std::vector<Array> r = bind(Prim::svd, {as_float(x, loc)}, Params{{"full_matrices", full_matrices}}, loc);
  return {r[0], r[1], r[2]};
}

Array lstsq(const ArrayLike& a_in, const ArrayLike& b_in, double rcond, SourceLoc loc) {
  Array a = as_float(a_in, loc), b = detail::as_array(b_in, a.dtype(), false, loc);
  need_matrix("linalg.lstsq", a, false, loc);
  const int64_t m = a.shape()[size_t(a.ndim() - 2)], n = a.shape()[size_t(a.ndim() - 1)];
  const bool vector = b.ndim() == a.ndim() - 1;
  if (vector) b = expand_dims(b, -1, loc);
  auto [u, s, vh] = svd(a, false, loc);
  if (rcond < 0) rcond = (a.dtype() == DType::float32 ? 1.1920929e-07 : 2.220446049250313e-16) * double(std::max(m, n));
  Array cutoff = multiply(max(s, {-1}, true, loc), rcond, loc);
  Array keep = greater(s, cutoff, loc);
  Array s_inv = where(keep, divide(1.0, where(keep, s, 1.0, loc), loc), 0.0, loc);
  Array utb = matmul(swap_last(u, loc), b, loc);
  Array sol = matmul(swap_last(vh, loc), multiply(expand_dims(s_inv, -1, loc), utb, loc), loc);
  return vector ? squeeze(sol, {-1}, loc) : sol;
}

Array matrix_power(const ArrayLike& x, int64_t n, SourceLoc loc) {
  Array a = as_float(x, loc);
  need_matrix("linalg.matrix_power", a, true, loc);
  if (n == 0) return broadcast_to(eye(a.shape()[size_t(a.ndim() - 1)], a.dtype(), loc), a.shape(), loc);
  if (n < 0) {
    a = inv(a, loc);
    n = -n;
  }
  Array result, base = a;
  for (; n > 0; n >>= 1) {
    if (n & 1) result = result.valid() ? matmul(result, base, loc) : base;
    if (n > 1) base = matmul(base, base, loc);
  }
  return result;
}

}  // namespace fluxion::linalg

namespace fluxion::linalg {

Array norm(const ArrayLike& x, NormOrder ord, std::vector<int64_t> axes, bool keepdims, SourceLoc loc) {
  Array a = as_float(x, loc);
  auto bad = [&](const std::string& why) { fail(ErrorKind::Value, "linalg.norm", a, loc, why); };
  if (axes.empty()) {
    if (!ord.p && ord.name.empty() && !keepdims) return sqrt(sum(square(a, loc), {}, false, loc), loc);
    if (a.ndim() == 1) axes = {0};
    else if (a.ndim() == 2) axes = {0, 1};
    else bad("give the axes for an operand of rank above 2");
  }
  for (int64_t& ax : axes) ax = detail::normalize_axis("linalg.norm", ax, a.ndim(), a.aval(), loc);
  const Axes all_axes(axes);
  Array r;
  const double inf = std::numeric_limits<double>::infinity();
  if (axes.size() == 1) {
    if (!ord.name.empty()) bad("'" + ord.name + "' is a matrix norm; a vector norm takes a number");
    const double p = ord.p.value_or(2.0);
    Array m = abs(a, loc);
    if (p == inf) r = max(m, all_axes, true, loc);
    else if (p == -inf) r = min(m, all_axes, true, loc);
    else if (p == 0) r = sum(astype(not_equal(a, 0, loc), a.dtype(), loc), all_axes, true, loc);
    else if (p == 1) r = sum(m, all_axes, true, loc);
    else if (p == 2) r = sqrt(sum(square(a, loc), all_axes, true, loc), loc);
    else r = power(sum(power(m, p, loc), all_axes, true, loc), 1.0 / p, loc);
  } else if (axes.size() == 2) {
    const int64_t row = axes[0], col = axes[1];
    auto singular_values = [&] {  // the matrix axes moved last
      return std::get<1>(svd(moveaxis(moveaxis(a, row, -1, loc), col > row ? col - 1 : col, -1, loc), false, loc));
    };
    auto keep_both = [&](const Array& v) { return expand_dims(v, IntList{std::min(row, col), std::max(row, col)}, loc); };
    if (ord.name == "fro" || (ord.name.empty() && !ord.p)) r = sqrt(sum(square(a, loc), all_axes, true, loc), loc);
    else if (ord.name == "nuc") r = keep_both(sum(singular_values(), {-1}, false, loc));
    else if (!ord.name.empty()) bad("unknown norm order '" + ord.name + "' (fro, nuc or a number)");
    else if (*ord.p == 2 || *ord.p == -2)
      r = keep_both(*ord.p > 0 ? max(singular_values(), {-1}, false, loc) : min(singular_values(), {-1}, false, loc));
    else if (*ord.p == 1 || *ord.p == -1 || *ord.p == inf || *ord.p == -inf) {
      // 1: the largest column sum of |a|; inf: the largest row sum (negative: the smallest).
      const bool columns = std::abs(*ord.p) == 1;
      Array sums = sum(abs(a, loc), columns ? row : col, true, loc);
      r = *ord.p > 0 ? max(sums, columns ? col : row, true, loc) : min(sums, columns ? col : row, true, loc);
    } else {
      bad("matrix norms take fro, nuc, 1, -1, 2, -2, inf or -inf");
    }
  } else {
    bad("takes one axis (a vector norm) or two (a matrix norm)");
  }
  return keepdims ? r : squeeze(r, IntList(axes.begin(), axes.end()), loc);
}

}  // namespace fluxion::linalg
