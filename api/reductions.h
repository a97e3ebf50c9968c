// Reductions, cumulative sums and sorting (jax.numpy names):
//
//   fx::sum(m);  fx::sum(m, {0});  fx::mean(m, {1}, /*keepdims=*/true);  fx::max(m);
//   fx::argmax(m, 1);  fx::logsumexp(m, {1});  fx::var(x, {0}, /*ddof=*/1);  fx::sort(x);
//
// Axes may be negative (counted from the end); a repeated or out-of-range axis is a ShapeError.
// Omitting the axes (or passing `{}`) reduces over all of them. keepdims keeps each reduced axis as
// a dimension of size 1, so the result broadcasts against the operand.
//
// Dtypes follow jax.numpy: sum, prod and cumsum of bool and of integers narrower than 32 bits
// accumulate in int32 (uint32 for unsigned ones); mean, var, std and logsumexp of bool or integer
// operands are float32; float16/bfloat16 accumulate in float32 and round once at the end.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "api/elementwise.h"

namespace fluxion {

/// The axes a reduction runs over: all of them (the default), one axis, or a list.
class Axes {
 public:
  Axes() = default;
  Axes(int64_t axis) : axes_(std::vector<int64_t>{axis}) {}  // NOLINT: fx::sum(x, 1)
  Axes(std::initializer_list<int64_t> axes) : axes_(std::vector<int64_t>(axes)) {}
  Axes(std::vector<int64_t> axes) : axes_(std::move(axes)) {}  // NOLINT
  /// An empty list reduces over every axis, like no list at all.
  bool all() const { return !axes_ || axes_->empty(); }
  const std::vector<int64_t>& list() const { return *axes_; }

 private:
  std::optional<std::vector<int64_t>> axes_;
};

Array sum(const ArrayLike& x, const Axes& axes = {}, bool keepdims = false, FLUXION_LOC);
Array prod(const ArrayLike& x, const Axes& axes = {}, bool keepdims = false, FLUXION_LOC);
/// max/min over an empty axis is a ValueError (they have no identity), as in numpy and JAX.
Array max(const ArrayLike& x, const Axes& axes = {}, bool keepdims = false, FLUXION_LOC);
Array min(const ArrayLike& x, const Axes& axes = {}, bool keepdims = false, FLUXION_LOC);
Array mean(const ArrayLike& x, const Axes& axes = {}, bool keepdims = false, FLUXION_LOC);
/// Variance with `ddof` delta degrees of freedom: sum((x - mean)^2) / (N - ddof).
Array var(const ArrayLike& x, const Axes& axes = {}, int64_t ddof = 0, bool keepdims = false, FLUXION_LOC);
/// Standard deviation: sqrt(var(x, axes, ddof)).
Array std(const ArrayLike& x, const Axes& axes = {}, int64_t ddof = 0, bool keepdims = false, FLUXION_LOC);
/// Whether every / any element is nonzero (bool result).
Array all(const ArrayLike& x, const Axes& axes = {}, bool keepdims = false, FLUXION_LOC);
Array any(const ArrayLike& x, const Axes& axes = {}, bool keepdims = false, FLUXION_LOC);
/// log(sum(exp(x))), computed as m + log(sum(exp(x - m))) with m the (gradient-stopped) max, so it
/// neither overflows nor underflows; rows of -inf give -inf.
Array logsumexp(const ArrayLike& x, const Axes& axes = {}, bool keepdims = false, FLUXION_LOC);

/// Index (int32) of the first maximum / minimum along `axis`, or in the flattened array when no
/// axis is given. NaN counts as the maximum and as the minimum (the first NaN wins). An empty axis
/// is a ValueError.
Array argmax(const ArrayLike& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false, FLUXION_LOC);
Array argmin(const ArrayLike& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false, FLUXION_LOC);

/// Running sum / product along `axis` (of the flattened array when no axis is given), in the dtype
/// sum/prod give (bool and narrow integers widen, as jax.numpy's).
Array cumsum(const ArrayLike& x, std::optional<int64_t> axis = std::nullopt, FLUXION_LOC);
Array cumprod(const ArrayLike& x, std::optional<int64_t> axis = std::nullopt, FLUXION_LOC);
/// Running maximum / minimum along `axis` (from the end when `reverse`), as jax.lax.cummax/cummin:
/// the operand's dtype, NaN propagates, complex values order lexicographically. The derivative
/// follows the element holding the running extremum (the latest one on ties).
Array cummax(const ArrayLike& x, int64_t axis = 0, bool reverse = false, FLUXION_LOC);
Array cummin(const ArrayLike& x, int64_t axis = 0, bool reverse = false, FLUXION_LOC);

/// Sorted copy along `axis` (NaNs last, stable).
Array sort(const ArrayLike& x, int64_t axis = -1, FLUXION_LOC);
/// The int32 indices that sort `x` along `axis` (stable: equal elements keep their order).
Array argsort(const ArrayLike& x, int64_t axis = -1, FLUXION_LOC);

}  // namespace fluxion
