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
// Conv and BatchNorm layers build on the convolution primitive (see docs/training.md).
#pragma once
#include <cstdint>
#include <optional>

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
  static Array apply(const Linear& p, const Array& x, FLUXION_LOC);
};
FLUXION_TREE(Linear, weight, bias);

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
