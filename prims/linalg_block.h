// One matrix of a linear-algebra primitive, as each x86-64-level build of its Eigen kernel
// (prims/linalg_eigen.cpp) computes it. The primitives' kernels (prims/linalg.cpp,
// linalg_spectral.cpp) loop over the batch and hand each matrix to the build for
// kernel_isa_level(), so the blocked products inside Eigen's decompositions use the CPU's widest
// vectors, and the jit's library calls, which run the same kernels, do too.
//
// This header is compiled into the per-level objects, so it declares plain data and functions
// only (the reason is kernels/matmul_block.h's; tests/check_level_symbols.sh checks both).
#pragma once
#include <cstdint>

namespace fluxion::linalg_rules {

enum class LinalgOp : int32_t { cholesky, triangular_solve, lu, qr, eigh, svd, cholesky_linear };

/// Row-major, contiguous operands and outputs of one matrix (float32, or float64 if is_double).
///   cholesky          a [n, n] -> out[0] = L [n, n]; failed if a is not positive definite
///                     (L is then all NaN)
///   triangular_solve  a [n, n], b [rows, cols] -> out[0] = x [rows, cols] solving op(a) x = b
///                     (left) or x op(a) = b; `lower` is the triangle of op(a)
///   lu                a [n, n] -> out[0] = L and U packed, out[2] = perm [n] (int32): row perm[i] of
///                     P a is row i of a (out[1], the pivots, is the primitive's to fill)
///   qr                a [m, n] -> out[0] = q [m, k], out[1] = r [k, n] (k = cols of q)
///   eigh              a [n, n] -> out[0] = v [n, n], out[1] = w [n] ascending
///   svd               a [m, n] -> out[0] = u [m, ku], out[1] = s [min(m, n)], out[2] = vt [kv, n]
///   cholesky_linear   a = L [n, n] (lower, a cholesky factor), b = x [n, n] -> out[0] [n, n]:
///                     L Phi(L^-1 sym(x) L^-T) (the tangent map), or with transpose_a its adjoint
///                     sym(L^-T Phi(L^T tril(x)) L^-1); Phi: the lower triangle, diagonal halved
struct LinalgBlock {
  LinalgOp op;
  bool is_double;
  int64_t m, n;
  int64_t rows, cols;  // triangular_solve: b; qr: q's cols in `cols`; svd: u's cols, vt's rows
  bool left, lower, transpose_a, unit_diagonal, full_matrices;
  const void* a;
  const void* b;
  void* out[3];
  bool failed;
};

/// The kernels built for one x86-64 level (level 1 is the library's baseline build and the only
/// one on other architectures; kernels/meson.build): linalg_eigen_level for every op but eigh and
/// svd, built for levels 1, 3 and 4 (level 2 runs level 1's); linalg_spectral_level for eigh and
/// svd, built for level 3 on x86-64 (level 4 runs it, levels 1 and 2 run LAPACK) and for level 1
/// elsewhere. linalg_eigen_build says which runs.
void linalg_eigen_level1(LinalgBlock& b);
void linalg_spectral_level1(LinalgBlock& b);
#if defined(__x86_64__)
void linalg_eigen_level3(LinalgBlock& b);
void linalg_eigen_level4(LinalgBlock& b);
void linalg_spectral_level3(LinalgBlock& b);
#endif

/// OpenBLAS's LAPACK on one matrix (prims/linalg_lapack.cpp), for the ops it has a kernel for
/// (all but lu, whose getrf-style pivots come from Eigen's PartialPivLU).
void linalg_lapack(LinalgBlock& b);
bool has_lapack_kernel(LinalgOp op);
/// The name of the core OpenBLAS chose for this CPU at load time (e.g. "SkylakeX", "Haswell").
const char* lapack_core_name();

}  // namespace fluxion::linalg_rules
