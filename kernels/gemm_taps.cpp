// The tap product (kernels/gemm_taps.h): per block of output rows and output position, each
// R x kTileCols tile of the result accumulates W_k x X_k over the live kernel offsets k and their
// input features in registers and is stored once. The right operand needs no packing: the input
// transposed once per block of kTileCols images (tap_transpose_*) is already in the tiles' layout,
// one input position's features a run of kTileCols-word steps. docs/resnet_step.md has the measurements.
#include "kernels/gemm_taps.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/tile_simd.h"

// GCC 12's AVX-512 intrinsics start from a deliberately undefined register (kernels/gemm_tiles.cpp).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace fluxion::runtime {

namespace {

// One R x kTileCols tile, accumulated over its `live` taps: per tap t, `steps` steps of the packed
// kernel from a[t] (kTileRows words a step) and of the transposed input from b[t] (kTileCols words).
// The tile of the earlier tap form (a product per kernel offset, adding to the output) moved the
// float32 output -- 2 MB per 32 images at 8x8 and 256 features -- through the cache once per
// offset, which cost what skipping the padding saved (docs/resnet_step.md).
template <class E, int R>
FLUXION_TILE_TARGET void tap_tile(int64_t live, const uint32_t* const* a, const uint32_t* const* b, int64_t steps, float* out,
                                  int64_t ld, int64_t rows) {
  __m512 acc[R][2];
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t t = 0; t < live; ++t) {
    const uint32_t* at = a[t];
    const uint32_t* bt = b[t];
    for (int64_t q = 0; q < steps; ++q, at += kTileRows, bt += kTileCols) tile_step<E, R>(acc, at, bt);
  }
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) {
    if (i >= rows) break;
    _mm512_storeu_ps(out + i * ld, acc[i][0]);
    _mm512_storeu_ps(out + i * ld + 16, acc[i][1]);
  }
}

// Per block of output rows whose packed kernel (all taps, kTapKernelBlock bytes) stays in L2, per
// output position: the live taps' runs of the transposed input (a few rows of positions around it,
// also in L2) with each tile of the block. Adding to the output per group of taps whose runs fit
// L1 (the usual GEMM's blocks of k) measured slower than one store per tile (docs/resnet_step.md).
template <class E>
void product_of_taps(int64_t m, const TapColumns& t, float* out, int64_t ld) {
  const int64_t steps = t.depth / kPerWord<E>, row_steps = t.taps * steps;
  const int64_t tiles = (m + kTileRows - 1) / kTileRows;
  const int64_t block_tiles = std::clamp<int64_t>(kTapKernelBlock / (row_steps * kTileRows * 4), 1, tiles);
  std::vector<const uint32_t*> a(size_t(t.taps)), b(size_t(t.taps));
  std::vector<int64_t> tap(size_t(t.taps));
  const uint32_t* xt = static_cast<const uint32_t*>(t.xt);
  for (int64_t i0 = 0; i0 < m; i0 += block_tiles * kTileRows) {
    const int64_t mb = std::min(block_tiles * kTileRows, m - i0);
    const uint32_t* pack = t.w + i0 * row_steps;
    for (int64_t p = 0; p < t.positions; ++p) {
      int64_t live = 0;
      for (int64_t k = 0; k < t.taps; ++k) {
        const int64_t s = t.source[k * t.positions + p];
        if (s < 0) continue;
        tap[size_t(live)] = k, b[size_t(live)] = xt + s * steps * kTileCols;
        ++live;
      }
      for (int64_t ir = 0; ir < mb; ir += kTileRows) {
        const int64_t rows = std::min(kTileRows, mb - ir);
        for (int64_t l = 0; l < live; ++l) a[size_t(l)] = pack + ir * row_steps + tap[size_t(l)] * steps * kTileRows;
        auto run = rows > 8 ? tap_tile<E, int(kTileRows)> : rows > 4 ? tap_tile<E, 8> : tap_tile<E, 4>;
        run(live, a.data(), b.data(), steps, out + (i0 + ir) * ld + p * kTileCols, ld, rows);
      }
    }
  }
}

// The two 16-value halves of a register interleaved into pairs (vpermw).
constexpr InterleaveIndex<32, 16> kPairs;

// The transposed input, 16 positions of one step (a feature pair, or a feature) by 16 images at a
// time: per image a register of the step's 16 words at those positions (bfloat16: the two features'
// runs interleaved into pairs), then the 16 x 16 transpose gives per position the 16 images' words,
// one 64-byte store each.
template <class E>
FLUXION_TILE_TARGET void transpose_for_taps(const E* x, int64_t image_stride, int64_t feature_stride, int64_t features,
                                            int64_t positions, E* xt) {
  constexpr int64_t per = kPerWord<E>;
  const int64_t steps = features / per;
  uint32_t* dst = reinterpret_cast<uint32_t*>(xt);
  const __m512i pairs = _mm512_load_si512(kPairs.index);
  for (int64_t q = 0; q < steps; ++q)
    for (int64_t s0 = 0; s0 < positions; s0 += 16) {
      const int64_t n = std::min<int64_t>(16, positions - s0);
      const __mmask16 mask = lanes(n);
      for (int64_t b0 = 0; b0 < kTileCols; b0 += 16) {
        __m512i r[16], tr[16];
        for (int64_t i = 0; i < 16; ++i) {
          const E* row = x + (b0 + i) * image_stride + q * per * feature_stride + s0;
          if constexpr (sizeof(E) == 4) {
            r[i] = _mm512_maskz_loadu_epi32(mask, row);
          } else {
            const __m256i lo = _mm256_maskz_loadu_epi16(mask, row), hi = _mm256_maskz_loadu_epi16(mask, row + feature_stride);
            r[i] = _mm512_permutexvar_epi16(pairs, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
          }
        }
        transpose16x16(r, tr);
        for (int64_t j = 0; j < n; ++j) _mm512_storeu_si512(dst + ((s0 + j) * steps + q) * kTileCols + b0, tr[j]);
      }
    }
}

// The output by blocks of 16 positions x 16 images of one feature: 16 loads of a position's images,
// the 16 x 16 transpose, then per image one store of its 16 positions (masked at the end).
template <class E>
FLUXION_TILE_TARGET void store_taps(const float* out, int64_t m, int64_t positions, E* y, int64_t image_stride,
                                    int64_t feature_stride) {
  const int64_t ld = positions * kTileCols;
  for (int64_t o = 0; o < m; ++o)
    for (int64_t p0 = 0; p0 < positions; p0 += 16) {
      const int64_t n = std::min<int64_t>(16, positions - p0);
      const __mmask16 mask = lanes(n);
      for (int64_t b0 = 0; b0 < kTileCols; b0 += 16) {
        __m512i r[16], t[16];
        for (int64_t j = 0; j < 16; ++j)
          r[j] = j < n ? _mm512_loadu_si512(out + o * ld + (p0 + j) * kTileCols + b0) : _mm512_setzero_si512();
        transpose16x16(r, t);
        for (int64_t i = 0; i < 16; ++i) {
          E* dst = y + (b0 + i) * image_stride + o * feature_stride + p0;
          if constexpr (sizeof(E) == 4) _mm512_mask_storeu_epi32(dst, mask, t[i]);
          else _mm256_mask_storeu_epi16(dst, mask, round_bf16(_mm512_castsi512_ps(t[i])));
        }
      }
    }
}

}  // namespace

void tap_store_bf16(const float* out, int64_t m, int64_t positions, uint16_t* y, int64_t image_stride, int64_t feature_stride) {
  store_taps(out, m, positions, y, image_stride, feature_stride);
}
void tap_store_f32(const float* out, int64_t m, int64_t positions, float* y, int64_t image_stride, int64_t feature_stride) {
  store_taps(out, m, positions, y, image_stride, feature_stride);
}
void gemm_bf16_tap_block(int64_t m, const TapColumns& t, float* out, int64_t out_stride) {
  product_of_taps<uint16_t>(m, t, out, out_stride);
}
void gemm_f32_tap_block(int64_t m, const TapColumns& t, float* out, int64_t out_stride) { product_of_taps<float>(m, t, out, out_stride); }
void tap_transpose_bf16(const uint16_t* x, int64_t image_stride, int64_t feature_stride, int64_t features, int64_t positions,
                        uint16_t* xt) {
  transpose_for_taps(x, image_stride, feature_stride, features, positions, xt);
}
void tap_transpose_f32(const float* x, int64_t image_stride, int64_t feature_stride, int64_t features, int64_t positions,
                       float* xt) {
  transpose_for_taps(x, image_stride, feature_stride, features, positions, xt);
}

}  // namespace fluxion::runtime

#else  // not x86-64: no caller (the tiles' targets are x86-64 only)

namespace fluxion::runtime {
void gemm_bf16_tap_block(int64_t, const TapColumns&, float*, int64_t) {}
void gemm_f32_tap_block(int64_t, const TapColumns&, float*, int64_t) {}
void tap_transpose_bf16(const uint16_t*, int64_t, int64_t, int64_t, int64_t, uint16_t*) {}
void tap_transpose_f32(const float*, int64_t, int64_t, int64_t, int64_t, float*) {}
void tap_store_bf16(const float*, int64_t, int64_t, uint16_t*, int64_t, int64_t) {}
void tap_store_f32(const float*, int64_t, int64_t, float*, int64_t, int64_t) {}
}  // namespace fluxion::runtime

#endif
