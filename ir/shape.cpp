#include "ir/shape.h"

#include "ir/dim_expr.h"

#include <algorithm>
#include <ostream>

namespace fluxion {

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ',';
    s += dim_str(data()[i]);  // a symbolic dim prints as its expression: "[b,784]"
  }
  return s + "]";
}
std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

namespace {
std::string size_problem(const Shape& s, DType dtype, bool allow_symbolic) {
  DimExpr e;
  for (int64_t d : s) {
    if (d >= 0) continue;
    // A symbolic dim is a valid code; any other negative value is a negative size -- or a rule's
    // arithmetic on a symbolic dim's code, which needs the concrete value a polymorphic trace
    // does not have (docs/shape_polymorphism.md).
    if (is_symbolic_dim(d) && decode_dim(d, e)) {
      if (allow_symbolic) continue;
      return "the shape " + s.str() + " has the symbolic dimension " + e.str() + ": an array of it can be traced, not made";
    }
    if (is_symbolic_dim(d) || d < kSymbolicDimBase / 2)
      return "the shape " + s.str() + " comes from arithmetic on a symbolic dimension that needs its concrete value";
    return "the shape " + s.str() + " has a negative dimension";
  }
  // Zero dimensions count as 1: an empty array still has strides, and those must not wrap either.
  // Symbolic dims count as 1 here: their sizes are checked when the call binds them.
  int64_t n = 1;
  for (int64_t d : s)
    if (d >= 0 && __builtin_mul_overflow(n, std::max<int64_t>(d, 1), &n))
      return "the shape " + s.str() + " has more elements than an int64 counts";
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, int64_t(itemsize(dtype)), &bytes))
    return "the shape " + s.str() + " of " + std::string(dtype_long_name(dtype)) + " takes more bytes than an int64 counts";
  return "";
}
}  // namespace

std::string shape_problem(const Shape& s, DType dtype) { return size_problem(s, dtype, /*allow_symbolic=*/false); }
std::string symbolic_shape_problem(const Shape& s, DType dtype) { return size_problem(s, dtype, /*allow_symbolic=*/true); }

std::string AbstractArray::str() const {
  std::string s(dtype_name(dtype));
  s += shape.str();
  if (weak_type) s += "{weak}";
  return s;
}
std::ostream& operator<<(std::ostream& os, const AbstractArray& a) { return os << a.str(); }

}  // namespace fluxion
