// fx::nn: activations and normalisations (jax.nn names), written with the public op API so that
// every transform sees through them.
#pragma once
#include <cstdint>

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

}  // namespace fluxion::nn
