#include "api/sorting.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "api/creation.h"
#include "api/indexing.h"
#include "api/operands.h"
#include "api/reductions.h"
#include "api/shape_ops.h"
#include "ir/trace.h"

namespace fluxion {
namespace {

[[noreturn]] void fail(ErrorKind kind, std::string_view op, std::initializer_list<ArrayLike> xs, SourceLoc loc,
                       const std::string& detail) {
  std::vector<AbstractArray> avals;
  for (const ArrayLike& x : xs) avals.push_back(x.aval());
  op_error(kind, op, avals, loc, detail);
}

Array own(const ArrayLike& x, SourceLoc loc) {
  return detail::as_array(x, detail::promote(std::span(&x, 1)).dtype, x.weak(), loc);
}

void no_complex(std::string_view op, const ArrayLike& x, SourceLoc loc) {
  if (is_complex(x.dtype())) fail(ErrorKind::Type, op, {x}, loc, "complex numbers have no order here");
}

// p < q in numpy's sort order, where NaN comes after everything else.
Array sorts_before(const Array& p, const Array& q, SourceLoc loc) {
  if (!is_float(p.dtype())) return less(p, q, loc);
  return logical_or(less(p, q, loc), logical_and(isnan(q, loc), logical_not(isnan(p, loc), loc), loc), loc);
}

// lax.sort of several operands by the first num_keys, stable.
std::vector<Array> sort_by(const std::vector<Array>& xs, int64_t num_keys, int64_t axis, SourceLoc loc) {
  return bind(Prim::sort, xs, Params{{"dimension", axis}, {"is_stable", true}, {"num_keys", num_keys}}, loc);
}

// The flattened x sorted, the permutation that sorts it, and where each sorted element starts a
// new value (NaNs are one value).
struct Runs {
  Array sorted, perm, first;
};
Runs runs_of(const Array& x, SourceLoc loc) {
  Array flat = ravel(x, loc);
  const int64_t n = flat.size();
  std::vector<Array> s = sort_by({flat, iota(int32, Shape{n}, 0, loc)}, 1, 0, loc);
  Runs r{s[0], s[1], {}};
  if (n == 0) {
    r.first = zeros(Shape{0}, bool_, loc);
    return r;
  }
  Array cur = slice(r.sorted, {1}, {n}, loc), prev = slice(r.sorted, {0}, {n - 1}, loc);
  Array same = equal(cur, prev, loc);
  if (is_inexact(x.dtype())) same = logical_or(same, logical_and(isnan(cur, loc), isnan(prev, loc), loc), loc);
  r.first = concatenate({full(Shape{1}, true, loc), logical_not(same, loc)}, 0, loc);
  return r;
}

// The first `size` run starts of r scattered into [size] (the rest dropped): fill.at[run].set(values).
Array per_run(const Runs& r, const Array& values, const Array& fill, int64_t size, SourceLoc loc) {
  Array run = subtract(cumsum(r.first, 0, loc), 1, loc);
  Array target = where(r.first, run, size, loc);
  return at_set(broadcast_to(fill, Shape{size}, loc), target, values, 0, loc);
}

// Under a live trace every op is staged (also on a concrete x), so the count cannot be read.
void eager_only(std::string_view op, const Array& x, SourceLoc loc) {
  if (!x.is_tracer() && !is_tracing()) return;
  fail(ErrorKind::Concretization, op, {x}, loc,
       "the number of distinct values depends on the data, so the result has no static shape under a "
       "transformation (grad, vmap, jit, ...); give it one: fx::unique(x, size, fill_value) (jnp.unique's size=)");
}

}  // namespace

Array searchsorted(const ArrayLike& a_in, const ArrayLike& v_in, std::string_view side, SourceLoc loc) {
  if (side != "left" && side != "right")
    fail(ErrorKind::Value, "searchsorted", {a_in, v_in}, loc, "side must be \"left\" or \"right\"");
  if (a_in.shape().rank() != 1)
    fail(ErrorKind::Shape, "searchsorted", {a_in, v_in}, loc, "the sorted array must be 1-D");
  no_complex("searchsorted", a_in, loc);
  no_complex("searchsorted", v_in, loc);
  ArrayLike xs[] = {a_in, v_in};
  const DType d = detail::promote(xs).dtype;
  Array a = detail::as_array(a_in, d, false, loc), v = detail::as_array(v_in, d, false, loc);
  // v [..., 1] against a [n]: how many elements of a sort before v (left), or not after it (right).
  Array vv = expand_dims(v, -1, loc);
  Array count = side == "left" ? sorts_before(a, vv, loc) : logical_not(sorts_before(vv, a, loc), loc);
  return astype(sum(count, {-1}, false, loc), int32, loc);
}

std::pair<Array, Array> top_k(const ArrayLike& x_in, int64_t k, SourceLoc loc) {
  no_complex("top_k", x_in, loc);
  Array x = own(x_in, loc);
  if (x.ndim() == 0) fail(ErrorKind::Shape, "top_k", {x}, loc, "needs an array of rank 1 or more");
  const int64_t axis = x.ndim() - 1, n = x.shape()[size_t(axis)];
  if (k < 0 || k > n)
    fail(ErrorKind::Value, "top_k", {x}, loc,
         "k = " + std::to_string(k) + " is outside [0, " + std::to_string(n) + "], the size of the last axis");
  // Ascending by value, ties by descending index: the last k, reversed, are the k largest with the
  // lowest index first among equals (the sort puts NaN last, so it counts as the largest).
  std::vector<Array> s = sort_by({x, negative(iota(int32, x.shape(), axis, loc), loc)}, 2, axis, loc);
  IntList start(size_t(x.ndim()), 0), limit = x.shape().dims();
  start.back() = n - k;
  Array values = flip(slice(s[0], start, limit, loc), {axis}, loc);
  Array indices = negative(flip(slice(s[1], start, limit, loc), {axis}, loc), loc);
  return {values, indices};
}

Array quantile(const ArrayLike& x_in, const ArrayLike& q_in, std::optional<int64_t> axis, std::string_view method,
               bool keepdims, SourceLoc loc) {
  const std::string_view op = "quantile";
  no_complex(op, x_in, loc);
  if (method != "linear" && method != "lower" && method != "higher" && method != "nearest" && method != "midpoint")
    fail(ErrorKind::Value, op, {x_in, q_in}, loc,
         "method must be linear, lower, higher, nearest or midpoint, got \"" + std::string(method) + "\"");
  if (!q_in.is_scalar() && !is_float(q_in.dtype()) && !is_integer(q_in.dtype()))
    fail(ErrorKind::Type, op, {x_in, q_in}, loc, "q must be real numbers");
  const DType dt = is_float(x_in.dtype()) ? x_in.dtype() : default_float;
  const DType pt = dt == float64 ? float64 : float32;  // positions: at least float32, even for float16 data
  // Concrete quantiles are checked on the host (an op on them would be staged under a trace).
  std::vector<double> qs;
  if (q_in.is_scalar()) qs.push_back(q_in.scalar_double());
  else if (!q_in.array().is_tracer()) qs = q_in.array().to_vector<double>();
  for (double v : qs)
    if (!(v >= 0 && v <= 1))
      fail(ErrorKind::Value, op, {x_in, q_in}, loc, "quantiles must lie in [0, 1] (percentiles in [0, 100])");
  Array x = detail::as_array(x_in, dt, false, loc), q = detail::as_array(q_in, pt, false, loc);
  const int64_t ax = axis ? detail::normalize_axis(op, *axis, x.ndim(), x.aval(), loc) : 0;
  Array a = axis ? moveaxis(x, ax, -1, loc) : ravel(x, loc);
  const int64_t n = a.shape()[size_t(a.ndim() - 1)];
  Shape out_shape = q.shape();
  for (int d = 0; d < a.ndim() - 1; ++d) out_shape.push_back(a.shape()[size_t(d)]);
  Array result;
  if (n == 0) {
    result = full(out_shape, std::numeric_limits<double>::quiet_NaN(), dt, loc);
  } else {
    Array sorted = sort(a, -1, loc);
    Array pos = multiply(q, double(n - 1), loc), lo = floor(pos, loc), w = subtract(pos, lo, loc);
    Array lo_i = astype(clip(lo, 0, double(n - 1), loc), int32, loc);
    Array hi_i = astype(clip(ceil(pos, loc), 0, double(n - 1), loc), int32, loc);
    // take gives rest + q.shape; the q dims go in front.
    IntList perm;
    const int rest = a.ndim() - 1, qd = q.ndim();
    for (int d = 0; d < qd; ++d) perm.push_back(rest + d);
    for (int d = 0; d < rest; ++d) perm.push_back(d);
    Array lo_v = transpose(take(sorted, lo_i, -1, loc), perm, loc), hi_v = transpose(take(sorted, hi_i, -1, loc), perm, loc);
    Shape wq = q.shape();
    for (int d = 0; d < rest; ++d) wq.push_back(1);
    Array wb = astype(reshape(w, wq, loc), dt, loc);
    if (method == "lower") result = lo_v;
    else if (method == "higher") result = hi_v;
    else if (method == "nearest") result = where(less_equal(wb, 0.5, loc), lo_v, hi_v, loc);
    else if (method == "midpoint") result = multiply(add(lo_v, hi_v, loc), 0.5, loc);
    else  // exact positions (w == 0) take the element itself, so an infinite neighbour cannot make NaN
      result = where(equal(wb, 0, loc), lo_v, add(multiply(lo_v, subtract(1, wb, loc), loc), multiply(hi_v, wb, loc), loc), loc);
    result = where(any(isnan(a, loc), {-1}, false, loc), std::numeric_limits<double>::quiet_NaN(), result, loc);
  }
  if (keepdims) {
    Shape kept = q.shape();
    for (int d = 0; d < x.ndim(); ++d) kept.push_back(axis && d != ax ? x.shape()[size_t(d)] : 1);
    result = reshape(result, kept, loc);
  }
  return result;
}

Array percentile(const ArrayLike& x, const ArrayLike& p, std::optional<int64_t> axis, std::string_view method,
                 bool keepdims, SourceLoc loc) {
  if (p.is_scalar()) return quantile(x, p.scalar_double() / 100, axis, method, keepdims, loc);
  const DType pt = x.dtype() == float64 || p.dtype() == float64 ? float64 : float32;
  return quantile(x, divide(detail::as_array(p, pt, false, loc), 100, loc), axis, method, keepdims, loc);
}

Array median(const ArrayLike& x, std::optional<int64_t> axis, bool keepdims, SourceLoc loc) {
  return quantile(x, 0.5, axis, "linear", keepdims, loc);
}

Array unique(const ArrayLike& x_in, SourceLoc loc) {
  no_complex("unique", x_in, loc);
  Array x = own(x_in, loc);
  eager_only("unique", x, loc);
  const int64_t count = sum(runs_of(x, loc).first, {}, false, loc).item<int64_t>();
  return unique(x, count, std::nullopt, loc);
}

Array unique(const ArrayLike& x_in, int64_t size, std::optional<double> fill_value, SourceLoc loc) {
  no_complex("unique", x_in, loc);
  Array x = own(x_in, loc);
  if (size < 0) fail(ErrorKind::Value, "unique", {x}, loc, "size must be >= 0, got " + std::to_string(size));
  Runs r = runs_of(x, loc);
  if (x.size() == 0 && !fill_value && size > 0)
    fail(ErrorKind::Value, "unique", {x}, loc, "an empty array needs a fill_value to pad to size " + std::to_string(size));
  Array fill = fill_value ? detail::as_array(*fill_value, x.dtype(), false, loc)
                          : x.size() ? slice(r.sorted, {0}, {1}, loc) : zeros(Shape{1}, x.dtype(), loc);
  return per_run(r, r.sorted, fill, size, loc);
}

UniqueAll unique_all(const ArrayLike& x_in, SourceLoc loc) {
  no_complex("unique_all", x_in, loc);
  Array x = own(x_in, loc);
  eager_only("unique_all", x, loc);
  Runs r = runs_of(x, loc);
  const int64_t n = x.size(), count = sum(r.first, {}, false, loc).item<int64_t>();
  Array run = subtract(cumsum(r.first, 0, loc), 1, loc);  // the value each sorted element has
  UniqueAll u;
  u.values = per_run(r, r.sorted, zeros(Shape{}, x.dtype(), loc), count, loc);
  u.indices = per_run(r, r.perm, zeros(Shape{}, int32, loc), count, loc);  // the stable sort: the first occurrence
  u.inverse_indices = reshape(at_set(zeros(Shape{n}, int32, loc), r.perm, astype(run, int32, loc), 0, loc), x.shape(), loc);
  u.counts = at_add(zeros(Shape{count}, int32, loc), run, 1, 0, loc);
  return u;
}

}  // namespace fluxion
