// Row-major index arithmetic shared by the primitives that move elements (prims/shape.cpp,
// prims/slicing.cpp, prims/indexing.cpp): the odometer over a shape, the copy of one element, and
// the checks of their index-list params, with the lists as error messages print them.
#pragma once
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/eval_rules.h"

namespace fluxion::strides {

/// Calls f(flat_index, multi_index) for every element of `shape`, in row-major order.
template <class F>
void for_each_index(const Shape& shape, F f) {
  const int64_t n = shape.numel();
  const int rank = shape.rank();
  std::vector<int64_t> idx(size_t(rank), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, idx);
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < shape[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
}

/// Calls f(window_index, offset) for every element of a window of shape `window` whose corner is at
/// `starts` in an array of shape `shape` (row-major over the window).
template <class F>
void for_each_in_window(const Shape& shape, const Shape& window, const std::vector<int64_t>& starts, F f) {
  const std::vector<int64_t> strides = strides_of(shape);
  for_each_index(window, [&](int64_t w, const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (starts[d] + idx[d]) * strides[d];
    f(w, off);
  });
}

/// Copies element i of `from` to element j of `to` (same dtype), whatever the dtype.
inline void copy_element(const View& from, int64_t i, const View& to, int64_t j) {
  const size_t isz = itemsize(to.dtype());
  std::memcpy(static_cast<char*>(to.data) + size_t(j) * isz, static_cast<const char*>(from.data) + size_t(i) * isz, isz);
}

/// "(1,2,3)", "(4,)", "()": an index list in error messages.
inline std::string ints_str(const IntList& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

/// Each entry of `dims` is a distinct dimension of an array of rank `rank` (else a ShapeError).
inline void check_distinct_dims(const char* what, const IntList& dims, int rank) {
  std::vector<bool> seen(size_t(rank), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      rule_error(ErrorKind::Shape, std::string(what) + " " + ints_str(dims) + " has an entry out of range for rank " +
                                       std::to_string(rank));
    if (seen[size_t(d)])
      rule_error(ErrorKind::Shape, std::string(what) + " " + ints_str(dims) + " repeats dimension " + std::to_string(d));
    seen[size_t(d)] = true;
  }
}

/// `v` has one entry per dimension of an array of rank `rank` (else a ShapeError).
inline void check_length(const char* what, const IntList& v, int rank) {
  if (int(v.size()) != rank)
    rule_error(ErrorKind::Shape, std::string(what) + " " + ints_str(v) + " must have one entry per dimension (rank " +
                                     std::to_string(rank) + ")");
}

/// Exactly n operands (else a TypeError).
inline void expect_operands(std::span<const AbstractArray> in, size_t n) {
  if (in.size() != n)
    rule_error(ErrorKind::Type, "expects " + std::to_string(n) + " operand(s), got " + std::to_string(in.size()));
}

}  // namespace fluxion::strides
