#include "api/nn.h"

#include "api/creation.h"
#include "api/operands.h"
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
