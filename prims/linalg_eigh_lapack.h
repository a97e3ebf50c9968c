// eigh's LAPACK kernel for large matrices (prims/linalg_eigh_lapack.cpp).
#pragma once

namespace fluxion::linalg_rules {

/// Every eigenvalue (ascending, into w [n]) and eigenvector (the columns of z, column-major [n, n])
/// of the symmetric matrix whose lower triangle the column-major a [n, n] holds; a is overwritten.
/// What LAPACK's syevd('V', 'L') computes, in its three steps (sytrd, stedc, the back-transformation),
/// the third one and stedc's first split Fluxion's. Returns LAPACK's info: 0, or > 0 where stedc
/// did not converge.
int eigh_lower(int n, float* a, float* w, float* z);
int eigh_lower(int n, double* a, double* w, double* z);

}  // namespace fluxion::linalg_rules
