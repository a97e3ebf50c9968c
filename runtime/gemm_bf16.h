// The bfloat16 matrix product on AVX512-BF16 (runtime/gemm_bf16.cpp): `vdpbf16ps` multiplies the
// bfloat16 pairs of two registers and adds both products to a float32 lane, 32 multiply-adds per
// instruction against the 16 of a float32 FMA. runtime/matmul.cpp takes it for bfloat16 operands
// where the CPU and the kernels' target have the feature (prims/isa_level.h) and cuts the product
// into blocks for the threads as it does for Eigen's.
//
// Plain data and declarations only: the kernel's functions carry AVX-512 target attributes, and
// nothing inline here may be compiled with them.
#pragma once
#include <cstdint>

#include "runtime/matmul_block.h"

namespace fluxion::runtime {

/// Register tile of the micro-kernel: kBf16Rows output rows by kBf16Cols columns (two registers of
/// 16 float32 lanes per row: 24 accumulators of the 32 registers).
constexpr int64_t kBf16Rows = 12, kBf16Cols = 32;
/// Cache blocks: kBf16Depth of k (a packed panel of B, kBf16Depth x kBf16Cols bfloat16, is 32 KiB,
/// the L1 of a Zen 4 or Sapphire Rapids core), kBf16RowBlock rows of A packed at a time (96 KiB)
/// and kBf16ColBlock columns of B (512 KiB), both in a 1 MiB L2. A deeper block means fewer passes
/// over the float32 output (read and written once per block of k), which is what slows the largest
/// products: 384 measured a few percent slower, 256 10% slower (docs/jit.md).
constexpr int64_t kBf16Depth = 512, kBf16RowBlock = 8 * kBf16Rows, kBf16ColBlock = 512;
/// Sizes, in 32-bit words (one bfloat16 pair each), of the two packing buffers a block needs.
constexpr int64_t kBf16PackA = kBf16RowBlock * kBf16Depth / 2, kBf16PackB = kBf16ColBlock * kBf16Depth / 2;

/// out (float32, `b.out_stride` apart) = op(lhs) @ op(rhs) for a block of bfloat16 operands, in
/// float32 accumulation; `pack_a` and `pack_b` are the caller's scratch of kBf16PackA and
/// kBf16PackB words (64-byte aligned). Only call where host_has_avx512bf16().
void gemm_bf16_block(const MatmulBlock& b, uint32_t* pack_a, uint32_t* pack_b);

/// The two packing buffers of the calling thread, 64-byte aligned (thread_local, kept across calls).
struct Bf16Packs {
  uint32_t* a;
  uint32_t* b;
};
Bf16Packs bf16_pack_scratch();

/// The right operand of a convolution's im2col product, read straight from its bfloat16 input
/// instead of from gathered columns (runtime/conv.cpp): row r is (input feature r / k_size, kernel
/// offset k = r % k_size), column j is (image j / positions, output position p = j % positions),
/// and `positions` is a multiple of kBf16Cols, so that each panel of kBf16Cols columns lies in one
/// image. Within each half of a panel (kBf16Runs positions: an output row of 16 or part of a longer
/// one) the window reads one run of consecutive input elements, padding masked: with
/// s = k * (positions / kBf16Runs) + p / kBf16Runs, element (r, j) is
///   x[image * image_stride + feature * feature_stride + run_base[s] + p % kBf16Runs]
/// where bit p % kBf16Runs of run_mask[s] is set, else zero.
constexpr int64_t kBf16Runs = kBf16Cols / 2;
struct Bf16WindowRuns {
  const uint16_t* x;
  int64_t image_stride, feature_stride, k_size, positions;
  const int64_t* run_base;
  const uint16_t* run_mask;
};

/// gemm_bf16_block with op(rhs) = `cols` (b.rhs and b.trans_rhs unused): the panels of B are
/// packed by masked loads from the input, with no columns gathered in between.
void gemm_bf16_window_block(const MatmulBlock& b, const Bf16WindowRuns& cols, uint32_t* pack_a, uint32_t* pack_b);

}  // namespace fluxion::runtime
