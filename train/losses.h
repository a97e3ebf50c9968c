// fx::nn losses (optax names and conventions). The cross-entropies and the elementwise losses return
// one value per example (or element) -- the caller chooses the reduction, usually fx::mean -- while
// `mse`, as its name says, is already the mean.
//
//   fx::Array loss = fx::mean(fx::nn::softmax_cross_entropy(logits, labels));   // labels: int [batch]
#pragma once
#include "api/elementwise.h"

namespace fluxion::nn {

/// optax.softmax_cross_entropy: -sum(labels * log_softmax(logits)) over the last axis, labels a
/// probability distribution per example: logits [..., classes], float labels [..., classes] -> [...].
/// Integer labels [...] (api.md's `softmax_cross_entropy(logits, labels_i32)`) mean the class
/// indices: the same as softmax_cross_entropy_with_integer_labels.
Array softmax_cross_entropy(const Array& logits, const Array& labels, FLUXION_LOC);
/// optax.softmax_cross_entropy_with_integer_labels: -log softmax(logits)[label] along the last axis,
/// integer labels [...] in [0, classes) -> [...]. Concrete labels out of range are a ValueError; a
/// shape or dtype mismatch a ShapeError/TypeError naming the user's line.
Array softmax_cross_entropy_with_integer_labels(const Array& logits, const Array& labels, FLUXION_LOC);
/// softmax_cross_entropy with probabilities (the name it had before Optax's was adopted).
Array softmax_cross_entropy_with_probs(const Array& logits, const Array& probs, FLUXION_LOC);
/// Binary cross-entropy of sigmoid(logits) against labels in [0, 1], elementwise, computed stably.
Array sigmoid_binary_cross_entropy(const Array& logits, const Array& labels, FLUXION_LOC);
/// mean((pred - target)^2) over every element: a scalar.
Array mse(const Array& pred, const Array& target, FLUXION_LOC);
/// 0.5 * (pred - target)^2 elementwise (optax's l2_loss).
Array l2_loss(const Array& pred, const Array& target, FLUXION_LOC);
/// Quadratic within `delta`, linear outside, elementwise (optax.huber_loss).
Array huber_loss(const Array& pred, const Array& target, double delta = 1.0, FLUXION_LOC);
/// (pred - target)^2 elementwise (optax.squared_error: l2_loss without the 0.5).
Array squared_error(const Array& pred, const Array& target, FLUXION_LOC);
/// optax.cosine_similarity: the cosine of the angle between pred and target along the last axis,
/// [..., d] -> [...]; each norm is clamped below at `epsilon` (so zero vectors give 0, not NaN).
Array cosine_similarity(const Array& pred, const Array& target, double epsilon = 0.0, FLUXION_LOC);
/// optax.cosine_distance: 1 - cosine_similarity.
Array cosine_distance(const Array& pred, const Array& target, double epsilon = 0.0, FLUXION_LOC);

}  // namespace fluxion::nn
