// The AVX-512 register-tile GEMMs (kernels/gemm_tiles.cpp): the bfloat16 product on AVX512-BF16,
// where `vdpbf16ps` multiplies the bfloat16 pairs of two registers and adds both products to a
// float32 lane (32 multiply-adds per instruction against the 16 of a float32 FMA), and its float32
// twin on AVX-512F with the same tiles, blocking and packing, which kernels/conv_forms.cpp uses for
// convolution products whose right operand it packs straight from the input. kernels/matmul.cpp
// takes the bfloat16 kernel for bfloat16 operands where the CPU and the kernels' target have the
// feature (prims/isa_level.h) and cuts the product into blocks for the threads as it does for
// Eigen's.
//
// Both kernels pack their operands into 32-bit words: a bfloat16 word is a pair of values at k = 2q
// and 2q + 1, a float32 word one value. A "step" of k is one word: two values of k in bfloat16, one
// in float32.
//
// Plain data and declarations only: the kernel's functions carry AVX-512 target attributes, and
// nothing inline here may be compiled with them.
#pragma once
#include <cstdint>

#include "kernels/matmul_block.h"

namespace fluxion::runtime {

/// Register tile of the micro-kernels: kTileRows output rows by kTileCols columns (two registers of
/// 16 float32 lanes per row: 24 accumulators of the 32 registers).
constexpr int64_t kTileRows = 12, kTileCols = 32;
/// Cache blocks: kTileSteps steps of k (a packed panel of B, kTileSteps x kTileCols words, is 32 KiB,
/// the L1 of a Zen 4 or Sapphire Rapids core), kTileRowBlock rows of A packed at a time (96 KiB) and
/// kTileColBlock columns of B (512 KiB), both in a 1 MiB L2. A deeper block means fewer passes over
/// the float32 output (read and written once per block of k), which is what slows the largest
/// products: in bfloat16, 192 steps measured a few percent slower, 128 10% slower (docs/jit.md).
constexpr int64_t kTileSteps = 256, kTileRowBlock = 8 * kTileRows, kTileColBlock = 512;
/// Sizes, in 32-bit words, of the two packing buffers a block needs.
constexpr int64_t kTilePackA = kTileRowBlock * kTileSteps, kTilePackB = kTileColBlock * kTileSteps;

/// out (float32, `b.out_stride` apart) = op(lhs) @ op(rhs) for a block of bfloat16 operands, in
/// float32 accumulation; `pack_a` and `pack_b` are the caller's scratch of kTilePackA and
/// kTilePackB words (64-byte aligned). Only call where host_has_avx512bf16().
void gemm_bf16_block(const MatmulBlock& b, uint32_t* pack_a, uint32_t* pack_b);
/// The same for float32 operands. Only call where host_isa_level() >= 4 (AVX-512F and BW).
void gemm_f32_block(const MatmulBlock& b, uint32_t* pack_a, uint32_t* pack_b);

/// The two packing buffers of the calling thread, 64-byte aligned (thread_local, kept across calls).
struct TilePacks {
  uint32_t* a;
  uint32_t* b;
};
TilePacks tile_pack_scratch();

/// The right operand of a convolution's im2col product, read straight from its input (bfloat16 bits
/// or float32) instead of from gathered columns (kernels/conv_forms.cpp): row r is (input feature
/// r / k_size, kernel offset k = r % k_size), column j is (image j / positions, output position
/// p = j % positions), and `positions` is a multiple of kTileCols, so that each panel of kTileCols
/// columns lies in one image. Within each half of a panel (kWindowRun positions: an output row of 16
/// or part of a longer one) the window reads one run of consecutive input elements, padding masked:
/// with s = k * (positions / kWindowRun) + p / kWindowRun, element (r, j) is
///   x[image * image_stride + feature * feature_stride + run_base[s] + p % kWindowRun]
/// where bit p % kWindowRun of run_mask[s] is set, else zero.
constexpr int64_t kWindowRun = kTileCols / 2;
struct WindowRuns {
  const void* x;
  int64_t image_stride, feature_stride, k_size, positions;
  const int64_t* run_base;
  const uint16_t* run_mask;
};

/// gemm_bf16_block / gemm_f32_block with op(rhs) = `cols` (b.rhs and b.trans_rhs unused): the
/// panels of B are packed by masked loads from the input, with no columns gathered in between.
void gemm_bf16_window_block(const MatmulBlock& b, const WindowRuns& cols, uint32_t* pack_a, uint32_t* pack_b);
void gemm_f32_window_block(const MatmulBlock& b, const WindowRuns& cols, uint32_t* pack_a, uint32_t* pack_b);

/// Both operands of a convolution's by-feature product (kernels/conv_forms.cpp: the kernel
/// gradient's form, out[(b, p), o] = the sum over features c and window positions k of
/// cols[(b, p), (c, k)] w[o, (c, k)]) read straight from the convolution's arrays instead of from
/// gathered columns and a copied kernel: with runs of kWindowRun window positions, each one run of
/// the input (padding masked), s = p * (k_size / kWindowRun) + k / kWindowRun and bit
/// k % kWindowRun of run_mask[s] set,
///   cols[(b, p), (c, k)] = x[b * x_row + c * x_feature + run_base[s] + k % kWindowRun], else zero,
///   w[o, (c, k)]         = w[o * w_row + c * w_feature + k]
/// over `features` features; k_size is a multiple of 2 kWindowRun (16 steps of k in either dtype).
struct FeatureWindows {
  const void* x;
  int64_t x_row, x_feature, positions, k_size;
  const int64_t* run_base;
  const uint16_t* run_mask;
  const void* w;
  int64_t w_row, w_feature, features;
};

/// out[m x n] (float32, `out_stride` apart; m = images x positions, n = output features) = that
/// product, accumulated in float32 over all features (bfloat16 bits or float32 operands).
void gemm_bf16_feature_block(int64_t m, int64_t n, const FeatureWindows& f, float* out, int64_t out_stride, uint32_t* pack_a,
                             uint32_t* pack_b);
void gemm_f32_feature_block(int64_t m, int64_t n, const FeatureWindows& f, float* out, int64_t out_stride, uint32_t* pack_a,
                            uint32_t* pack_b);

}  // namespace fluxion::runtime
