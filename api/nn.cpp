#include "api/nn.h"

#include <cmath>

#include "api/creation.h"
#include "api/linalg.h"
#include "api/operands.h"
#include "api/random.h"
#include "api/shape_ops.h"

namespace fluxion::nn {

namespace {
Array as_float(const ArrayLike& x, SourceLoc loc) {
  DType d = is_float(x.dtype()) ? x.dtype() : default_float;
  return detail::as_array(x, d, x.weak(), loc);
}
}  // namespace

Array relu(const ArrayLike& x, SourceLoc loc) { return where(greater(x, 0, loc), x, 0, loc); }  // gradient 0 at 0, as JAX
Array relu6(const ArrayLike& x, SourceLoc loc) { return minimum(maximum(x, 0, loc), 6, loc); }
Array sigmoid(const ArrayLike& x, SourceLoc loc) { return fluxion::sigmoid(x, loc); }

Array softplus(const ArrayLike& x, SourceLoc loc) {
  // log1p(exp(-|x|)) + max(x, 0): never overflows.
  Array a = as_float(x, loc);
  return add(log1p(exp(negative(abs(a, loc), loc), loc), loc), maximum(a, 0, loc), loc);
}

Array silu(const ArrayLike& x, SourceLoc loc) {
  Array a = as_float(x, loc);
  return multiply(a, fluxion::sigmoid(a, loc), loc);
}

Array gelu(const ArrayLike& x, bool approximate, SourceLoc loc) {
  Array a = as_float(x, loc);
  if (approximate) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Array inner = multiply(add(a, multiply(integer_pow(a, 3, loc), 0.044715, loc), loc), 0.7978845608028654, loc);
    return multiply(multiply(a, 0.5, loc), add(tanh(inner, loc), 1, loc), loc);
  }
  return multiply(multiply(a, 0.5, loc), add(erf(multiply(a, 0.7071067811865476, loc), loc), 1, loc), loc);
}

Array elu(const ArrayLike& x, double alpha, SourceLoc loc) {
  Array a = as_float(x, loc);
  // expm1 of min(x, 0) so that the unused branch cannot overflow.
  return where(greater(a, 0, loc), a, multiply(expm1(minimum(a, 0, loc), loc), alpha, loc), loc);
}

Array leaky_relu(const ArrayLike& x, double negative_slope, SourceLoc loc) {
  Array a = as_float(x, loc);
  return where(greater_equal(a, 0, loc), a, multiply(a, negative_slope, loc), loc);
}

Array log_sigmoid(const ArrayLike& x, SourceLoc loc) { return negative(softplus(negative(x, loc), loc), loc); }

Array softmax(const ArrayLike& x, int64_t axis, SourceLoc loc) {
  Array a = as_float(x, loc);
  Array m = stop_gradient(max(a, axis, /*keepdims=*/true, loc), loc);
  Array e = exp(subtract(a, m, loc), loc);
  return divide(e, sum(e, axis, /*keepdims=*/true, loc), loc);
}

Array log_softmax(const ArrayLike& x, int64_t axis, SourceLoc loc) {
  Array a = as_float(x, loc);
  Array shifted = subtract(a, stop_gradient(max(a, axis, /*keepdims=*/true, loc), loc), loc);
  return subtract(shifted, log(sum(exp(shifted, loc), axis, /*keepdims=*/true, loc), loc), loc);
}

Array one_hot(const ArrayLike& labels, int64_t num_classes, DType dtype, SourceLoc loc) {
  Array l = detail::as_array(labels, is_integer(labels.dtype()) ? labels.dtype() : int32, false, loc);
  Shape shape = l.shape();
  shape.push_back(num_classes);
  Array classes = iota(l.dtype(), shape, shape.rank() - 1, loc);
  return astype(equal(expand_dims(l, -1, loc), classes, loc), dtype, loc);
}

Array standardize(const ArrayLike& x, int64_t axis, double eps, SourceLoc loc) {
  Array a = as_float(x, loc);
  Array mu = mean(a, axis, true, loc);
  Array centered = subtract(a, mu, loc);
  Array v = mean(multiply(centered, centered, loc), axis, true, loc);
  return multiply(centered, rsqrt(add(v, eps, loc), loc), loc);
}

}  // namespace fluxion::nn

// ---- pooling, normalisation, dropout, attention -------------------------------------------------

namespace fluxion::nn {

namespace {

// The window over the last window.size() dims of x: full-rank window dims and strides.
struct PoolWindow {
  IntList dims, strides;
  Padding padding;
};
PoolWindow pool_window(const ArrayLike& x, const IntList& window, const IntList& strides, const Padding& padding,
                       const char* op, SourceLoc loc) {
  const int rank = x.shape().rank();
  const size_t lead = size_t(rank) - window.size();
  if (window.size() > size_t(rank) || (!strides.empty() && strides.size() != window.size())) {
    AbstractArray a = x.aval();
    op_error(ErrorKind::Shape, op, std::span(&a, 1), loc,
             "the window (" + std::to_string(window.size()) + " dims) and strides (" + std::to_string(strides.size()) +
                 ") must cover at most the operand's " + std::to_string(rank) + " dims, one stride per window dim");
  }
  PoolWindow w{IntList(lead, 1), IntList(lead, 1), padding.with_leading(lead)};
  w.dims.insert(w.dims.end(), window.begin(), window.end());
  const IntList& st = strides.empty() ? window : strides;
  w.strides.insert(w.strides.end(), st.begin(), st.end());
  return w;
}

// The per-feature vector v as an array that broadcasts along `axis` of a rank-`rank` operand.
Array along_axis(const Array& v, int64_t axis, int rank, SourceLoc loc) {
  Shape s(std::vector<int64_t>(size_t(rank), 1));
  s[size_t(axis)] = v.size();
  return reshape(v, s, loc);
}

Axes all_but(int rank, int64_t axis) {
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis) axes.push_back(d);
  return Axes(axes);
}

// (x - mean) / sqrt(var + eps) over `axes` (biased variance, kept dims).
/// (a - mean) / sqrt(var + eps) over `axes`, with the mean and (biased) variance it used, their
/// reduced dims kept: batch norm's running statistics reuse them instead of a second pass.
struct Moments {
  Array normalized, mean, var;
};
Moments normalize_with_moments(const Array& a, const Axes& axes, double eps, SourceLoc loc) {
  Array mu = mean(a, axes, true, loc);
  Array centered = subtract(a, mu, loc);
  Array v = mean(square(centered, loc), axes, true, loc);
  return {multiply(centered, rsqrt(add(v, eps, loc), loc), loc), mu, v};
}
Array normalize(const Array& a, const Axes& axes, double eps, SourceLoc loc) {
  return normalize_with_moments(a, axes, eps, loc).normalized;
}

}  // namespace

Array max_pool(const ArrayLike& x, const IntList& window, const IntList& strides, const Padding& padding,
               SourceLoc loc) {
  PoolWindow w = pool_window(x, window, strides, padding, "max_pool", loc);
  return reduce_window_max(x, w.dims, w.strides, w.padding, {}, {}, loc);
}

Array avg_pool(const ArrayLike& x, const IntList& window, const IntList& strides, const Padding& padding,
               bool count_include_pad, SourceLoc loc) {
  PoolWindow w = pool_window(x, window, strides, padding, "avg_pool", loc);
  Array a = as_float(x, loc);
  Array sums = reduce_window_sum(a, w.dims, w.strides, w.padding, {}, {}, loc);
  if (count_include_pad) {
    int64_t n = 1;
    for (int64_t d : window) n *= d;
    return divide(sums, double(n), loc);
  }
  return divide(sums, reduce_window_sum(ones_like(a, loc), w.dims, w.strides, w.padding, {}, {}, loc), loc);
}

BatchNormResult batch_norm(const ArrayLike& x, const ArrayLike& scale, const ArrayLike& bias,
                           const ArrayLike& running_mean, const ArrayLike& running_var, bool training, double momentum,
                           double eps, int64_t axis, SourceLoc loc) {
  Array a = as_float(x, loc);
  const int rank = a.ndim();
  const int64_t ax = detail::normalize_axis("batch_norm", axis, rank, a.aval(), loc);
  auto per_feature = [&](const ArrayLike& v) { return along_axis(as_float(v, loc), ax, rank, loc); };
  const Array g = per_feature(scale), b = per_feature(bias);
  if (!training) {
    Array y = multiply(subtract(a, per_feature(running_mean), loc), rsqrt(add(per_feature(running_var), eps, loc), loc), loc);
    return {add(multiply(y, g, loc), b, loc), as_float(running_mean, loc), as_float(running_var, loc)};
  }
  const Axes axes = all_but(rank, ax);
  Moments m = normalize_with_moments(a, axes, eps, loc);
  // The running statistics are state, not part of the function being differentiated.
  const Shape features{a.shape()[size_t(ax)]};
  Array batch_mean = stop_gradient(reshape(m.mean, features, loc), loc);
  Array batch_var = stop_gradient(reshape(m.var, features, loc), loc);
  Array rm = add(multiply(as_float(running_mean, loc), momentum, loc), multiply(batch_mean, 1 - momentum, loc), loc);
  Array rv = add(multiply(as_float(running_var, loc), momentum, loc), multiply(batch_var, 1 - momentum, loc), loc);
  return {add(multiply(m.normalized, g, loc), b, loc), rm, rv};
}

Array layer_norm(const ArrayLike& x, const ArrayLike& scale, const ArrayLike& bias, int64_t begin_axis, double eps,
                 SourceLoc loc) {
  Array a = as_float(x, loc);
  const int rank = a.ndim();
  const int64_t begin = detail::normalize_axis("layer_norm", begin_axis, rank, a.aval(), loc);
  std::vector<int64_t> axes;
  for (int64_t d = begin; d < rank; ++d) axes.push_back(d);
  return add(multiply(normalize(a, Axes(axes), eps, loc), scale, loc), bias, loc);
}

Array group_norm(const ArrayLike& x, int64_t num_groups, const ArrayLike& scale, const ArrayLike& bias, double eps,
                 SourceLoc loc) {
  Array a = as_float(x, loc);
  const Shape s = a.shape();
  if (s.rank() < 2 || num_groups <= 0 || s[1] % num_groups != 0) {
    AbstractArray av = a.aval();
    op_error(ErrorKind::Shape, "group_norm", std::span(&av, 1), loc,
             "needs an N, C, ... operand whose C divides into num_groups = " + std::to_string(num_groups) + " groups");
  }
  std::vector<int64_t> grouped{s[0], num_groups, s[1] / num_groups};
  for (int d = 2; d < s.rank(); ++d) grouped.push_back(s[size_t(d)]);
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < int64_t(grouped.size()); ++d) axes.push_back(d);
  Array y = reshape(normalize(reshape(a, Shape(grouped), loc), Axes(axes), eps, loc), s, loc);
  auto per_feature = [&](const ArrayLike& v) { return along_axis(as_float(v, loc), 1, s.rank(), loc); };
  return add(multiply(y, per_feature(scale), loc), per_feature(bias), loc);
}

Array dropout(const Array& key, const ArrayLike& x, double rate, bool training, SourceLoc loc) {
  Array a = as_float(x, loc);
  if (!training || rate == 0) return a;
  if (rate >= 1) return zeros_like(a, loc);
  Array keep = random::bernoulli(key, 1 - rate, a.shape(), loc);
  return where(keep, divide(a, 1 - rate, loc), 0, loc);
}

Array dot_product_attention(const ArrayLike& q, const ArrayLike& k, const ArrayLike& v, const std::optional<Array>& mask,
                            std::optional<double> scale, bool is_causal, SourceLoc loc) {
  Array qa = as_float(q, loc), ka = as_float(k, loc), va = as_float(v, loc);
  const Shape qs = qa.shape();
  if (qs.rank() < 3 || ka.ndim() != qs.rank() || va.ndim() != qs.rank()) {
    AbstractArray avs[] = {qa.aval(), ka.aval(), va.aval()};
    op_error(ErrorKind::Shape, "dot_product_attention", avs, loc, "q, k and v must be (..., T, N, H) arrays of one rank");
  }
  const double s = scale ? *scale : 1.0 / std::sqrt(double(qs[size_t(qs.rank() - 1)]));
  EinsumSpec scores("...tnh,...snh->...nts"), mix("...nts,...snh->...tnh");
  scores.loc = mix.loc = loc;
  Array logits = multiply(einsum(scores, qa, ka), s, loc);
  // The most negative finite value of the logits' dtype hides a key without making a row of
  // softmax NaN when it hides them all.
  const double hidden = logits.dtype() == float16 ? -65504.0 : -1e30;
  if (mask) logits = where(*mask, logits, hidden, loc);
  if (is_causal) {
    const Shape ts{logits.shape()[size_t(logits.ndim() - 2)], logits.shape()[size_t(logits.ndim() - 1)]};
    logits = where(greater_equal(iota(int32, ts, 0, loc), iota(int32, ts, 1, loc), loc), logits, hidden, loc);
  }
  return einsum(mix, softmax(logits, -1, loc), va);
}

}  // namespace fluxion::nn
