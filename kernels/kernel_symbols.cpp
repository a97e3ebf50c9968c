#include "kernels/kernel_symbols.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "ir/dtype.h"
#include "memory/buffer.h"

namespace fluxion::runtime {

namespace {

// ---- memory for kernel temporaries -----------------------------------------------------------------
void* kernel_alloc(size_t n) { return scratch_alloc(n); }
void* kernel_aligned_alloc(size_t alignment, size_t n) { return scratch_alloc(n, alignment); }
void kernel_free(void* p) { scratch_free(p); }

// ---- conversion builtins ---------------------------------------------------------------------------
// x86-64 and AArch64 pass _Float16 and __bf16 alike, in the low half of a vector register.
#if (defined(__x86_64__) || defined(__aarch64__)) && defined(__FLT16_MAX__)
#define FLUXION_KERNEL_BUILTINS 1
using Half = _Float16;

Half from_bits(uint16_t b) {
  Half h;
  std::memcpy(&h, &b, 2);
  return h;
}
uint16_t to_bits(Half h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

// f64 -> f32 rounded to odd: f32 -> 16 bits (round to nearest even) then gives the correctly
// rounded f64 -> 16-bit result, with no double rounding.
float round_to_odd(double d) {
  if (std::isnan(d)) return float(d);
  float f = float(d);
  if (std::fabs(double(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);  // truncate toward zero
  if (double(f) != d) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u |= 1u;
    std::memcpy(&f, &u, 4);
  }
  return f;
}

Half truncsfbf2(float x) { return from_bits(bfloat16_t(x).bits); }
Half truncdfbf2(double x) { return from_bits(bfloat16_t(round_to_odd(x)).bits); }
float extendbfsf2(Half x) {
  bfloat16_t b;
  b.bits = to_bits(x);
  return float(b);
}
float extendhfsf2(Half x) {
  float16_t h;
  h.bits = to_bits(x);
  return float(h);
}
double extendhfdf2(Half x) { return double(extendhfsf2(x)); }
Half truncsfhf2(float x) { return from_bits(float16_t(x).bits); }
Half truncdfhf2(double x) { return from_bits(float16_t(round_to_odd(x)).bits); }
// The older names, with the 16 bits in an integer register.
float gnu_h2f_ieee(uint16_t b) { return extendhfsf2(from_bits(b)); }
uint16_t gnu_f2h_ieee(float x) { return float16_t(x).bits; }
#endif

const KernelSymbol kSymbols[] = {
    {"_mlir_memref_to_llvm_alloc", reinterpret_cast<void*>(&kernel_alloc)},
    {"_mlir_memref_to_llvm_aligned_alloc", reinterpret_cast<void*>(&kernel_aligned_alloc)},
    {"_mlir_memref_to_llvm_free", reinterpret_cast<void*>(&kernel_free)},
#ifdef FLUXION_KERNEL_BUILTINS
    {"__truncsfbf2", reinterpret_cast<void*>(&truncsfbf2)},
    {"__truncdfbf2", reinterpret_cast<void*>(&truncdfbf2)},
    {"__extendbfsf2", reinterpret_cast<void*>(&extendbfsf2)},
    {"__extendhfsf2", reinterpret_cast<void*>(&extendhfsf2)},
    {"__extendhfdf2", reinterpret_cast<void*>(&extendhfdf2)},
    {"__truncsfhf2", reinterpret_cast<void*>(&truncsfhf2)},
    {"__truncdfhf2", reinterpret_cast<void*>(&truncdfhf2)},
    {"__gnu_h2f_ieee", reinterpret_cast<void*>(&gnu_h2f_ieee)},
    {"__gnu_f2h_ieee", reinterpret_cast<void*>(&gnu_f2h_ieee)},
#endif
};

}  // namespace

std::span<const KernelSymbol> kernel_symbols() { return kSymbols; }

}  // namespace fluxion::runtime
