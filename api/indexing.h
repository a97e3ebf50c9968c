// Indexing with numpy / JAX names:
//   take(x, indices, axis)                 numpy take; negative indices wrap, out-of-range ones
//                                          are clamped (JAX's retrieval semantics, mode="clip")
//   dynamic_slice(x, starts, sizes)        lax.dynamic_slice: starts are traced 0-d integers,
//   dynamic_update_slice(x, upd, starts)   clamped so the window fits (no error for any value)
//   at_set(x, indices, updates, axis)      JAX's x.at[indices].set(updates) along `axis`
//   at_add(x, indices, updates, axis)      JAX's x.at[indices].add(updates): duplicates accumulate
//   take / at_set / at_add (..., axis, batch_dims)   the first batch_dims dims of x and indices
//                                          are paired elementwise (per-row indices, as vmap needs)
// For at_set/at_add, negative indices wrap and indices still out of range after wrapping are
// dropped (JAX's scatter default). `updates` broadcasts to x.shape[:axis] + indices.shape[batch_dims:] +
// x.shape[axis+1:] and is converted to x's dtype. Indices must have an integer dtype (TypeError
// naming the op otherwise); a C++ integer is a 0-d index.
#pragma once
#include <vector>

#include "api/elementwise.h"
#include "ir/params.h"

namespace fluxion {

/// Elements of x at `indices` along `axis`; shape x.shape[:axis] + indices.shape + x.shape[axis+1:].
/// `fx::take(a, fx::array({2, 0}), 0)`.
Array take(const Array& x, const ArrayLike& indices, int64_t axis, FLUXION_LOC);
/// take with `batch_dims` leading dimensions shared by x and indices and paired elementwise
/// (tf.gather's batch_dims; 0 <= batch_dims <= axis): out[b..., o..., j..., k...] =
/// x[b..., o..., indices[b..., j...], k...], shape x.shape[:axis] + indices.shape[batch_dims:] +
/// x.shape[axis+1:]. `fx::take(x, idx, 1, 1)` picks, for each row b, the columns idx[b, :].
Array take(const Array& x, const ArrayLike& indices, int64_t axis, int64_t batch_dims, FLUXION_LOC);
/// numpy's take without an axis: indexes the flattened x.
Array take(const Array& x, const ArrayLike& indices, FLUXION_LOC);

/// The window of `sizes` starting at `starts` (one 0-d integer per axis; C++ integers or
/// arrays, traced ones included). Starts are clamped to [0, size - sizes[d]].
/// `fx::dynamic_slice(a, {fx::scalar(1)}, {2})`.
Array dynamic_slice(const Array& x, const std::vector<ArrayLike>& starts, const IntList& sizes, FLUXION_LOC);
/// x with the window at `starts` (clamped as in dynamic_slice) replaced by `update`, which has x's
/// rank and is converted to x's dtype. `fx::dynamic_update_slice(a, fx::ones({1}), {fx::scalar(0)})`.
Array dynamic_update_slice(const Array& x, const ArrayLike& update, const std::vector<ArrayLike>& starts,
                           FLUXION_LOC);

/// x.at[indices].set(updates) along `axis` (a functional update: x is unchanged).
Array at_set(const Array& x, const ArrayLike& indices, const ArrayLike& updates, int64_t axis = 0, FLUXION_LOC);
/// x.at[indices].add(updates) along `axis`; repeated indices add up.
Array at_add(const Array& x, const ArrayLike& indices, const ArrayLike& updates, int64_t axis = 0, FLUXION_LOC);
/// at_set / at_add with `batch_dims` leading dimensions of x and indices paired elementwise (as in
/// take): updates broadcast to x.shape[:axis] + indices.shape[batch_dims:] + x.shape[axis+1:].
Array at_set(const Array& x, const ArrayLike& indices, const ArrayLike& updates, int64_t axis, int64_t batch_dims,
             FLUXION_LOC);
Array at_add(const Array& x, const ArrayLike& indices, const ArrayLike& updates, int64_t axis, int64_t batch_dims,
             FLUXION_LOC);

}  // namespace fluxion
