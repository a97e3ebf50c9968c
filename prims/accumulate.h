// What the reductions (prims/reduce.cpp) and the cumulative scans (prims/cumulative.cpp) share: the
// type a sum or product accumulates in, the conversions into and out of it, an operand seen as
// [outer, len, inner] around one axis, and the order of complex values.
#pragma once
#include <complex>
#include <cstdint>
#include <type_traits>

#include "ir/dtype.h"
#include "ir/shape.h"

namespace fluxion::accumulate {

/// The type a sum or product of T accumulates in: float16/bfloat16 in float, float32 and float64
/// in double, complex in complex<double>, integers in uint64 (wrapping modulo 2^bits at the end,
/// as XLA's integer arithmetic does, without C++'s signed-overflow undefined behaviour).
template <class T>
using acc_t = std::conditional_t<
    is_complex_type<T>, std::complex<double>,
    std::conditional_t<std::is_same_v<T, float> || std::is_same_v<T, double>, double,
                       std::conditional_t<std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>, float, uint64_t>>>;

/// Converts one stored value into the accumulator type (integers sign-extend into uint64).
template <class Acc, class T>
Acc to_acc(T v) {
  if constexpr (std::is_same_v<Acc, uint64_t> && std::is_signed_v<T>)
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  else
    return static_cast<Acc>(static_cast<compute_t<T>>(v));
}
/// Stores an accumulator back as T (integers truncate modulo 2^bits: two's-complement wrapping).
template <class T, class Acc>
T from_acc(Acc a) {
  if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) return T(float(a));
  else if constexpr (std::is_same_v<T, bool>) return a != Acc(0);
  else return static_cast<T>(a);
}

/// A shape split around one axis into (outer, len, inner) element counts.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};
inline AxisSplit split_at(const Shape& s, int64_t axis) {
  AxisSplit a;
  for (int d = 0; d < s.rank(); ++d) {
    if (d < axis) a.outer *= s[size_t(d)];
    else if (d == axis) a.len = s[size_t(d)];
    else a.inner *= s[size_t(d)];
  }
  return a;
}

/// a > b; complex values compare lexicographically, real parts first, as numpy and JAX order them
/// (argmax, max, cummax).
template <class C>
bool greater(C a, C b) {
  if constexpr (is_complex_type<C>) return a.real() > b.real() || (a.real() == b.real() && a.imag() > b.imag());
  else return a > b;
}

}  // namespace fluxion::accumulate
