// Creating arrays: from host data (fx::array), and by shape (zeros, ones, full, arange, ...).
// Shape-driven constructors bind primitives (broadcast_in_dim, iota), so inside a transformation
// they are staged into the program rather than baked in as large constants.
#pragma once
#include <initializer_list>
#include <vector>

#include "api/elementwise.h"
#include "ir/array.h"

namespace fluxion {

/// An array holding a copy of host data of a supported element type, with the given shape
/// (default: 1-D). ShapeError if the sizes disagree.
template <class T>
Array array(const std::vector<T>& data, const Shape& shape, FLUXION_LOC);
template <class T>
Array array(const std::vector<T>& data, FLUXION_LOC) {
  return array(data, Shape{int64_t(data.size())}, loc);
}
/// Nested brace lists: fx::array({1.f, 2.f}), fx::array({{1.0, 2.0}, {3.0, 4.0}}).
template <class T>
Array array(std::initializer_list<T> data, FLUXION_LOC) {
  return array(std::vector<T>(data), loc);
}
template <class T>
Array array(std::initializer_list<std::initializer_list<T>> rows, FLUXION_LOC);
template <class T>
Array array(std::initializer_list<std::initializer_list<std::initializer_list<T>>> blocks, FLUXION_LOC);

/// A 0-d array: scalar(2.5f) is float32[], scalar(2.5) float64[], scalar(3) int32[].
template <Scalar T>
Array scalar(T v, FLUXION_LOC);
template <Scalar T>
Array scalar(T v, DType dtype, FLUXION_LOC);
namespace detail {
Array weak_scalar(const ArrayLike& v, SourceLoc loc);
}
/// A 0-d array holding a C++ scalar, as jnp.array(3.0) holds a Python one: weakly typed, of the kind
/// a C++ scalar has in an expression -- fx::array(3.f) and fx::array(3.0) are float32[] (weak),
/// fx::array(3) int32[] (weak), fx::array(true) bool[] -- so `x_f16 * fx::array(2.f)` stays float16.
/// fx::scalar is the typed one (scalar(3.0) is float64[]).
template <Scalar T>
Array array(T v, FLUXION_LOC) {
  return detail::weak_scalar(v, loc);
}

Array zeros(const Shape& shape, DType dtype = float32, FLUXION_LOC);
Array ones(const Shape& shape, DType dtype = float32, FLUXION_LOC);
/// full(shape, value): a C++ scalar value is weakly typed (float or double -> float32, an integer
/// -> int32, bool -> bool); an Array value keeps its dtype.
Array full(const Shape& shape, const ArrayLike& value, FLUXION_LOC);
Array full(const Shape& shape, const ArrayLike& value, DType dtype, FLUXION_LOC);
Array zeros_like(const Array& x, FLUXION_LOC);
Array ones_like(const Array& x, FLUXION_LOC);
Array full_like(const Array& x, const ArrayLike& value, FLUXION_LOC);
namespace detail {
/// The dtype C++ bounds give arange: int32 when all are integers, float32 otherwise.
template <Scalar... Ts>
constexpr DType bounds_dtype() {
  return (std::is_integral_v<Ts> && ...) ? int32 : float32;
}
}  // namespace detail

/// 0, 1, ..., up to `stop` (exclusive), in the bound's type as jnp.arange(stop): arange(10) is
/// int32[10], arange(4.f) and arange(4.0) float32[4] (the C++ scalar rule below), arange(2.5)
/// float32[3]; `dtype` overrides. A template, so no bound converts silently to another type.
template <Scalar T>
Array arange(T stop, DType dtype = detail::bounds_dtype<T>(), FLUXION_LOC);
/// start, start+step, ... below stop (numpy semantics). The dtype follows the C++ scalar rule
/// (docs/linalg.md, "C++ scalars"): all-integer bounds give int32, any floating bound float32 --
/// arange(2, 5) is i32[3], arange(0.0, 1.0, 0.25) f32[4] -- unless `dtype` says otherwise.
template <Scalar A, Scalar B, Scalar S = int>
Array arange(A start, B stop, S step = 1, DType dtype = detail::bounds_dtype<A, B, S>(), FLUXION_LOC);
/// n evenly spaced values from start to stop inclusive; float32 for any C++ bounds (integers
/// included, as in JAX) unless `dtype` says otherwise.
template <Scalar A, Scalar B>
Array linspace(A start, B stop, int64_t n, DType dtype = float32, FLUXION_LOC);
/// The n x n identity (or n x m with `m`).
Array eye(int64_t n, DType dtype = float32, FLUXION_LOC);
Array eye(int64_t n, int64_t m, DType dtype, FLUXION_LOC);
/// lax.iota: 0..n-1 along `dimension` of an array of `shape`.
Array iota(DType dtype, const Shape& shape, int64_t dimension = 0, FLUXION_LOC);

namespace detail {
Array array_from_host(const void* data, DType dtype, const Shape& shape, size_t count, SourceLoc loc);
Array arange_int(int64_t start, int64_t stop, int64_t step, DType dtype, SourceLoc loc);
Array arange_float(double start, double stop, double step, DType dtype, SourceLoc loc);
Array linspace(double start, double stop, int64_t n, DType dtype, SourceLoc loc);
}  // namespace detail

template <Scalar T>
Array arange(T stop, DType dtype, SourceLoc loc) {
  if constexpr (std::is_integral_v<T>)
    return detail::arange_int(0, int64_t(stop), 1, dtype, loc);
  else
    return detail::arange_float(0.0, double(stop), 1.0, dtype, loc);
}
template <Scalar A, Scalar B, Scalar S>
Array arange(A start, B stop, S step, DType dtype, SourceLoc loc) {
  if constexpr (std::is_integral_v<A> && std::is_integral_v<B> && std::is_integral_v<S>)
    return detail::arange_int(int64_t(start), int64_t(stop), int64_t(step), dtype, loc);
  else
    return detail::arange_float(double(start), double(stop), double(step), dtype, loc);
}
template <Scalar A, Scalar B>
Array linspace(A start, B stop, int64_t n, DType dtype, SourceLoc loc) {
  return detail::linspace(double(start), double(stop), n, dtype, loc);
}

// ---- template definitions ------------------------------------------------------------------------
template <class T>
Array array(const std::vector<T>& data, const Shape& shape, SourceLoc loc) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(data.begin(), data.end());
    return detail::array_from_host(bytes.data(), DType::bool_, shape, bytes.size(), loc);
  } else {
    return detail::array_from_host(data.data(), dtype_of_v<T>, shape, data.size(), loc);
  }
}
template <class T>
Array array(std::initializer_list<std::initializer_list<T>> rows, SourceLoc loc) {
  std::vector<T> flat;
  int64_t width = rows.size() ? int64_t(rows.begin()->size()) : 0;
  for (const auto& r : rows) {
    if (int64_t(r.size()) != width)
      throw ShapeError("ShapeError: array at " + loc.str() + ": rows of a nested list must have equal lengths (" +
                       std::to_string(width) + " and " + std::to_string(r.size()) + ")");
    flat.insert(flat.end(), r.begin(), r.end());
  }
  return array(flat, Shape{int64_t(rows.size()), width}, loc);
}
template <class T>
Array array(std::initializer_list<std::initializer_list<std::initializer_list<T>>> blocks, SourceLoc loc) {
  std::vector<T> flat;
  int64_t rows = blocks.size() ? int64_t(blocks.begin()->size()) : 0;
  int64_t width = rows ? int64_t(blocks.begin()->begin()->size()) : 0;
  for (const auto& b : blocks) {
    if (int64_t(b.size()) != rows)
      throw ShapeError("ShapeError: array at " + loc.str() + ": blocks of a nested list must have equal lengths");
    for (const auto& r : b) {
      if (int64_t(r.size()) != width)
        throw ShapeError("ShapeError: array at " + loc.str() + ": rows of a nested list must have equal lengths");
      flat.insert(flat.end(), r.begin(), r.end());
    }
  }
  return array(flat, Shape{int64_t(blocks.size()), rows, width}, loc);
}
template <Scalar T>
Array scalar(T v, SourceLoc loc) {
  if constexpr (std::is_same_v<T, bool>) {
    uint8_t b = v;
    return detail::array_from_host(&b, DType::bool_, Shape{}, 1, loc);
  } else {
    return detail::array_from_host(&v, dtype_of_v<T>, Shape{}, 1, loc);
  }
}
template <Scalar T>
Array scalar(T v, DType dtype, SourceLoc loc) {
  return astype(scalar(v, loc), dtype, loc);
}

}  // namespace fluxion
