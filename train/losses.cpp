#include "train/losses.h"

#include <string>

#include "api/creation.h"
#include "api/nn.h"
#include "api/operands.h"
#include "api/reductions.h"
#include "api/shape_ops.h"
#include "ir/error.h"

namespace fluxion::nn {

namespace {

void same_shape(std::string_view op, const Array& a, const Array& b, SourceLoc loc) {
  if (a.shape() != b.shape()) {
    AbstractArray avals[] = {a.aval(), b.aval()};
    op_error(ErrorKind::Shape, op, avals, loc, "the two operands must have the same shape");
  }
}

}  // namespace

Array softmax_cross_entropy(const Array& logits, const Array& labels, SourceLoc loc) {
  if (is_integer(labels.dtype())) return softmax_cross_entropy_with_integer_labels(logits, labels, loc);
  AbstractArray avals[] = {logits.aval(), labels.aval()};
  constexpr std::string_view op = "softmax_cross_entropy";
  if (!is_float(logits.dtype()) || !is_float(labels.dtype()))
    op_error(ErrorKind::Type, op, avals, loc,
             "logits must be floating point, labels probabilities (float) or class indices (integers)");
  same_shape(op, logits, labels, loc);
  return negative(sum(multiply(labels, log_softmax(logits, -1, loc), loc), {-1}, false, loc), loc);
}

Array softmax_cross_entropy_with_integer_labels(const Array& logits, const Array& labels, SourceLoc loc) {
  AbstractArray avals[] = {logits.aval(), labels.aval()};
  constexpr std::string_view op = "softmax_cross_entropy_with_integer_labels";
  if (!is_float(logits.dtype())) op_error(ErrorKind::Type, op, avals, loc, "logits must be floating point");
  if (!is_integer(labels.dtype())) op_error(ErrorKind::Type, op, avals, loc, "labels must be integers");
  const Shape& ls = logits.shape();
  if (ls.rank() < 1 || Shape(ls.begin(), ls.end() - 1) != labels.shape())
    op_error(ErrorKind::Shape, op, avals, loc, "labels must have the shape of logits without its last (class) axis");
  const int64_t classes = ls[size_t(ls.rank() - 1)];
  if (!labels.is_tracer())
    for (int64_t l : labels.to_vector<int64_t>())
      if (l < 0 || l >= classes)
        op_error(ErrorKind::Value, op, avals, loc,
                 "label " + std::to_string(l) + " is outside [0, " + std::to_string(classes) + ")");
  Array picked = sum(multiply(one_hot(labels, classes, logits.dtype(), loc), logits, loc), {-1}, false, loc);
  return subtract(logsumexp(logits, {-1}, false, loc), picked, loc);
}

Array softmax_cross_entropy_with_probs(const Array& logits, const Array& probs, SourceLoc loc) {
  same_shape("softmax_cross_entropy_with_probs", logits, probs, loc);
  return negative(sum(multiply(probs, log_softmax(logits, -1, loc), loc), {-1}, false, loc), loc);
}

Array squared_error(const Array& pred, const Array& target, SourceLoc loc) {
  same_shape("squared_error", pred, target, loc);
  return square(subtract(pred, target, loc), loc);
}

Array cosine_similarity(const Array& pred, const Array& target, double epsilon, SourceLoc loc) {
  same_shape("cosine_similarity", pred, target, loc);
  if (pred.ndim() < 1) {
    AbstractArray avals[] = {pred.aval(), target.aval()};
    op_error(ErrorKind::Shape, "cosine_similarity", avals, loc, "needs vectors along a last axis");
  }
  auto unit = [&](const Array& v) {
    Array norm = sqrt(sum(square(v, loc), {-1}, true, loc), loc);
    return divide(v, maximum(norm, epsilon, loc), loc);
  };
  return sum(multiply(unit(pred), unit(target), loc), {-1}, false, loc);
}

Array cosine_distance(const Array& pred, const Array& target, double epsilon, SourceLoc loc) {
  return subtract(1.0, cosine_similarity(pred, target, epsilon, loc), loc);
}

Array sigmoid_binary_cross_entropy(const Array& logits, const Array& labels, SourceLoc loc) {
  same_shape("sigmoid_binary_cross_entropy", logits, labels, loc);
  // -(y log s + (1 - y) log(1 - s)) with log s = log_sigmoid(x), log(1 - s) = log_sigmoid(-x).
  Array pos = multiply(labels, log_sigmoid(logits, loc), loc);
  Array neg = multiply(subtract(1.0, labels, loc), log_sigmoid(negative(logits, loc), loc), loc);
  return negative(add(pos, neg, loc), loc);
}

Array mse(const Array& pred, const Array& target, SourceLoc loc) {
  same_shape("mse", pred, target, loc);
  return mean(square(subtract(pred, target, loc), loc), {}, false, loc);
}

Array l2_loss(const Array& pred, const Array& target, SourceLoc loc) {
  same_shape("l2_loss", pred, target, loc);
  return multiply(square(subtract(pred, target, loc), loc), 0.5, loc);
}

Array huber_loss(const Array& pred, const Array& target, double delta, SourceLoc loc) {
  same_shape("huber_loss", pred, target, loc);
  Array err = abs(subtract(pred, target, loc), loc);
  Array quadratic = minimum(err, delta, loc);
  // 0.5 q^2 + delta (|e| - q): the quadratic part up to delta, linear beyond.
  return add(multiply(square(quadratic, loc), 0.5, loc), multiply(subtract(err, quadratic, loc), delta, loc), loc);
}

}  // namespace fluxion::nn
