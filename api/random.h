// fx::random: JAX's functional random numbers. A key is a uint32[2] array; every function is a pure
// function of its key, built from the threefry2x32 primitive and ordinary ops, so random numbers
// trace, transform and lower like any other computation. Never reuse a key: split it.
//
//   auto key = fx::random::key(0);
//   auto [k1, k2] = fx::random::split(key);
//   auto n = fx::random::normal(k1, {3, 4});
//   auto u = fx::random::uniform(k2, {8}, fx::float32, -1.f, 1.f);
//
// Bit layout: JAX's threefry2x32 PRNG as it was before JAX 0.5.0 made `jax_threefry_partitionable`
// the default (i.e. JAX with jax_threefry_partitionable=False). key, split, fold_in, bits, uniform,
// bernoulli, randint and permutation give the same bits as JAX in that mode; normal agrees to the
// accuracy of erf_inv (below), not bit for bit.
#pragma once
#include <cstdint>
#include <optional>
#include <utility>

#include "api/elementwise.h"
#include "ir/array.h"

namespace fluxion::random {

/// jax.random.PRNGKey(seed): uint32[2] = [high 32 bits, low 32 bits] of the int64 seed.
Array key(int64_t seed, FLUXION_LOC);

/// Two new independent keys: `auto [k1, k2] = fx::random::split(key);` (rows 0 and 1 of split(key, 2)).
std::pair<Array, Array> split(const Array& key, FLUXION_LOC);
/// `num` new keys as a uint32[num, 2] array (jax.random.split).
Array split(const Array& key, int64_t num, FLUXION_LOC);

/// A new key derived from `key` and an integer `data` (converted to uint32): jax.random.fold_in.
Array fold_in(const Array& key, const ArrayLike& data, FLUXION_LOC);

/// uint32 random bits of the given shape (jax.random.bits).
Array bits(const Array& key, const Shape& shape = {}, FLUXION_LOC);

/// Uniform floats in [minval, maxval) of a float dtype (jax.random.uniform): random mantissa bits with
/// the exponent of 1.0 give [1, 2); minus 1, scaled to the range, and clamped below at minval. As in
/// JAX there is no clamp above: for some ranges the scaling can round up to maxval itself.
Array uniform(const Array& key, const Shape& shape = {}, DType dtype = float32, const ArrayLike& minval = 0.0,
              const ArrayLike& maxval = 1.0, FLUXION_LOC);

/// Standard normal floats (jax.random.normal): sqrt(2) * erf_inv(u) for u uniform in (-1, 1).
Array normal(const Array& key, const Shape& shape = {}, DType dtype = float32, FLUXION_LOC);

/// bool values that are true with probability p (jax.random.bernoulli): uniform(p's float dtype) < p.
/// Without a shape, the result has p's shape.
Array bernoulli(const Array& key, const ArrayLike& p = 0.5, FLUXION_LOC);
Array bernoulli(const Array& key, const ArrayLike& p, const Shape& shape, FLUXION_LOC);

/// Integers in [minval, maxval) (jax.random.randint) of an 8- or 32-bit integer dtype; minval and
/// maxval may be arrays broadcastable to `shape`. An empty range gives minval.
Array randint(const Array& key, const Shape& shape, const ArrayLike& minval, const ArrayLike& maxval,
              DType dtype = int32, FLUXION_LOC);

/// A random permutation of 0..n-1 as int32 (jax.random.permutation(key, n)): stable sorts by fresh
/// random 32-bit keys, as many rounds as JAX uses to make collisions negligible.
Array permutation(const Array& key, int64_t n, FLUXION_LOC);

// ---- distributions composed of the above (api/random_distributions.cpp) -------------------------
/// Standard Gumbel floats (jax.random.gumbel): -log(-log(u)) for u uniform in [tiny, 1).
Array gumbel(const Array& key, const Shape& shape = {}, DType dtype = float32, FLUXION_LOC);

/// Samples of a categorical distribution over `axis` of `logits` (unnormalised log-probabilities),
/// as int32 indices (jax.random.categorical: the argmax of logits plus Gumbel noise). `shape` (by
/// default the logits' shape without `axis`) must end with that shape; its leading dims draw
/// independent batches.
Array categorical(const Array& key, const ArrayLike& logits, int64_t axis = -1,
                  const std::optional<Shape>& shape = std::nullopt, FLUXION_LOC);

/// Gamma(a, 1) floats (jax.random.gamma) for shape parameters a > 0 (a scalar or an array
/// broadcastable to `shape`; by default the result has a's shape). Marsaglia and Tsang's method
/// (a < 1 through a + 1 and u^(1/a)), vectorised: 12 candidates per element, each taking its first
/// accepted one -- all 12 rejected has probability below 1e-15 per element (the last is used then).
/// Not differentiable in a.
Array gamma(const Array& key, const ArrayLike& a, const std::optional<Shape>& shape = std::nullopt,
            DType dtype = float32, FLUXION_LOC);

/// Draws from a 1-D array `a` (or from 0..n-1 as int32) along `axis` (jax.random.choice):
/// `shape` draws, with or without replacement, uniformly or with probabilities `p` (one per element
/// of the axis, summing to 1). The result has a.shape[:axis] + shape + a.shape[axis+1:]. Without
/// replacement at most n draws (ValueError beyond).
Array choice(const Array& key, int64_t n, const Shape& shape = {}, bool replace = true,
             const std::optional<Array>& p = std::nullopt, FLUXION_LOC);
Array choice(const Array& key, const Array& a, const Shape& shape = {}, bool replace = true,
             const std::optional<Array>& p = std::nullopt, int64_t axis = 0, FLUXION_LOC);

/// The inverse error function, elementwise, for float inputs in [-1, 1] (±1 give ±inf, beyond: nan).
/// float32, float16 and bfloat16 evaluate Giles' single-precision polynomial in float32 exactly as
/// XLA does (w = -log1p(-x*x)): relative error below 2e-7 on [-0.99, 0.99]; closer to ±1 the
/// rounding of x*x dominates (about 1e-3 relative at 1 - 1e-6). float64 refines that estimate with
/// two Newton steps on erf, to about 1e-14 relative.
Array erf_inv(const ArrayLike& x, FLUXION_LOC);

}  // namespace fluxion::random
