#include "ir/shape.h"

#include <algorithm>
#include <ostream>

namespace fluxion {

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ',';
    s += std::to_string(data()[i]);
  }
  return s + "]";
}
std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

std::string shape_problem(const Shape& s, DType dtype) {
  for (int64_t d : s)
    if (d < 0) return "the shape " + s.str() + " has a negative dimension";
  // Zero dimensions count as 1: an empty array still has strides, and those must not wrap either.
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, std::max<int64_t>(d, 1), &n))
      return "the shape " + s.str() + " has more elements than an int64 counts";
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, int64_t(itemsize(dtype)), &bytes))
    return "the shape " + s.str() + " of " + std::string(dtype_long_name(dtype)) + " takes more bytes than an int64 counts";
  return "";
}

std::string AbstractArray::str() const {
  std::string s(dtype_name(dtype));
  s += shape.str();
  if (weak_type) s += "{weak}";
  return s;
}
std::ostream& operator<<(std::ostream& os, const AbstractArray& a) { return os << a.str(); }

}  // namespace fluxion
