// Functions built on sorting, with jax.numpy / jax.lax names: searchsorted, top_k, the order
// statistics (median, quantile, percentile) and unique. Each is a composition of the sort primitive
// and ordinary ops, so every transformation sees through it -- except unique without a size, whose
// result's shape depends on the values (eager only, as in JAX).
//
//   auto [values, indices] = fx::top_k(logits, 5);        // along the last axis
//   fx::median(x);  fx::quantile(x, 0.9, 0);  fx::percentile(x, fx::array({25.f, 75.f}), 1);
//   fx::searchsorted(edges, x);  fx::unique(labels);  fx::unique(labels, /*size=*/10, /*fill_value=*/-1);
//
// Orders are numpy's: NaN sorts after +inf (it is the largest for top_k and searchsorted).
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "api/elementwise.h"

namespace fluxion {

/// numpy searchsorted: for each element of v, the int32 position in the sorted 1-D `a` where it
/// would be inserted to keep `a` sorted -- before equal elements ("left") or after them ("right").
/// The result has v's shape. Computed by comparing every v against every element of a (JAX's
/// method="compare_all"): memory grows with size(v) * len(a).
Array searchsorted(const ArrayLike& a, const ArrayLike& v, std::string_view side = "left", FLUXION_LOC);

/// jax.lax.top_k: the k largest elements along the last axis, in descending order, and their int32
/// indices (equal elements: the lower index first; NaN counts as the largest). 0 <= k <= the axis's
/// size, else ValueError. Differentiable in the values.
std::pair<Array, Array> top_k(const ArrayLike& x, int64_t k, FLUXION_LOC);

/// jnp.quantile: the q-th quantiles (q in [0, 1]: a scalar or an array of any shape, whose dims
/// lead the result's) along `axis` (of the flattened array when none), interpolating between the
/// sorted elements at positions floor(q (n - 1)) and ceil(q (n - 1)) by `method`: "linear" (the
/// default), "lower", "higher", "nearest" (the lower one up to a fraction of 0.5, as JAX), "midpoint".
/// Integer and bool operands give float32. A slice holding NaN gives NaN; an empty one NaN.
/// keepdims keeps the reduced axis (all axes when none) with size 1. Differentiable in x.
Array quantile(const ArrayLike& x, const ArrayLike& q, std::optional<int64_t> axis = std::nullopt,
               std::string_view method = "linear", bool keepdims = false, FLUXION_LOC);
/// quantile(x, p / 100).
Array percentile(const ArrayLike& x, const ArrayLike& p, std::optional<int64_t> axis = std::nullopt,
                 std::string_view method = "linear", bool keepdims = false, FLUXION_LOC);
/// quantile(x, 0.5): the middle element, or the mean of the two middle ones.
Array median(const ArrayLike& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false, FLUXION_LOC);

/// numpy unique: the sorted distinct elements of the flattened x (NaNs count as one value). Its
/// length depends on the values, so it runs eagerly only: under a trace it is a
/// ConcretizationError pointing to the form with a size.
Array unique(const ArrayLike& x, FLUXION_LOC);
/// jnp.unique(x, size=..., fill_value=...): the first `size` sorted distinct elements, padded with
/// `fill_value` (default: the smallest element) -- a static shape, so it traces, jits and vmaps.
Array unique(const ArrayLike& x, int64_t size, std::optional<double> fill_value = std::nullopt, FLUXION_LOC);

/// numpy unique_all (eager only, as unique): the distinct values, the index of each one's first
/// occurrence in the flattened x, for each element of x the index of its value (x's shape), and
/// how many times each value occurs. Indices and counts are int32.
struct UniqueAll {
  Array values, indices, inverse_indices, counts;
};
UniqueAll unique_all(const ArrayLike& x, FLUXION_LOC);

}  // namespace fluxion
