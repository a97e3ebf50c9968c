#include "ir/dtype.h"

#include <ostream>
#include <string>

#include "ir/error.h"

#include <array>

namespace fluxion {

namespace {
constexpr std::array<std::string_view, kNumDTypes> kShort = {"bool", "i8",  "i32",  "i64", "u8",
                                                              "u32",  "f16", "bf16", "f32", "f64", "c64", "c128"};
constexpr std::array<std::string_view, kNumDTypes> kLong = {"bool",    "int8",    "int32",    "int64",   "uint8",
                                                             "uint32",  "float16", "bfloat16", "float32", "float64",
                                                             "complex64", "complex128"};
}  // namespace

std::string_view dtype_name(DType d) { return kShort[size_t(d)]; }
std::string_view dtype_long_name(DType d) { return kLong[size_t(d)]; }

std::ostream& operator<<(std::ostream& os, DType d) { return os << dtype_long_name(d); }

bool parse_dtype(std::string_view s, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (s == kShort[i] || s == kLong[i]) {
      *out = DType(i);
      return true;
    }
  return false;
}

// IEEE half <-> float, round to nearest even, with subnormals, inf and NaN.
float16_t::float16_t(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) { bits = uint16_t(sign | 0x7e00u); return; }     // NaN
  if (mag >= 0x477ff000u) { bits = uint16_t(sign | 0x7c00u); return; }    // overflow (rounds to inf)
  if (mag < 0x38800000u) {                                                // subnormal or zero in half
    if (mag < 0x33000000u) { bits = uint16_t(sign); return; }             // underflow to zero
    uint32_t e = mag >> 23;
    uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;                                             // 14..24
    uint32_t half = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    bits = uint16_t(sign | half);
    return;
  }
  uint32_t h = ((mag - 0x38000000u) >> 13);
  uint32_t rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  bits = uint16_t(sign | h);
}

float16_t::operator float() const {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t e = (bits >> 10) & 0x1fu;
  uint32_t m = bits & 0x3ffu;
  uint32_t x;
  if (e == 0) {
    if (m == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int shift = 0;
      while (!(m & 0x400u)) { m <<= 1; ++shift; }
      m &= 0x3ffu;
      x = sign | uint32_t(113 - shift) << 23 | m << 13;
    }
  } else if (e == 31) {
    x = sign | 0x7f800000u | m << 13;
  } else {
    x = sign | (e + 112) << 23 | m << 13;
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// ---- promotion lattice --------------------------------------------------------------------------
// Nodes of JAX's lattice, including the types Fluxion does not have (i16, u16, u64), so that joins
// are computed on the true lattice and only then mapped to the nearest available type above.
namespace {
enum Node { B1, IW, FW, CW, U8, U16, U32, U64, I8, I16, I32, I64, BF16, F16, F32, F64, C64, C128, kNodes };

constexpr int kEdges[kNodes][3] = {
    {IW, -1, -1},        // b1
    {U8, I8, -1},        // i*
    {BF16, F16, CW},     // f*
    {C64, -1, -1},       // c*
    {I16, U16, -1},      // u8
    {I32, U32, -1},      // u16
    {I64, U64, -1},      // u32
    {FW, -1, -1},        // u64
    {I16, -1, -1},       // i8
    {I32, -1, -1},       // i16
    {I64, -1, -1},       // i32
    {FW, -1, -1},        // i64
    {F32, -1, -1},       // bf16
    {F32, -1, -1},       // f16
    {F64, C64, -1},      // f32
    {C128, -1, -1},      // f64
    {C128, -1, -1},      // c64
    {-1, -1, -1},        // c128
};

struct Lattice {
  std::array<uint32_t, kNodes> up{};  // bit j set: j is an upper bound of i (i included)
  constexpr Lattice() {
    for (int pass = 0; pass < kNodes; ++pass)
      for (int i = 0; i < kNodes; ++i) {
        uint32_t m = 1u << i;
        for (int j : kEdges[i])
          if (j >= 0) m |= up[j] | (1u << j);
        up[i] = m;
      }
  }
};
constexpr Lattice kLattice;

Node node_of(DType d, bool weak) {
  if (weak && is_integer(d)) return IW;
  if (weak && is_float(d)) return FW;
  if (weak && is_complex(d)) return CW;
  switch (d) {
    case DType::bool_: return B1;
    case DType::int8: return I8;
    case DType::int32: return I32;
    case DType::int64: return I64;
    case DType::uint8: return U8;
    case DType::uint32: return U32;
    case DType::float16: return F16;
    case DType::bfloat16: return BF16;
    case DType::float32: return F32;
    case DType::float64: return F64;
    case DType::complex64: return C64;
    case DType::complex128: return C128;
  }
  return F32;
}

DType dtype_of_node(Node n) {
  switch (n) {
    case B1: return DType::bool_;
    case IW: return default_int;
    case FW: return default_float;
    case CW: return DType::complex64;
    case U8: return DType::uint8;
    case U16: case U32: return DType::uint32;
    case U64: return DType::int64;  // unreachable from Fluxion's inputs
    case I8: return DType::int8;
    case I16: case I32: return DType::int32;
    case I64: return DType::int64;
    case BF16: return DType::bfloat16;
    case F16: return DType::float16;
    case F32: return DType::float32;
    case F64: return DType::float64;
    case C64: return DType::complex64;
    case C128: case kNodes: return DType::complex128;
  }
  return DType::float64;
}
}  // namespace

PromotedType promote_types(DType a, bool a_weak, DType b, bool b_weak) {
  if (a == b && a_weak == b_weak) return {a, a_weak};
  Node na = node_of(a, a_weak), nb = node_of(b, b_weak);
  uint32_t common = kLattice.up[na] & kLattice.up[nb];
  for (int n = 0; n < kNodes; ++n)
    if ((common >> n & 1u) && kLattice.up[n] == common) {
      Node r = Node(n);
      if (r == CW) {
        // Weak complex joined with weak (or bool) operands: complex128 if a weak side has 64-bit parts.
        const bool wide = (a_weak && real_dtype_of(a) == DType::float64) || (b_weak && real_dtype_of(b) == DType::float64);
        return {wide ? DType::complex128 : DType::complex64, true};
      }
      if (r == IW || r == FW) {
        // Both sides were weak (or bool): keep the wider weak dtype of the right kind.
        DType d = dtype_of_node(r);
        if (r == FW) {
          if (a_weak && is_float(a) && itemsize(a) > itemsize(d)) d = a;
          if (b_weak && is_float(b) && itemsize(b) > itemsize(d)) d = b;
        } else {
          if (a_weak && is_integer(a) && itemsize(a) > itemsize(d)) d = a;
          if (b_weak && is_integer(b) && itemsize(b) > itemsize(d)) d = b;
        }
        return {d, true};
      }
      return {dtype_of_node(r), false};
    }
  return {DType::float64, false};
}

// (Thrown directly, not through throw_error: the AOT runtime, runtime/meson.build, links this file
// without ir/error.cpp.)
void complex_not_supported(DType d) {
  throw TypeError("TypeError: dtype " + std::string(dtype_name(d)) +
                  " is not supported by this kernel (it handles the real dtypes only)");
}

}  // namespace fluxion
