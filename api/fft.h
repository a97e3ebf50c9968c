// fx::fft: discrete Fourier transforms with jax.numpy.fft's names and arguments, composed as
// jnp.fft composes them: resize each transformed axis to its length (zero-pad or cut), move the
// axes to the end, one `fft` primitive (prims/fft.cpp, FFTW underneath), move them back, scale.
//
//   fx::fft::fft(x)                 over the last axis; n pads or cuts it first
//   fx::fft::rfft(x, 16, 0)         real input, n = 16 along axis 0: 9 bins
//   fx::fft::irfft(y)               back to n = 2 (m - 1) real samples (pass n for odd lengths)
//   fx::fft::fft2(x), fftn(x, {}, {0, 2}, "ortho")
//
// norm is "backward" (the inverse divides by n; the default), "ortho" (both by sqrt n) or
// "forward" (the forward transform divides by n). A bad norm, an axis out of range, a repeated
// axis or more than 3 transformed axes is a ValueError naming the function and the caller's line.
// Real inputs to fft/ifft become complex64 (complex128 for float64); integers become float32 first.
#pragma once
#include <string_view>

#include "api/elementwise.h"
#include "ir/params.h"

namespace fluxion::fft {

Array fft(const ArrayLike& x, int64_t n = -1, int64_t axis = -1, std::string_view norm = "backward", FLUXION_LOC);
Array ifft(const ArrayLike& x, int64_t n = -1, int64_t axis = -1, std::string_view norm = "backward", FLUXION_LOC);
Array rfft(const ArrayLike& x, int64_t n = -1, int64_t axis = -1, std::string_view norm = "backward", FLUXION_LOC);
Array irfft(const ArrayLike& x, int64_t n = -1, int64_t axis = -1, std::string_view norm = "backward", FLUXION_LOC);

/// Over `axes` (default: the last two), with lengths `s` (default: the axes' sizes; for irfft2
/// the last one is 2 (m - 1)).
Array fft2(const ArrayLike& x, const IntList& s = {}, const IntList& axes = {-2, -1},
           std::string_view norm = "backward", FLUXION_LOC);
Array ifft2(const ArrayLike& x, const IntList& s = {}, const IntList& axes = {-2, -1},
            std::string_view norm = "backward", FLUXION_LOC);
Array rfft2(const ArrayLike& x, const IntList& s = {}, const IntList& axes = {-2, -1},
            std::string_view norm = "backward", FLUXION_LOC);
Array irfft2(const ArrayLike& x, const IntList& s = {}, const IntList& axes = {-2, -1},
             std::string_view norm = "backward", FLUXION_LOC);

/// Over `axes` (default: the last len(s) axes, or every axis when s is empty too; at most 3).
Array fftn(const ArrayLike& x, const IntList& s = {}, const IntList& axes = {}, std::string_view norm = "backward",
           FLUXION_LOC);
Array ifftn(const ArrayLike& x, const IntList& s = {}, const IntList& axes = {}, std::string_view norm = "backward",
            FLUXION_LOC);
Array rfftn(const ArrayLike& x, const IntList& s = {}, const IntList& axes = {}, std::string_view norm = "backward",
            FLUXION_LOC);
Array irfftn(const ArrayLike& x, const IntList& s = {}, const IntList& axes = {}, std::string_view norm = "backward",
             FLUXION_LOC);

/// The sample frequencies of an n-point transform with spacing d: [0, 1, ..., n/2 - 1 (or
/// (n-1)/2), -n/2, ..., -1] / (d n); rfftfreq: [0, 1, ..., n/2] / (d n). float32 unless dtype.
Array fftfreq(int64_t n, double d = 1.0, DType dtype = DType::float32, FLUXION_LOC);
Array rfftfreq(int64_t n, double d = 1.0, DType dtype = DType::float32, FLUXION_LOC);

}  // namespace fluxion::fft
