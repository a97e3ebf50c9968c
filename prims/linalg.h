// Shared pieces of the matrix primitives (prims/linalg.cpp, linalg_spectral.cpp): every one works
// on the last two dims of its operands and loops over the leading (batch) dims, handing each matrix
// to Eigen's kernel for the CPU's level (run_linalg, prims/linalg_block.h); derivative rules are
// written with the batched helpers below.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "lax/lax.h"
#include "prims/linalg_block.h"
#include "prims/registry.h"

namespace fluxion::linalg_rules {

using Arrays = std::span<const Array>;

/// Shape rule checks: a float32/float64 operand of rank >= 2 (square when asked).
void check_matrix(const AbstractArray& a, const char* what, bool square);
/// prod(shape[:-2]): how many matrices a batched operand holds.
int64_t batch_count(const Shape& s);
/// s with its last two dims replaced by (rows, cols), or the last dim by `last` (vectors).
Shape with_matrix(const Shape& s, int64_t rows, int64_t cols);
Shape with_vector(const Shape& s, int64_t last);

/// A block for `op` on operands of dtype `d` (float32 or float64: the shape rules admit only those).
LinalgBlock block_of(LinalgOp op, DType d);
/// Matrix (or vector) `i` of a batched kernel operand whose matrices hold `elements` each.
void* matrix_at(const View& v, int64_t i, int64_t elements);
/// Which kernels run_linalg uses: chosen by size (the default; docs/linalg.md has the measured
/// crossovers), or always Eigen's, or LAPACK's wherever it has one (tests run the op table on both
/// paths; benchmarks compare them). FLUXION_LINALG=auto|eigen|lapack sets it at start (another value
/// is a ValueError).
enum class LinalgKernels { by_size, eigen, lapack };
void set_linalg_kernels(LinalgKernels k);
LinalgKernels linalg_kernels();
/// Whether run_linalg hands `b` to OpenBLAS's LAPACK (prims/linalg_lapack.cpp) rather than Eigen.
bool uses_lapack(const LinalgBlock& b);
/// Runs one matrix with LAPACK (uses_lapack) or the Eigen build for kernel_isa_level()
/// (prims/isa_level.h).
void run_linalg(LinalgBlock& b);
/// Runs `blk` on each of the `count` matrices of a batched kernel call: matrix k's operands are
/// matrix_at(in[i], k, in_elements[i]) (a, then b) and its outputs matrix_at(out[i], k,
/// out_elements[i]). Matrices that go to Eigen are split over library_threads() threads
/// (library_parallel, prims/library_threads.h) when the batch holds enough work (Eigen's
/// decompositions run on one thread each); LAPACK's run one after another, each on OpenBLAS's threads.
void run_each_matrix(LinalgBlock& blk, int64_t count, std::span<const View> in, std::initializer_list<int64_t> in_elements,
                     std::span<const View> out, std::initializer_list<int64_t> out_elements);
/// The level of the Eigen build that runs `op` at x86-64 `level` (prims/linalg_block.h): the level
/// itself, but level 1's at level 2 (no SSE4.2 build), level 3's for eigh and svd at level 4, 0
/// (none: LAPACK runs them) for eigh and svd below level 3, and 1 off x86-64.
int linalg_eigen_build(LinalgOp op, int level);
/// How many matrices the Eigen build of `level` (1, 3 or 4), or LAPACK, has computed in this
/// process (for tests).
uint64_t linalg_blocks_computed(int level);
uint64_t linalg_lapack_blocks_computed();
/// How many batches run_each_matrix has split over threads in this process (for tests).
uint64_t linalg_batches_split();

// ---- batched helpers for the rules (operands of equal batch dims) ----------------------------------
Array mm(const Array& a, const Array& b);  // a @ b over the last two dims
Array mT(const Array& a);                  // swaps the last two dims
Array sym(const Array& a);                 // (a + a^T) / 2 over the last two dims
/// 1 on and below (lower) or on and above the k-th diagonal, else 0, shaped like a's matrices.
Array triangle_mask(const AbstractArray& a, bool lower, int64_t k);
Array tril(const Array& a, int64_t k = 0);
Array triu(const Array& a, int64_t k = 0);
Array eye_like(const AbstractArray& a);  // the identity, broadcast to a's shape
Array diagonal(const Array& a);          // [..., n, n] -> [..., n]
Array to_diagonal(const Array& v);       // [..., n] -> [..., n, n]
/// v [..., n] as every row (rows_of) or every column (cols_of) of a [..., m, n] / [..., n, k] matrix.
Array rows_of(const Array& v, const Shape& like);
Array cols_of(const Array& v, const Shape& like);
Array triangular_solve(const Array& a, const Array& b, bool left_side, bool lower, bool transpose_a,
                       bool unit_diagonal);
/// 1/x where x != 0, else 0 (the convention of the spectral derivatives' degenerate cases).
Array safe_reciprocal(const Array& x);

/// The batching rule of a primitive over trailing matrices: every operand's vmap dim goes in front
/// (an unmapped operand is broadcast), so the vmap dim is one more batch dim; outputs at 0.
template <Prim P>
std::vector<BatchedArray> batch_leading(std::span<const BatchedArray> args, const Params& params, int64_t size,
                                        SourceLoc loc) {
  std::vector<Array> ins;
  for (const BatchedArray& a : args) ins.push_back(batch_at(a, 0, size, loc));
  std::vector<Array> outs = bind(P, ins, params, loc);
  std::vector<BatchedArray> r;
  for (const Array& o : outs) r.push_back({o, 0});
  return r;
}

}  // namespace fluxion::linalg_rules
