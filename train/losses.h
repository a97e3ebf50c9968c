// fx::nn losses (optax names and conventions). The cross-entropies and the elementwise losses return
// one value per example (or element) -- the caller chooses the reduction, usually fx::mean -- while
// `mse`, as its name says, is already the mean.
//
//   fx::Array loss = fx::mean(fx::nn::softmax_cross_entropy(logits, labels));   // labels: int [batch]
#pragma once
#include "api/elementwise.h"

namespace fluxion::nn {

/// -log softmax(logits)[label] along the last axis: logits [..., classes], integer labels [...] in
/// [0, classes) -> [...] (optax's softmax_cross_entropy_with_integer_labels). Concrete labels out of
/// range are a ValueError; a shape or dtype mismatch a ShapeError/TypeError naming the user's line.
Array softmax_cross_entropy(const Array& logits, const Array& labels, FLUXION_LOC);
/// The same against a probability distribution: labels [..., classes] -> [...].
Array softmax_cross_entropy_with_probs(const Array& logits, const Array& probs, FLUXION_LOC);
/// Binary cross-entropy of sigmoid(logits) against labels in [0, 1], elementwise, computed stably.
Array sigmoid_binary_cross_entropy(const Array& logits, const Array& labels, FLUXION_LOC);
/// mean((pred - target)^2) over every element: a scalar.
Array mse(const Array& pred, const Array& target, FLUXION_LOC);
/// 0.5 * (pred - target)^2 elementwise (optax's l2_loss).
Array l2_loss(const Array& pred, const Array& target, FLUXION_LOC);
/// Quadratic within `delta`, linear outside, elementwise.
Array huber_loss(const Array& pred, const Array& target, double delta = 1.0, FLUXION_LOC);

}  // namespace fluxion::nn
