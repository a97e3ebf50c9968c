// The tap product of a convolution (kernels/gemm_taps.cpp): im2col's product by kernel offset as an
// implicit GEMM on the AVX-512 tiles of kernels/gemm_tiles.h, which skips the products with the
// padding and keeps each output tile in registers over all offsets and input features.
#pragma once
#include <cstdint>

#include "kernels/gemm_tiles.h"

namespace fluxion::runtime {

/// A convolution's im2col product by kernel offset ("tap", kernels/conv_forms.cpp) as an implicit
/// GEMM that skips the products with the padding: out[m x (positions x kTileCols)] (float32; column
/// (p, b) = p * kTileCols + b, the images innermost) = the sum over the taps k of W_k x X_k, where
/// W_k is columns [k depth, (k + 1) depth) of the kernel -- m rows of taps x depth values, packed
/// into `w` in the tiles' panels of kTileRows rows: per panel, per step of k (a pair of values in
/// bfloat16, one in float32), kTileRows words -- and column (p, b) of X_k is image b of input position
/// source[k * positions + p], or zeros where that is negative. The input `xt` is transposed to the
/// packed layout (tap_transpose_*): per input position s, depth / (values per word) steps of
/// kTileCols words, a word holding image b's values of one step (a pair of input features in
/// bfloat16; depth even there). Each output tile is accumulated in registers over every live tap
/// and written once.
struct TapColumns {
  const uint32_t* w;
  const void* xt;
  const int64_t* source;
  int64_t taps, positions, depth;
};
/// Bytes of the packed kernel a tap product keeps in L2 (the rows of a block of output tiles, all
/// taps); the transposed input's rows around an output position share the rest of a 1 MiB L2.
constexpr int64_t kTapKernelBlock = int64_t(320) << 10;
void gemm_bf16_tap_block(int64_t m, const TapColumns& t, float* out, int64_t out_stride);
void gemm_f32_tap_block(int64_t m, const TapColumns& t, float* out, int64_t out_stride);

/// TapColumns' transposed input from kTileCols images whose features are rows of `positions`
/// consecutive elements (NCHW): element (image b, feature c, position s) is
/// x[b * image_stride + c * feature_stride + s]; `features` even in bfloat16. Only call where the
/// tap products run (AVX512-BF16 for bfloat16, x86-64-v4 for float32).
void tap_transpose_bf16(const uint16_t* x, int64_t image_stride, int64_t feature_stride, int64_t features, int64_t positions,
                        uint16_t* xt);
void tap_transpose_f32(const float* x, int64_t image_stride, int64_t feature_stride, int64_t features, int64_t positions,
                       float* xt);

/// Stores a tap product's out[m x (positions x kTileCols)] into kTileCols images of an output whose
/// features are rows of `positions` consecutive elements: y[b * image_stride + o * feature_stride +
/// p] = out[o, (p, b)], rounded to bfloat16 (to nearest even, NaN kept quiet) or as it is.
void tap_store_bf16(const float* out, int64_t m, int64_t positions, uint16_t* y, int64_t image_stride, int64_t feature_stride);
void tap_store_f32(const float* out, int64_t m, int64_t positions, float* y, int64_t image_stride, int64_t feature_stride);

}  // namespace fluxion::runtime
