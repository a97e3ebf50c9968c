// The FFT's kernel: FFTW 3 (libfftw3, with its own run-time SIMD dispatch), plans cached per
// transform shape. prims/fft.cpp holds the primitive's block; this file only computes.
#pragma once
#include <string_view>

#include "ir/params.h"
#include "ir/eval_rules.h"

namespace fluxion::fft_kernel {

/// jax.lax.FftType: fft and ifft are complex -> complex, rfft real -> complex (the last axis keeps
/// n/2 + 1 bins), irfft complex -> real. The inverses are scaled by 1 / prod(lengths).
enum class FftType { fft, ifft, rfft, irfft };
/// The fft_type param's spellings, indexed by FftType (compiled code passes the index).
inline constexpr std::string_view kFftTypeNames[] = {"fft", "ifft", "rfft", "irfft"};
/// Parses "fft" / "ifft" / "rfft" / "irfft"; false if unknown.
bool parse_fft_type(std::string_view s, FftType* out);
std::string_view fft_type_name(FftType t);

/// Computes the transform over the trailing lengths.size() axes of `in` into `out` (both
/// contiguous, row-major, of the types the shape rule gave), batched over the leading axes.
void run(FftType type, const IntList& lengths, const View& in, const View& out);

}  // namespace fluxion::fft_kernel
