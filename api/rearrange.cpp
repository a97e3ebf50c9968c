// numpy's rearrangements -- roll, repeat, split, array_split, meshgrid -- each a composition of
// slices, concatenations, broadcasts and reshapes (api/shape_ops.h declares them), so every
// transformation sees through them.
#include <algorithm>
#include <numeric>
#include <string>

#include "api/creation.h"
#include "api/indexing.h"
#include "api/operands.h"
#include "api/shape_ops.h"

namespace fluxion {
namespace {
[[noreturn]] void fail(ErrorKind kind, std::string_view op, const Array& x, SourceLoc loc, const std::string& detail) {
  std::vector<AbstractArray> avals{x.aval()};
  op_error(kind, op, avals, loc, detail);
}

// x[start:stop] along `axis` (0 <= start <= stop <= size).
Array piece(const Array& x, int64_t axis, int64_t start, int64_t stop, SourceLoc loc) {
  IntList lo(size_t(x.ndim()), 0), hi = x.shape().dims();
  lo[size_t(axis)] = start;
  hi[size_t(axis)] = stop;
  return slice(x, lo, hi, loc);
}

// One roll along a normalised axis: the last `shift mod n` elements move to the front.
Array roll_axis(const Array& x, int64_t shift, int64_t axis, SourceLoc loc) {
  const int64_t n = x.shape()[size_t(axis)];
  if (n == 0) return x;
  const int64_t s = ((shift % n) + n) % n;
  if (s == 0) return x;
  return concatenate({piece(x, axis, n - s, n, loc), piece(x, axis, 0, n - s, loc)}, axis, loc);
}

// The pieces between consecutive cut points along a normalised axis.
std::vector<Array> cut(const Array& x, const IntList& points, int64_t axis, SourceLoc loc) {
  const int64_t n = x.shape()[size_t(axis)];
  std::vector<Array> out;
  int64_t from = 0;
  for (size_t i = 0; i <= points.size(); ++i) {
    // numpy's x[from:to]: a cut before the previous one gives an empty piece, and the next piece
    // starts at it all the same.
    const int64_t to = i < points.size() ? std::clamp<int64_t>(points[i] < 0 ? points[i] + n : points[i], 0, n) : n;
    out.push_back(piece(x, axis, from, std::max(to, from), loc));
    from = to;
  }
  return out;
}
}  // namespace

Array roll(const Array& x, int64_t shift, std::optional<int64_t> axis, SourceLoc loc) {
  if (!axis) return reshape(roll_axis(ravel(x, loc), shift, 0, loc), x.shape(), loc);
  return roll_axis(x, shift, detail::normalize_axis("roll", *axis, x.ndim(), x.aval(), loc), loc);
}

Array roll(const Array& x, const IntList& shifts, const IntList& axes, SourceLoc loc) {
  if (shifts.size() != axes.size())
    fail(ErrorKind::Value, "roll", x, loc,
         "shifts and axes must have the same length (" + std::to_string(shifts.size()) + " and " +
             std::to_string(axes.size()) + ")");
  Array out = x;
  for (size_t i = 0; i < shifts.size(); ++i)
    out = roll_axis(out, shifts[i], detail::normalize_axis("roll", axes[i], x.ndim(), x.aval(), loc), loc);
  return out;
}

Array repeat(const Array& x, int64_t repeats, std::optional<int64_t> axis, SourceLoc loc) {
  if (repeats < 0) fail(ErrorKind::Value, "repeat", x, loc, "repeats must be >= 0, got " + std::to_string(repeats));
  if (!axis) return repeat(ravel(x, loc), repeats, 0, loc);
  const int64_t a = detail::normalize_axis("repeat", *axis, x.ndim(), x.aval(), loc);
  // A new axis of `repeats` right after `a`, broadcast, then merged into `a`.
  Shape wide = x.shape(), merged = x.shape();
  wide.insert(size_t(a + 1), repeats);
  merged[size_t(a)] *= repeats;
  return reshape(broadcast_to(expand_dims(x, a + 1, loc), wide, loc), merged, loc);
}

Array repeat(const Array& x, const IntList& repeats, std::optional<int64_t> axis, SourceLoc loc) {
  if (!axis) return repeat(ravel(x, loc), repeats, 0, loc);
  const int64_t a = detail::normalize_axis("repeat", *axis, x.ndim(), x.aval(), loc);
  const int64_t n = x.shape()[size_t(a)];
  if (repeats.size() == 1) return repeat(x, repeats[0], a, loc);
  if (int64_t(repeats.size()) != n)
    fail(ErrorKind::Shape, "repeat", x, loc,
         std::to_string(repeats.size()) + " repeat counts for an axis of size " + std::to_string(n));
  // The counts are static: the source position of every output element is known here.
  std::vector<int32_t> source;
  for (int64_t i = 0; i < n; ++i) {
    if (repeats[size_t(i)] < 0) fail(ErrorKind::Value, "repeat", x, loc, "repeat counts must be >= 0");
    source.insert(source.end(), size_t(repeats[size_t(i)]), int32_t(i));
  }
  return take(x, array(source, loc), a, loc);
}

std::vector<Array> split(const Array& x, int64_t sections, int64_t axis, SourceLoc loc) {
  if (x.ndim() == 0) fail(ErrorKind::Shape, "split", x, loc, "cannot split a 0-d array");
  const int64_t a = detail::normalize_axis("split", axis, x.ndim(), x.aval(), loc);
  const int64_t n = x.shape()[size_t(a)];
  if (sections <= 0 || n % sections != 0)
    fail(ErrorKind::Value, "split", x, loc,
         "an axis of size " + std::to_string(n) + " does not split into " + std::to_string(sections) +
             " equal sections (array_split allows unequal ones)");
  return array_split(x, sections, a, loc);
}

std::vector<Array> array_split(const Array& x, int64_t sections, int64_t axis, SourceLoc loc) {
  if (x.ndim() == 0) fail(ErrorKind::Shape, "array_split", x, loc, "cannot split a 0-d array");
  const int64_t a = detail::normalize_axis("array_split", axis, x.ndim(), x.aval(), loc);
  if (sections <= 0)
    fail(ErrorKind::Value, "array_split", x, loc, "the number of sections must be > 0, got " + std::to_string(sections));
  const int64_t n = x.shape()[size_t(a)], each = n / sections, extra = n % sections;
  IntList points;
  for (int64_t i = 1, at = 0; i < sections; ++i) points.push_back(at += each + (i <= extra ? 1 : 0));
  return cut(x, points, a, loc);
}

std::vector<Array> split(const Array& x, const IntList& indices, int64_t axis, SourceLoc loc) {
  if (x.ndim() == 0) fail(ErrorKind::Shape, "split", x, loc, "cannot split a 0-d array");
  return cut(x, indices, detail::normalize_axis("split", axis, x.ndim(), x.aval(), loc), loc);
}

std::vector<Array> meshgrid(const std::vector<Array>& xs, std::string_view indexing, SourceLoc loc) {
  std::vector<AbstractArray> avals;
  for (const Array& x : xs) avals.push_back(x.aval());
  if (indexing != "xy" && indexing != "ij")
    op_error(ErrorKind::Value, "meshgrid", avals, loc, "indexing must be \"xy\" or \"ij\", got \"" + std::string(indexing) + "\"");
  for (const Array& x : xs)
    if (x.ndim() > 1) op_error(ErrorKind::Shape, "meshgrid", avals, loc, "takes 1-D arrays (ravel them first)");
  // Input k varies along grid axis k, except that "xy" exchanges the first two.
  const size_t k = xs.size();
  std::vector<size_t> axis_of(k);
  std::iota(axis_of.begin(), axis_of.end(), size_t(0));
  if (indexing == "xy" && k >= 2) std::swap(axis_of[0], axis_of[1]);
  Shape grid(std::vector<int64_t>(k, 1));
  for (size_t i = 0; i < k; ++i) grid[axis_of[i]] = xs[i].size();
  std::vector<Array> out;
  for (size_t i = 0; i < k; ++i) {
    Shape along(std::vector<int64_t>(k, 1));
    along[axis_of[i]] = xs[i].size();
    out.push_back(broadcast_to(reshape(xs[i], along, loc), grid, loc));
  }
  return out;
}

}  // namespace fluxion
