// Shared pieces of the elementwise families (prims/unary.cpp, binary.cpp, compare.cpp, convert.cpp,
// reduce.cpp): dtype classes, the common shape checks, the loops the reference kernels are made of,
// and the derivative and batching helpers for operands that broadcast inside the primitive.
#pragma once
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/error.h"
#include "ir/trace.h"
#include "prims/registry.h"

namespace fluxion::elementwise {

/// The dtype classes a primitive accepts. Float, Numeric and Any are real dtypes only; the
/// complex dtypes join through Inexact (float or complex), Number (numeric or complex) and All.
enum class Accepts : uint8_t { Float, Numeric, Integer, BoolOrInt, Any, Inexact, Number, All };

inline bool accepts(Accepts a, DType d) {
  switch (a) {
    case Accepts::Float: return is_float(d);
    case Accepts::Numeric: return !is_bool(d) && !is_complex(d);
    case Accepts::Integer: return is_integer(d);
    case Accepts::BoolOrInt: return is_bool(d) || is_integer(d);
    case Accepts::Any: return !is_complex(d);
    case Accepts::Inexact: return is_inexact(d);
    case Accepts::Number: return !is_bool(d);
    case Accepts::All: return true;
  }
  return false;
}
inline const char* accepts_name(Accepts a) {
  switch (a) {
    case Accepts::Float: return "a floating dtype";
    case Accepts::Numeric: return "a numeric (non-bool) dtype";
    case Accepts::Integer: return "an integer dtype";
    case Accepts::BoolOrInt: return "a bool or integer dtype";
    case Accepts::Any: return "a real dtype";
    case Accepts::Inexact: return "a floating or complex dtype";
    case Accepts::Number: return "a numeric (non-bool) dtype";
    case Accepts::All: return "any dtype";
  }
  return "";
}

/// Integer arithmetic that wraps on overflow (two's complement), as XLA's does, computed in the
/// unsigned type where C++ defines it: signed overflow is undefined behaviour, which the optimizer
/// may exploit and UBSan reports. Other types compute as usual.
template <class C>
constexpr C wrapping_add(C x, C y) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
    using U = std::make_unsigned_t<C>;
    return C(U(U(x) + U(y)));
  } else {
    return C(x + y);
  }
}
template <class C>
constexpr C wrapping_sub(C x, C y) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
    using U = std::make_unsigned_t<C>;
    return C(U(U(x) - U(y)));
  } else {
    return C(x - y);
  }
}
template <class C>
constexpr C wrapping_mul(C x, C y) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    // Through uint64: uint8 and int8 operands would be promoted to int (and int32's square of
    // 65536 overflows int); the low bits of the 64-bit product are the wrapped result.
    return C(uint64_t(x) * uint64_t(y));
  } else {
    return C(x * y);
  }
}
template <class C>
constexpr C wrapping_neg(C x) {
  if constexpr (std::is_integral_v<C>) return wrapping_sub(C(0), x);
  else return C(-x);  // -0.0 for 0.0: 0 - x would give +0.0
}

/// The compile-time side of `accepts`: whether a kernel is instantiated for storage type T.
template <class T>
constexpr bool is_float_type = std::is_floating_point_v<T> || std::is_same_v<T, float16_t> ||
                               std::is_same_v<T, bfloat16_t>;

template <class T>
constexpr bool admits(Accepts a) {
  switch (a) {
    case Accepts::Float: return is_float_type<T>;
    case Accepts::Numeric: return !std::is_same_v<T, bool> && !is_complex_type<T>;
    case Accepts::Integer: return std::is_integral_v<T> && !std::is_same_v<T, bool>;
    case Accepts::BoolOrInt: return std::is_integral_v<T>;
    case Accepts::Any: return !is_complex_type<T>;
    case Accepts::Inexact: return is_float_type<T> || is_complex_type<T>;
    case Accepts::Number: return !std::is_same_v<T, bool>;
    case Accepts::All: return true;
  }
  return false;
}

inline void check_dtype(Accepts a, DType d) {
  if (!accepts(a, d))
    rule_error(ErrorKind::Type, std::string("expects ") + accepts_name(a) + ", got " + std::string(dtype_name(d)));
}

/// Operands of an n-ary elementwise primitive: equal shapes, except that rank-0 operands broadcast
/// (so `mul x 2.0:f32[]` needs no broadcast eqn). Returns the common shape.
inline Shape nary_shape(std::span<const AbstractArray> in) {
  const Shape* shape = nullptr;
  for (const AbstractArray& a : in) {
    if (a.shape.rank() == 0) continue;
    if (!shape) shape = &a.shape;
    else if (!(*shape == a.shape))
      rule_error(ErrorKind::Shape, "operands must have equal shapes (or be scalars), got " + shape->str() + " and " +
                                       a.shape.str());
  }
  return shape ? *shape : Shape{};
}

/// Operands of an elementwise primitive must share one dtype (promotion happens in the API).
inline DType same_dtype(std::span<const AbstractArray> in) {
  for (const AbstractArray& a : in)
    if (a.dtype != in[0].dtype)
      rule_error(ErrorKind::Type, "operands must have the same dtype, got " + std::string(dtype_name(in[0].dtype)) +
                                      " and " + std::string(dtype_name(a.dtype)));
  return in[0].dtype;
}

inline bool all_weak(std::span<const AbstractArray> in) {
  for (const AbstractArray& a : in)
    if (!a.weak_type) return false;
  return true;
}

// ---- loops --------------------------------------------------------------------------------------
// Arithmetic happens in compute_t<T> (float for the 16-bit floats) and is stored back as Out.

template <class In, class Out, class F>
void map1(const View& x, const View& y, F f) {
  const In* a = x.as<const In>();
  Out* o = y.as<Out>();
  const int64_t n = y.size();
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(static_cast<compute_t<In>>(a[i])));
}

/// Binary loop where either operand may be a broadcast scalar. The three shapes of the loop are
/// written out so the compiler vectorizes each.
template <class In, class Out, class F>
void map2(const View& x, const View& y, const View& z, F f) {
  using C = compute_t<In>;
  const In* a = x.as<const In>();
  const In* b = y.as<const In>();
  Out* o = z.as<Out>();
  const int64_t n = z.size();
  const bool sa = x.size() == 1 && n != 1, sb = y.size() == 1 && n != 1;
  if (!sa && !sb) {
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(static_cast<C>(a[i]), static_cast<C>(b[i])));
  } else if (sa && !sb) {
    const C av = static_cast<C>(a[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(av, static_cast<C>(b[i])));
  } else if (!sa && sb) {
    const C bv = static_cast<C>(b[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(static_cast<C>(a[i]), bv));
  } else {
    const C av = static_cast<C>(a[0]), bv = static_cast<C>(b[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(av, bv));
  }
}

/// Elementwise loop over three operands (select, clamp), each possibly a broadcast scalar.
template <class A, class B, class C, class Out, class F>
void map3(const View& x, const View& y, const View& z, const View& w, F f) {
  const A* a = x.as<const A>();
  const B* b = y.as<const B>();
  const C* c = z.as<const C>();
  Out* o = w.as<Out>();
  const int64_t n = w.size();
  const int64_t ia = x.size() == 1 ? 0 : 1, ib = y.size() == 1 ? 0 : 1, ic = z.size() == 1 ? 0 : 1;
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i * ia], b[i * ib], c[i * ic]);
}

// ---- derivative helpers shared by the elementwise families --------------------------------------

/// A tangent of a rank-0 operand, broadcast to the eqn's output shape (zeros stay symbolic).
inline Array lift(const Array& t, const Array& out) {
  if (is_zero(t) || t.ndim() == out.ndim()) return t;
  return bind1(Prim::broadcast_in_dim, {t}, Params{{"shape", out.shape().dims()}, {"broadcast_dimensions", IntList{}}}, {});
}

/// The cotangent of an operand of type `aval` from a cotangent of the output's shape: summed to a
/// scalar when the operand was a broadcast rank-0 operand.
inline Array unbroadcast(const Array& ct, const AbstractArray& aval) {
  if (is_zero(ct) || ct.ndim() == aval.ndim()) return ct;
  IntList axes;
  for (int i = 0; i < ct.ndim(); ++i) axes.push_back(i);
  return bind1(Prim::reduce_sum, {ct}, Params{{"axes", axes}}, {});
}

/// The batching rule of an elementwise primitive P (see elementwise_batch_rule).
template <Prim P>
std::vector<BatchedArray> batch_elementwise(std::span<const BatchedArray> args, const Params& params, int64_t axis_size,
                                     SourceLoc loc) {
  return elementwise_batch_rule(P, args, params, axis_size, loc);
}

}  // namespace fluxion::elementwise
