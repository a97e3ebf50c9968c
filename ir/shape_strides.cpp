// Row-major strides (ir/shape.h), apart from the rest of ir/shape.cpp so that the AOT runtime's
// convolutions link them without the symbolic-dimension code.
#include "ir/shape.h"

namespace fluxion {

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

}  // namespace fluxion
