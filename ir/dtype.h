// Element types, their storage types, and JAX's type-promotion lattice.
#pragma once
#include <cstddef>
#include <cstdint>
#include <complex>
#include <cstring>
#include <iosfwd>
#include <string_view>
#include <type_traits>

namespace fluxion {

/// The closed set of element types. The order is the order of the X-macro below.
enum class DType : uint8_t { bool_, int8, int32, int64, uint8, uint32, float16, bfloat16, float32, float64,
                            complex64, complex128 };

inline constexpr DType bool_ = DType::bool_;
inline constexpr DType int8 = DType::int8;
inline constexpr DType int32 = DType::int32;
inline constexpr DType int64 = DType::int64;
inline constexpr DType uint8 = DType::uint8;
inline constexpr DType uint32 = DType::uint32;
inline constexpr DType float16 = DType::float16;
inline constexpr DType bfloat16 = DType::bfloat16;
inline constexpr DType float32 = DType::float32;
inline constexpr DType float64 = DType::float64;
inline constexpr DType complex64 = DType::complex64;
inline constexpr DType complex128 = DType::complex128;
inline constexpr int kNumDTypes = 12;

/// IEEE binary16 storage. Arithmetic happens in float32.
struct float16_t {
  uint16_t bits = 0;
  float16_t() = default;
  explicit float16_t(float f);
  operator float() const;
};

/// bfloat16 storage (the top half of a float32, rounded to nearest even).
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  explicit bfloat16_t(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) { bits = uint16_t((u >> 16) | 0x40); return; }  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    bits = uint16_t(u >> 16);
  }
  operator float() const {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

/// Short name as printed in programs: bool i8 i32 i64 u8 u32 f16 bf16 f32 f64 c64 c128.
std::string_view dtype_name(DType d);
/// Long name as in the API: bool int8 ... float64 complex64 complex128.
std::string_view dtype_long_name(DType d);
/// Parses either spelling; returns false if unknown.
bool parse_dtype(std::string_view s, DType* out);
/// Prints the long name, as numpy prints a dtype: `std::cout << x.dtype()` shows "float32".
std::ostream& operator<<(std::ostream& os, DType d);

constexpr size_t itemsize(DType d) {
  switch (d) {
    case DType::bool_: case DType::int8: case DType::uint8: return 1;
    case DType::float16: case DType::bfloat16: return 2;
    case DType::int32: case DType::uint32: case DType::float32: return 4;
    case DType::int64: case DType::float64: case DType::complex64: return 8;
    case DType::complex128: return 16;
  }
  return 0;
}
constexpr bool is_float(DType d) {
  return d == DType::float16 || d == DType::bfloat16 || d == DType::float32 || d == DType::float64;
}
constexpr bool is_signed_int(DType d) { return d == DType::int8 || d == DType::int32 || d == DType::int64; }
constexpr bool is_unsigned_int(DType d) { return d == DType::uint8 || d == DType::uint32; }
constexpr bool is_integer(DType d) { return is_signed_int(d) || is_unsigned_int(d); }
constexpr bool is_bool(DType d) { return d == DType::bool_; }
/// complex64 (two float32: real, imaginary) and complex128 (two float64), stored interleaved as
/// std::complex, C99's _Complex and numpy's complex64/complex128 are.
constexpr bool is_complex(DType d) { return d == DType::complex64 || d == DType::complex128; }
/// Floating or complex: the dtypes that carry derivatives (JAX's "inexact").
constexpr bool is_inexact(DType d) { return is_float(d) || is_complex(d); }
/// The dtype of a complex dtype's parts (c64 -> f32, c128 -> f64); any other dtype is its own.
constexpr DType real_dtype_of(DType d) {
  return d == DType::complex64 ? DType::float32 : d == DType::complex128 ? DType::float64 : d;
}
/// The complex dtype with parts of a real floating dtype: f64 -> c128, every other float -> c64.
constexpr DType complex_dtype_of(DType d) {
  return is_complex(d) ? d : d == DType::float64 ? DType::complex128 : DType::complex64;
}

/// The C++ storage type of a dtype, and the dtype of a C++ type.
template <DType D> struct storage;
template <> struct storage<DType::bool_> { using type = bool; };
template <> struct storage<DType::int8> { using type = int8_t; };
template <> struct storage<DType::int32> { using type = int32_t; };
template <> struct storage<DType::int64> { using type = int64_t; };
template <> struct storage<DType::uint8> { using type = uint8_t; };
template <> struct storage<DType::uint32> { using type = uint32_t; };
template <> struct storage<DType::float16> { using type = float16_t; };
template <> struct storage<DType::bfloat16> { using type = bfloat16_t; };
template <> struct storage<DType::float32> { using type = float; };
template <> struct storage<DType::float64> { using type = double; };
template <> struct storage<DType::complex64> { using type = std::complex<float>; };
template <> struct storage<DType::complex128> { using type = std::complex<double>; };
template <DType D> using storage_t = typename storage<D>::type;

template <class T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::bool_; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::int8; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::int32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::int64; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::uint8; };
template <> struct dtype_of<uint32_t> { static constexpr DType value = DType::uint32; };
template <> struct dtype_of<float16_t> { static constexpr DType value = DType::float16; };
template <> struct dtype_of<bfloat16_t> { static constexpr DType value = DType::bfloat16; };
template <> struct dtype_of<float> { static constexpr DType value = DType::float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::float64; };
template <> struct dtype_of<std::complex<float>> { static constexpr DType value = DType::complex64; };
template <> struct dtype_of<std::complex<double>> { static constexpr DType value = DType::complex128; };
template <class T>
  requires(std::is_same_v<T, long long> && !std::is_same_v<long long, int64_t>)
struct dtype_of<T> { static constexpr DType value = DType::int64; };
template <class T> inline constexpr DType dtype_of_v = dtype_of<T>::value;

/// The type kernels compute in: float for the 16-bit floats, the storage type otherwise.
template <class T> struct compute_type { using type = T; };
template <> struct compute_type<float16_t> { using type = float; };
template <> struct compute_type<bfloat16_t> { using type = float; };
template <class T> using compute_t = typename compute_type<T>::type;

template <class T> inline constexpr bool is_complex_type = false;
template <class T> inline constexpr bool is_complex_type<std::complex<T>> = true;
/// The type of a complex type's parts; a real type is its own.
template <class T> struct real_part { using type = T; };
template <class T> struct real_part<std::complex<T>> { using type = T; };
template <class T> using real_part_t = typename real_part<T>::type;

/// Raises TypeError: a kernel written for the real dtypes was handed a complex one (the shape
/// rules normally reject it first; this keeps a missed case from becoming a wrong answer).
[[noreturn]] void complex_not_supported(DType d);

/// Calls f(storage_t<D>{}) -- i.e. f with a value of the storage type -- for the runtime dtype d,
/// one of the real dtypes (a complex one raises TypeError; kernels that take complex operands
/// use dispatch_dtype_complex).
template <class F>
decltype(auto) dispatch_dtype(DType d, F&& f) {
  switch (d) {
    case DType::bool_: return f(bool{});
    case DType::int8: return f(int8_t{});
    case DType::int32: return f(int32_t{});
    case DType::int64: return f(int64_t{});
    case DType::uint8: return f(uint8_t{});
    case DType::uint32: return f(uint32_t{});
    case DType::float16: return f(float16_t{});
    case DType::bfloat16: return f(bfloat16_t{});
    case DType::float32: return f(float{});
    case DType::float64: return f(double{});
    case DType::complex64: case DType::complex128: complex_not_supported(d);
  }
  return f(float{});
}

/// dispatch_dtype over every dtype, the complex ones included.
template <class F>
decltype(auto) dispatch_dtype_complex(DType d, F&& f) {
  if (d == DType::complex64) return f(std::complex<float>{});
  if (d == DType::complex128) return f(std::complex<double>{});
  return dispatch_dtype(d, std::forward<F>(f));
}

/// JAX's promotion lattice (jax.numpy.promote_types) restricted to Fluxion's dtypes.
/// A weakly typed operand (a C++ scalar) joins as the abstract "int*" or "float*" node, so
/// `x_f16 * 2.0` stays float16 and `x_i32 * 2.5` becomes float32 (weak). The result's weak flag
/// is set when the join is itself an abstract node.
struct PromotedType {
  DType dtype;
  bool weak;
};
PromotedType promote_types(DType a, bool a_weak, DType b, bool b_weak);
inline DType promote_types(DType a, DType b) { return promote_types(a, false, b, false).dtype; }

/// The dtypes that abstract nodes default to (JAX without x64): int32 and float32.
inline constexpr DType default_int = DType::int32;
inline constexpr DType default_float = DType::float32;

}  // namespace fluxion
