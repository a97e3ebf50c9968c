// numpy/JAX subscripts on Arrays: x[...] reads, x.at(...).set/add/mul/min/max(v) write (a
// functional update: x is unchanged, the result is a new array). Each entry of a subscript is
//   an integer          2, -1 (negative counts from the end); removes that axis
//   fx::Slice(a, b, s)  numpy's a:b:s (fx::colon is ':', fx::Slice(1, {}) is '1:'); keeps the axis
//   an integer Array    any shape, traced or not: numpy's advanced indexing (with several, they
//                       broadcast together; their dims go where the first sits when the advanced
//                       entries are adjacent, else in front, as numpy does)
//   fx::ellipsis        numpy's `...`: as many ':' as the axes the other entries leave (at most one)
//   fx::newaxis         numpy's None / np.newaxis: a new axis of size 1 at that place
// and covers the leading axes (x[{1}] of a matrix is its row 1; x[{fx::ellipsis, 0}] its column 0). Everything is traceable,
// differentiable, batchable and jittable: reads with only integers and slices are one slice (and a
// reshape); the rest is a gather, and updates a scatter, on x with the indexed axes flattened.
//
// Out of range: a static integer is a ShapeError; an index array is clamped when reading and its
// out-of-range entries are dropped when writing (JAX's defaults). Repeated indices: set keeps one
// of the writes, add/mul/min/max combine all of them.
//
// Boolean masks, the where form: the shape of x[mask] depends on the data, so it is a TypeError
// pointing here; x.at(mask).set(v) (mask broadcastable to x) is where(mask, v, x), and add/mul/
// min/max likewise combine where the mask is true.
//
// mul/min/max with index arrays combine the updates through a one-hot [updates x positions]
// selection (exact with repeats, differentiable; memory grows with both counts).
#pragma once
#include <concepts>
#include <optional>
#include <vector>

#include "api/elementwise.h"
#include "ir/array.h"

namespace fluxion {

/// numpy's start:stop:step. A missing start/stop is the axis's end in the step's direction.
struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
  Slice() = default;
  Slice(std::optional<int64_t> start_, std::optional<int64_t> stop_, int64_t step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
};
/// ':', the whole axis (x[{fx::colon, 0}] is numpy's x[:, 0]).
inline const Slice colon{};

/// numpy's `...` in a subscript: x[{fx::ellipsis, 0}] is x[..., 0].
struct EllipsisType {};
inline constexpr EllipsisType ellipsis{};
/// numpy's None (np.newaxis) in a subscript: x[{fx::colon, fx::newaxis}] is x[:, None].
struct NewAxisType {};
inline constexpr NewAxisType newaxis{};

/// One entry of a subscript; it records the user's line (operator[] takes no defaulted argument).
struct Index {
  enum class Kind { integer, slice, array, ellipsis, newaxis };
  Kind kind;
  int64_t integer = 0;
  Slice slice;
  Array array;
  SourceLoc loc;

  template <std::integral T>
  Index(T i, std::source_location l = std::source_location::current())  // NOLINT
      : kind(Kind::integer), integer(int64_t(i)), loc(l) {}
  Index(const Slice& s, std::source_location l = std::source_location::current())  // NOLINT
      : kind(Kind::slice), slice(s), loc(l) {}
  Index(const Array& a, std::source_location l = std::source_location::current())  // NOLINT
      : kind(Kind::array), array(a), loc(l) {}
  Index(EllipsisType, std::source_location l = std::source_location::current())  // NOLINT
      : kind(Kind::ellipsis), loc(l) {}
  Index(NewAxisType, std::source_location l = std::source_location::current())  // NOLINT
      : kind(Kind::newaxis), loc(l) {}
};

/// x.at(...): what the subscript selects, and the functional updates of it. `v` broadcasts to
/// the shape x[...] has and is converted to x's dtype.
class At {
 public:
  At(Array x, std::vector<Index> index) : x_(std::move(x)), index_(std::move(index)) {}
  Array get(FLUXION_LOC) const;
  Array set(const ArrayLike& v, FLUXION_LOC) const;
  Array add(const ArrayLike& v, FLUXION_LOC) const;
  Array mul(const ArrayLike& v, FLUXION_LOC) const;
  Array min(const ArrayLike& v, FLUXION_LOC) const;
  Array max(const ArrayLike& v, FLUXION_LOC) const;

  enum class Op { set, add, mul, min, max };

 private:
  Array update(Op op, const ArrayLike& v, SourceLoc loc) const;
  Array x_;
  std::vector<Index> index_;
};

/// x[index...] as a function (what operator[] calls).
Array getitem(const Array& x, const std::vector<Index>& index, FLUXION_LOC);

}  // namespace fluxion
