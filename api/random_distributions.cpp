// The distributions of fx::random built from uniform, normal, randint and permutation (api/random.h):
// gumbel, categorical, gamma, choice -- as jax.random defines them, so they trace and transform like
// the rest.
#include <cmath>
#include <limits>
#include <string>

#include "api/creation.h"
#include "api/indexing.h"
#include "api/operands.h"
#include "api/random.h"
#include "api/reductions.h"
#include "api/shape_ops.h"
#include "api/sorting.h"

namespace fluxion::random {
namespace {

[[noreturn]] void fail(ErrorKind kind, const char* op, std::initializer_list<ArrayLike> xs, SourceLoc loc,
                       const std::string& detail) {
  std::vector<AbstractArray> avals;
  for (const ArrayLike& x : xs) avals.push_back(x.aval());
  op_error(kind, op, avals, loc, detail);
}

// The smallest positive normal number of a float dtype (numpy's finfo.tiny).
double tiny(DType d) {
  switch (d) {
    case DType::float64: return std::numeric_limits<double>::min();
    case DType::float16: return std::ldexp(1.0, -14);
    default: return std::numeric_limits<float>::min();  // float32, bfloat16
  }
}

Shape concat(const Shape& a, const Shape& b) {
  Shape s = a;
  for (int64_t d : b) s.push_back(d);
  return s;
}

constexpr int kGammaRounds = 12;

// Marsaglia and Tsang for shape b >= 1, at `rounds` candidates per element along a new leading
// axis: the first accepted candidate of each element (or the last one if none is).
Array gamma_at_least_one(const Array& key, const Array& b, const Shape& shape, DType dt, SourceLoc loc) {
  Array d = subtract(b, 1.0 / 3.0, loc), c = divide(1.0 / 3.0, sqrt(d, loc), loc);
  auto [kx, ku] = split(key, loc);
  const Shape cand = concat(Shape{kGammaRounds}, shape);
  Array x = normal(kx, cand, dt, loc), u = uniform(ku, cand, dt, 0.0, 1.0, loc);
  Array v = integer_pow(add(multiply(c, x, loc), 1.0, loc), 3, loc);
  Array safe_v = where(greater(v, 0, loc), v, 1.0, loc);
  // log u < x^2 / 2 + d - d v + d log v, with v > 0.
  Array bound = add(multiply(multiply(x, x, loc), 0.5, loc),
                    multiply(d, add(subtract(1.0, safe_v, loc), log(safe_v, loc), loc), loc), loc);
  Array ok = logical_and(greater(v, 0, loc), less(log(u, loc), bound, loc), loc);
  ok = logical_or(ok, equal(iota(int32, cand, 0, loc), kGammaRounds - 1, loc), loc);  // the last as a fallback
  Array first = argmax(astype(ok, int32, loc), 0, true, loc);  // the first accepted candidate
  Array pick = equal(iota(int32, cand, 0, loc), first, loc);
  return sum(where(pick, multiply(d, safe_v, loc), 0.0, loc), {0}, false, loc);
}

}  // namespace

Array gumbel(const Array& key, const Shape& shape, DType dtype, SourceLoc loc) {
  Array u = uniform(key, shape, dtype, tiny(dtype), 1.0, loc);
  return negative(log(negative(log(u, loc), loc), loc), loc);
}

Array categorical(const Array& key, const ArrayLike& logits_in, int64_t axis, const std::optional<Shape>& shape,
                  SourceLoc loc) {
  const char* op = "random.categorical";
  if (!is_float(logits_in.dtype())) fail(ErrorKind::Type, op, {key, logits_in}, loc, "logits must be floating point");
  Array logits = detail::as_array(logits_in, logits_in.dtype(), false, loc);
  if (logits.ndim() == 0) fail(ErrorKind::Shape, op, {key, logits}, loc, "logits need at least one axis");
  const int64_t ax = detail::normalize_axis(op, axis, logits.ndim(), logits.aval(), loc);
  Shape batch;
  for (int d = 0; d < logits.ndim(); ++d)
    if (d != ax) batch.push_back(logits.shape()[size_t(d)]);
  const Shape out = shape.value_or(batch);
  bool fits = out.rank() >= batch.rank();
  for (int i = 0; fits && i < batch.rank(); ++i) fits = out[size_t(out.rank() - batch.rank() + i)] == batch[size_t(i)];
  if (!fits)
    fail(ErrorKind::Shape, op, {key, logits}, loc,
         "shape " + out.str() + " must end with the logits' shape without the axis, " + batch.str());
  // Leading dims of `out` beyond the logits' batch draw independent samples.
  const int lead = out.rank() - batch.rank();
  Shape noise_shape(std::vector<int64_t>(out.begin(), out.begin() + lead));
  for (int64_t d : logits.shape()) noise_shape.push_back(d);
  Array noisy = add(gumbel(key, noise_shape, logits.dtype(), loc), logits, loc);
  return argmax(noisy, lead + ax, false, loc);
}

Array gamma(const Array& key, const ArrayLike& a_in, const std::optional<Shape>& shape, DType dtype, SourceLoc loc) {
  const char* op = "random.gamma";
  if (!is_float(dtype)) fail(ErrorKind::Type, op, {key, a_in}, loc, "dtype must be floating point");
  const Shape out = shape.value_or(a_in.shape());
  Array a = broadcast_to(detail::as_array(a_in, dtype, false, loc), out, loc);
  // a < 1: Gamma(a) = Gamma(a + 1) * u^(1/a), in logs so that small a does not round u^(1/a) to 0 early.
  auto [k1, k2] = split(key, loc);
  Array small = less(a, 1.0, loc);
  Array g = gamma_at_least_one(k1, where(small, add(a, 1.0, loc), a, loc), out, dtype, loc);
  Array u = uniform(k2, out, dtype, tiny(dtype), 1.0, loc);
  Array boost = exp(divide(log(u, loc), where(small, a, 1.0, loc), loc), loc);
  Array r = where(small, multiply(g, boost, loc), g, loc);
  return where(greater(a, 0, loc), r, std::numeric_limits<double>::quiet_NaN(), loc);  // a <= 0: NaN, as JAX
}

Array choice(const Array& key, int64_t n, const Shape& shape, bool replace, const std::optional<Array>& p,
             SourceLoc loc) {
  if (n < 0) throw ValueError("ValueError: random.choice at " + loc.str() + ": n must be >= 0, got " + std::to_string(n));
  return choice(key, iota(int32, Shape{n}, 0, loc), shape, replace, p, 0, loc);
}

Array choice(const Array& key, const Array& a, const Shape& shape, bool replace, const std::optional<Array>& p,
             int64_t axis, SourceLoc loc) {
  const char* op = "random.choice";
  if (a.ndim() == 0) fail(ErrorKind::Shape, op, {key, a}, loc, "a must have at least one axis (or pass n)");
  const int64_t ax = detail::normalize_axis(op, axis, a.ndim(), a.aval(), loc);
  const int64_t n = a.shape()[size_t(ax)], draws = shape.numel();
  if (p && (p->ndim() != 1 || p->shape()[0] != n || !is_float(p->dtype())))
    fail(ErrorKind::Shape, op, {a, *p}, loc, "p must be a float vector with one probability per element of a's axis");
  if (!replace && draws > n)
    fail(ErrorKind::Value, op, {a}, loc,
         "cannot draw " + std::to_string(draws) + " elements of " + std::to_string(n) + " without replacement");
  if (n == 0 && draws > 0) fail(ErrorKind::Value, op, {a}, loc, "cannot draw from an empty axis");
  Array index;
  if (replace && !p) {
    index = randint(key, shape, 0, n, int32, loc);
  } else if (replace) {  // inverse CDF: the first position whose cumulative probability passes r
    Array cdf = cumsum(*p, 0, loc);
    Array total = take(cdf, n - 1, 0, loc);
    Array r = multiply(total, subtract(1.0, uniform(key, shape, p->dtype(), 0.0, 1.0, loc), loc), loc);
    index = minimum(searchsorted(cdf, r, "right", loc), int32_t(n - 1), loc);
  } else if (!p) {
    index = reshape(slice(permutation(key, n, loc), {0}, {draws}, loc), shape, loc);
  } else {  // Gumbel top-k: the k largest of log p + Gumbel noise are k draws without replacement
    Array scores = add(log(*p, loc), gumbel(key, Shape{n}, p->dtype(), loc), loc);
    index = reshape(top_k(scores, draws, loc).second, shape, loc);
  }
  return take(a, index, ax, loc);
}

}  // namespace fluxion::random
