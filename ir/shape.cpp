#include "ir/shape.h"

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

std::string AbstractArray::str() const {
  std::string s(dtype_name(dtype));
  s += shape.str();
  if (weak_type) s += "{weak}";
  return s;
}
std::ostream& operator<<(std::ostream& os, const AbstractArray& a) { return os << a.str(); }

}  // namespace fluxion
