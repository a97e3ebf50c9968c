// Complex numbers in the numpy-style API (jax.numpy names): the parts of a complex array, its
// conjugate and angle, and building one from its parts. abs of a complex array is its modulus
// (api/elementwise.h). Complex arrays come from fx::array of std::complex values, from astype, or
// from arithmetic with a std::complex scalar (a weak complex operand: `x_f32 * 1if` is complex64).
#pragma once
#include "api/elementwise.h"

namespace fluxion {

/// The real part (a real array of x's part dtype: c64 -> f32); of a real x, x itself.
Array real(const ArrayLike& x, FLUXION_LOC);
/// The imaginary part; of a real x, zeros of x's dtype.
Array imag(const ArrayLike& x, FLUXION_LOC);
/// The complex conjugate; of a real x, x itself.
Array conj(const ArrayLike& x, FLUXION_LOC);
Array conjugate(const ArrayLike& x, FLUXION_LOC);
/// re + i im, promoted to a common floating dtype and broadcast: f64 parts give complex128,
/// anything else complex64.
Array complex(const ArrayLike& re, const ArrayLike& im, FLUXION_LOC);
/// The angle of each element in radians, atan2(imag, real) (0 or pi for a real x), as a real array.
Array angle(const ArrayLike& x, FLUXION_LOC);

}  // namespace fluxion
