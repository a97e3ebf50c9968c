// fx::nn layers: each is a struct of parameters (a tree: save it, differentiate it, update it with
// fx::optim) with a static `init` that makes them from a key and a static `apply` that is a pure
// function of parameters and inputs. Nothing is hidden in an object: state that changes during
// training (dropout keys, batch statistics) is passed in and returned.
//
//   auto key = fx::random::key(0);
//   auto lin = fx::nn::Linear::init(key, /*in=*/784, /*out=*/128);
//   fx::Array y = fx::nn::Linear::apply(lin, x);               // x: [..., 784] -> [..., 128]
//   auto g = fx::grad([&](const fx::nn::Linear& p) { return fx::sum(fx::nn::Linear::apply(p, x)); })(lin);
//
//   auto conv = fx::nn::Conv::init(key, /*in_ch=*/1, /*out_ch=*/32, {3, 3});   // OIHW weight
//   fx::Array c = fx::nn::Conv::apply(conv, img, /*strides=*/{1, 1}, "SAME");   // NCHW in and out
#pragma once
#include <cstdint>
#include <optional>
#include <utility>

#include "api/conv.h"
#include "ir/tree.h"
#include "train/initializers.h"

namespace fluxion::nn {

/// y = x @ weight + bias; weight [in, out] (lecun_normal by default, as Flax), bias [out] (zeros).
struct Linear {
  Array weight, bias;
  static Linear init(const Array& key, int64_t in, int64_t out,
                     const initializers::Initializer& weight_init = initializers::lecun_normal(),
                     const initializers::Initializer& bias_init = initializers::zeros(), DType dtype = float32);
  /// x: [..., in]. Computes in x's dtype: parameters are cast to it (see fx::mixed_precision).
  /// `preferred_element_type` (jax.lax.dot_general's, Flax's Dense): the products accumulate in,
  /// and the result (bias included) has, that dtype -- bfloat16 x with a float32 result.
  static Array apply(const Linear& p, const Array& x, std::optional<DType> preferred_element_type = std::nullopt,
                     FLUXION_LOC);
};
FLUXION_TREE(Linear, weight, bias);

/// An n-D convolution layer (1-D, 2-D, 3-D: the kernel's rank says which) over fx::conv_general_dilated.
/// Channels first by default: NC... input, weight laid out OI... (out features, in features / groups,
/// kernel...), NC... output. `channels_last` (a static leaf: part of the jit signature, not saved)
/// selects N...C input with a ...IO weight (NHWC x HWIO). bias [out] is added per output feature.
struct Conv {
  Array weight, bias;
  bool channels_last = false;
  /// Weight lecun_normal over the layout's fans by default (Flax's Conv), bias zeros. `groups`
  /// splits the features into that many independent convolutions (groups == in == out: depthwise).
  static Conv init(const Array& key, int64_t in_ch, int64_t out_ch, const IntList& kernel_size, int64_t groups = 1,
                   bool channels_last = false, const std::optional<initializers::Initializer>& weight_init = std::nullopt,
                   const initializers::Initializer& bias_init = initializers::zeros(), DType dtype = float32);
  /// x: [N, C, spatial...] (or [N, spatial..., C]); strides and dilation default to ones (one per
  /// spatial dim). The feature group count is the input's features over the weight's in features.
  /// Computes in x's dtype: parameters are cast to it. `preferred_element_type` as Linear's (the
  /// convolution's preferred_element_type; the bias is added in that dtype).
  static Array apply(const Conv& p, const Array& x, const IntList& strides = {}, const Padding& padding = "SAME",
                     const IntList& dilation = {}, std::optional<DType> preferred_element_type = std::nullopt,
                     FLUXION_LOC);
};
FLUXION_TREE(Conv, weight, bias, channels_last);

/// The transposed convolution (Flax's ConvTranspose, jax.lax.conv_transpose without flipping the
/// kernel): the input dilated by the strides, then convolved with stride 1 -- the upsampling layer of
/// decoders and U-Nets. Weight layouts as Conv's: OI... for channels first (O the output features),
/// ...IO for channels last; bias [out]. Padding "SAME" gives an output of input * stride per spatial
/// dim, "VALID" input * stride + max(k - stride, 0) (k the dilated kernel size); explicit (low, high)
/// pairs pad the dilated input directly.
struct ConvTranspose {
  Array weight, bias;
  bool channels_last = false;
  static ConvTranspose init(const Array& key, int64_t in_ch, int64_t out_ch, const IntList& kernel_size,
                            bool channels_last = false,
                            const std::optional<initializers::Initializer>& weight_init = std::nullopt,
                            const initializers::Initializer& bias_init = initializers::zeros(), DType dtype = float32);
  /// x: [N, C, spatial...] (or [N, spatial..., C]); strides and the kernel's dilation default to ones.
  static Array apply(const ConvTranspose& p, const Array& x, const IntList& strides = {},
                     const Padding& padding = "SAME", const IntList& dilation = {}, FLUXION_LOC);
};
FLUXION_TREE(ConvTranspose, weight, bias, channels_last);

/// BatchNorm's running statistics: state carried from step to step, not parameters.
struct BatchNormState {
  Array mean, var;  // [features]: zeros and ones at the start
};
FLUXION_TREE(BatchNormState, mean, var);

/// Batch normalisation over every axis but the features' (`axis`, 1 for NC... input, -1 for
/// channels last), through fx::nn::batch_norm. Training normalises with the batch's statistics and
/// returns the running ones updated as momentum * running + (1 - momentum) * batch (Flax's
/// convention); inference normalises with the running statistics and returns them unchanged.
struct BatchNorm {
  Array scale, bias;  // [features]: ones and zeros
  using State = BatchNormState;
  static BatchNorm init(int64_t features, DType dtype = float32);
  static State init_state(int64_t features, DType dtype = float32);
  /// Returns the normalised x (in x's dtype) and the state to pass to the next step.
  static std::pair<Array, State> apply(const BatchNorm& p, const State& state, const Array& x, bool training,
                                       double momentum = 0.9, double eps = 1e-5, int64_t axis = 1, FLUXION_LOC);
};
FLUXION_TREE(BatchNorm, scale, bias);

/// A lookup table: ids (any integer shape) -> rows of `table` [num, dim].
struct Embedding {
  Array table;
  /// Rows drawn from N(0, 1/dim) by default (Flax's variance scaling over the feature axis).
  static Embedding init(const Array& key, int64_t num, int64_t dim,
                        const std::optional<initializers::Initializer>& table_init = std::nullopt,
                        DType dtype = float32);
  /// ids: integers in [0, num); the result is ids.shape + [dim]. Out-of-range ids are a ValueError
  /// when the ids are concrete (under a trace they are clamped, as take does).
  static Array apply(const Embedding& p, const Array& ids, FLUXION_LOC);
};
FLUXION_TREE(Embedding, table);

/// Normalises the last axis to zero mean and unit variance, then scales and shifts it.
struct LayerNorm {
  Array scale, bias;  // [dim]: ones and zeros
  static LayerNorm init(int64_t dim, DType dtype = float32);
  static Array apply(const LayerNorm& p, const Array& x, double eps = 1e-5, FLUXION_LOC);
};
FLUXION_TREE(LayerNorm, scale, bias);

/// Root-mean-square normalisation of the last axis (Flax's RMSNorm): x / sqrt(mean(x^2) + eps) * scale,
/// without centring or a bias. Computes in x's dtype.
struct RMSNorm {
  Array scale;  // [dim]: ones
  static RMSNorm init(int64_t dim, DType dtype = float32);
  static Array apply(const RMSNorm& p, const Array& x, double eps = 1e-6, FLUXION_LOC);
};
FLUXION_TREE(RMSNorm, scale);

/// Inverted dropout: zeroes each element with probability `rate` and divides the survivors by
/// 1 - rate, so the expectation is unchanged; the identity when not training or when rate == 0.
struct Dropout {
  static Array apply(const Array& key, const Array& x, double rate, bool training, FLUXION_LOC);
};

/// Multi-head attention over [batch..., length, dim] inputs: query, key and value projections split
/// into `num_heads` heads of dim / num_heads, scaled dot-product attention in each head, an output
/// projection. `num_heads` is a static leaf (part of the jit signature, not a parameter).
struct MultiHeadAttention {
  Linear query, key, value, out;
  int64_t num_heads = 1;
  static MultiHeadAttention init(const Array& key, int64_t dim, int64_t num_heads, DType dtype = float32);
  /// q_in [..., Lq, dim], kv_in [..., Lk, dim] -> [..., Lq, dim]. `mask` (bool, broadcastable to
  /// [..., heads, Lq, Lk]) keeps the positions where it is true.
  static Array apply(const MultiHeadAttention& p, const Array& q_in, const Array& kv_in,
                     const std::optional<Array>& mask = std::nullopt, FLUXION_LOC);
  /// Self-attention without a mask: apply(p, x, x). (A masked self-attention is apply(p, x, x, mask):
  /// an overload (p, x, mask) would read like (p, q_in, kv_in).)
  static Array apply(const MultiHeadAttention& p, const Array& x, FLUXION_LOC);
};
FLUXION_TREE(MultiHeadAttention, query, key, value, out, num_heads);

}  // namespace fluxion::nn
