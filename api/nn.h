// fx::nn: activations, normalisations, pooling, dropout and attention (jax.nn / flax names),
// written with the public op API so that every transform sees through them. Layers (parameter
// trees with initializers) build on these.
#pragma once
#include <cstdint>
#include <optional>

#include "api/conv.h"
#include "api/elementwise.h"
#include "api/reductions.h"

namespace fluxion::nn {

Array relu(const ArrayLike& x, FLUXION_LOC);
Array relu6(const ArrayLike& x, FLUXION_LOC);
Array sigmoid(const ArrayLike& x, FLUXION_LOC);
/// log(1 + exp(x)), stable for large |x|.
Array softplus(const ArrayLike& x, FLUXION_LOC);
/// x * sigmoid(x) (also called swish).
Array silu(const ArrayLike& x, FLUXION_LOC);
/// GELU; the tanh approximation by default, as jax.nn.gelu; `approximate=false` uses erf.
Array gelu(const ArrayLike& x, bool approximate = true, FLUXION_LOC);
Array elu(const ArrayLike& x, double alpha = 1.0, FLUXION_LOC);
Array leaky_relu(const ArrayLike& x, double negative_slope = 0.01, FLUXION_LOC);
Array log_sigmoid(const ArrayLike& x, FLUXION_LOC);
/// exp(x - max) / sum(exp(x - max)) along `axis` (the max's gradient is stopped: it cancels).
Array softmax(const ArrayLike& x, int64_t axis = -1, FLUXION_LOC);
/// x - logsumexp(x) along `axis`.
Array log_softmax(const ArrayLike& x, int64_t axis = -1, FLUXION_LOC);
/// Integer labels -> one-hot vectors along a new last axis (float32 unless `dtype` is given).
Array one_hot(const ArrayLike& labels, int64_t num_classes, DType dtype = float32, FLUXION_LOC);
/// Normalises along `axis` to zero mean and unit variance: (x - mean) / sqrt(var + eps).
Array standardize(const ArrayLike& x, int64_t axis = -1, double eps = 1e-5, FLUXION_LOC);
using fluxion::logsumexp;

// ---- pooling (NCHW: the window covers the last window.size() dims) --------------------------------
/// The max of each window; `strides` default to the window (non-overlapping), padding to VALID.
Array max_pool(const ArrayLike& x, const IntList& window, const IntList& strides = {},
               const Padding& padding = "VALID", FLUXION_LOC);
/// The mean of each window. Padding counts as zeros in the mean when `count_include_pad` (flax's
/// default); otherwise each window divides by the number of elements it really covers.
Array avg_pool(const ArrayLike& x, const IntList& window, const IntList& strides = {},
               const Padding& padding = "VALID", bool count_include_pad = true, FLUXION_LOC);

// ---- normalisation -----------------------------------------------------------------------------
/// What batch_norm returns: the normalised x and the running statistics to carry to the next step
/// (the ones given, unchanged, in inference).
struct BatchNormResult {
  Array out, running_mean, running_var;
};
/// Batch normalisation over every axis but `axis` (the features; 1 for NCHW). Training: normalises
/// with the batch's mean and (biased) variance and updates the running statistics as
/// momentum * running + (1 - momentum) * batch (flax's convention). Inference: normalises with the
/// running statistics. scale and bias have one entry per feature.
BatchNormResult batch_norm(const ArrayLike& x, const ArrayLike& scale, const ArrayLike& bias,
                           const ArrayLike& running_mean, const ArrayLike& running_var, bool training,
                           double momentum = 0.9, double eps = 1e-5, int64_t axis = 1, FLUXION_LOC);
/// Layer normalisation over the trailing dims from `begin_axis` on; scale and bias have those dims'
/// shape.
Array layer_norm(const ArrayLike& x, const ArrayLike& scale, const ArrayLike& bias, int64_t begin_axis = -1,
                 double eps = 1e-5, FLUXION_LOC);
/// Group normalisation of NC... input: the C features split into `num_groups` groups, each
/// normalised over its features and all spatial positions; scale and bias have one entry per feature.
Array group_norm(const ArrayLike& x, int64_t num_groups, const ArrayLike& scale, const ArrayLike& bias,
                 double eps = 1e-5, FLUXION_LOC);

// ---- dropout and attention ---------------------------------------------------------------------
/// Zeroes each element with probability `rate` (drawn from `key`) and scales the rest by
/// 1 / (1 - rate); the identity when !training or rate == 0.
Array dropout(const Array& key, const ArrayLike& x, double rate, bool training = true, FLUXION_LOC);
/// softmax(q k^T * scale + mask) v over (..., T, N, H) operands (jax.nn.dot_product_attention:
/// T positions, N heads, H features; k and v have S positions). `scale` defaults to 1/sqrt(H);
/// `mask` (bool, broadcastable to (..., N, T, S)) hides the keys where it is false; `is_causal`
/// hides the keys after each query.
Array dot_product_attention(const ArrayLike& q, const ArrayLike& k, const ArrayLike& v,
                            const std::optional<Array>& mask = std::nullopt, std::optional<double> scale = std::nullopt,
                            bool is_causal = false, FLUXION_LOC);

}  // namespace fluxion::nn
