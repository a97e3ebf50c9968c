// One matrix product block, out = op(lhs) @ op(rhs), as each ISA-level build of Eigen's product
// (matmul_eigen.cpp) computes it. kernels/matmul.cpp cuts a library call's (batched) product into
// such blocks, one per thread, and hands them to the build its target asks for.
//
// This header is compiled into the per-level objects too (with -march=x86-64-vN), so it declares
// plain data and functions only: an inline function here would be emitted in every level's object
// and the linker could keep an AVX-512 copy for all callers (tests/check_level_symbols.sh checks).
#pragma once
#include <cstdint>

namespace fluxion::runtime {

/// Row-major m x n block `out` (rows `out_stride` elements apart) = op(lhs) @ op(rhs), where op(lhs)
/// is m x k and op(rhs) k x n. A transposed operand is stored the other way round: element (i, p)
/// of op(lhs) is lhs[i * lhs_stride + p], or lhs[p * lhs_stride + i] when trans_lhs.
struct MatmulBlock {
  int64_t m, n, k;
  const void* lhs;
  int64_t lhs_stride;
  bool trans_lhs;
  const void* rhs;
  int64_t rhs_stride;
  bool trans_rhs;
  void* out;
  int64_t out_stride;
};

/// Eigen's product built for one x86-64 level (matmul_eigen.cpp, one object per level; level 1 is
/// the library's own baseline build and the only one on other architectures). float32 or float64.
void matmul_eigen_level1(bool is_double, const MatmulBlock& b);
void matmul_eigen_level2(bool is_double, const MatmulBlock& b);
void matmul_eigen_level3(bool is_double, const MatmulBlock& b);
void matmul_eigen_level4(bool is_double, const MatmulBlock& b);

}  // namespace fluxion::runtime
