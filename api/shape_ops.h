// Shape manipulation with numpy names (jax.numpy semantics): reshape, transpose, expand_dims,
// squeeze, flip, concatenate, stack, slice, pad, ravel, swapaxes, moveaxis, tile; and (in
// api/rearrange.cpp) roll, repeat, split, array_split, meshgrid.
// (broadcast_to lives in api/operands.h.)
//
// Axes may be negative (counted from the end) everywhere. Bad axes, sizes or bounds raise
// ShapeError naming the op, the operand types and the caller's line. Ops that are no-ops for
// the given arguments (an identity permutation, an empty squeeze, a flip of no axes, padding by
// zero) return x itself and add nothing to a traced program; reshape always binds, so a traced
// program states every reshape the user wrote.
#pragma once
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "api/elementwise.h"
#include "ir/params.h"

namespace fluxion {

/// numpy reshape (row-major). One entry of `shape` may be -1: it is inferred from the size.
Array reshape(const Array& x, const Shape& shape, FLUXION_LOC);
/// The flat 1-D view: reshape(x, {-1}).
Array ravel(const Array& x, FLUXION_LOC);

/// Reverses the axes (numpy's default): a matrix transpose for 2-D arrays.
Array transpose(const Array& x, FLUXION_LOC);
/// Output axis i is input axis axes[i]; `axes` is a permutation of the axes.
Array transpose(const Array& x, const IntList& axes, FLUXION_LOC);
/// Exchanges two axes.
Array swapaxes(const Array& x, int64_t axis1, int64_t axis2, FLUXION_LOC);
/// Moves axis `source` to position `destination`, keeping the others in order.
Array moveaxis(const Array& x, int64_t source, int64_t destination, FLUXION_LOC);

/// Inserts a size-1 axis at position `axis` of the result (-1: last).
Array expand_dims(const Array& x, int64_t axis, FLUXION_LOC);
/// Inserts several size-1 axes; positions refer to the result, as in numpy.
Array expand_dims(const Array& x, const IntList& axes, FLUXION_LOC);
/// Removes every size-1 axis.
Array squeeze(const Array& x, FLUXION_LOC);
/// Removes the listed axes, which must have size 1.
Array squeeze(const Array& x, const IntList& axes, FLUXION_LOC);

/// Reverses the order of elements along every axis / the listed axes.
Array flip(const Array& x, FLUXION_LOC);
Array flip(const Array& x, const IntList& axes, FLUXION_LOC);

/// Joins arrays along an existing axis. Dtypes are promoted as in jax.numpy; every other axis
/// must agree. At least one array.
Array concatenate(const std::vector<Array>& xs, int64_t axis = 0, FLUXION_LOC);
/// Joins equally shaped arrays along a new axis at position `axis` of the result.
Array stack(const std::vector<Array>& xs, int64_t axis = 0, FLUXION_LOC);

/// lax.slice: elements start[d] <= i < limit[d] (every `strides[d]`-th one), one entry per axis,
/// with 0 <= start <= limit <= size. `fx::slice(m, {0, 1}, {2, 2})`.
Array slice(const Array& x, const IntList& start, const IntList& limit, FLUXION_LOC);
Array slice(const Array& x, const IntList& start, const IntList& limit, const IntList& strides, FLUXION_LOC);

/// numpy pad in constant mode: pad_width holds (before, after) per axis, both >= 0, or a single
/// pair applied to every axis (a 0-d x is returned as is); `value` is converted to x's dtype. ValueError for negative widths.
/// `fx::pad(x, {{1, 2}, {0, 1}})`, `fx::pad(x, {{1, 1}}, -1.f)`.
Array pad(const Array& x, const std::vector<std::pair<int64_t, int64_t>>& pad_width, const ArrayLike& value = 0,
          FLUXION_LOC);

/// numpy tile: repeats x `reps[d]` times along each axis (reps shorter than x's rank are padded
/// with 1s in front; longer reps add leading axes). Every rep >= 0.
Array tile(const Array& x, const IntList& reps, FLUXION_LOC);

/// numpy roll: elements shifted by `shift` positions along `axis` (those pushed past the end come
/// back at the start; a negative shift goes the other way). Without an axis, the flattened array
/// rolls and keeps its shape. Several shifts and axes roll each in turn.
Array roll(const Array& x, int64_t shift, std::optional<int64_t> axis = std::nullopt, FLUXION_LOC);
Array roll(const Array& x, const IntList& shifts, const IntList& axes, FLUXION_LOC);

/// numpy repeat: each element repeated `repeats` times along `axis` (of the flattened array
/// without an axis). A list gives each element its own count (one entry per element along the
/// axis, or a single one for all). Counts are static and >= 0.
Array repeat(const Array& x, int64_t repeats, std::optional<int64_t> axis = std::nullopt, FLUXION_LOC);
Array repeat(const Array& x, const IntList& repeats, std::optional<int64_t> axis = std::nullopt, FLUXION_LOC);

/// numpy split into `sections` equal pieces along `axis` (a size not divisible by it is a
/// ValueError; array_split allows it, giving the first size % sections pieces one more element),
/// or at the given indices (pieces [0, i0), [i0, i1), ..., [ik, end); indices past the end give
/// empty pieces).
std::vector<Array> split(const Array& x, int64_t sections, int64_t axis = 0, FLUXION_LOC);
std::vector<Array> split(const Array& x, const IntList& indices, int64_t axis = 0, FLUXION_LOC);
std::vector<Array> array_split(const Array& x, int64_t sections, int64_t axis = 0, FLUXION_LOC);

/// numpy meshgrid of 1-D arrays (0-d ones count as length 1): one array per input, each of the
/// grid's shape, keeping its input's dtype. "xy" (the default, Cartesian) puts the first two
/// inputs' lengths in the order (len(x1), len(x0), ...); "ij" (matrix) keeps the inputs' order.
std::vector<Array> meshgrid(const std::vector<Array>& xs, std::string_view indexing = "xy", FLUXION_LOC);

}  // namespace fluxion
