// The AVX-512 tile GEMMs (kernels/gemm_tiles.h), in the usual packed form: B is packed kTileSteps
// x kTileColBlock words at a time, A kTileRowBlock x kTileSteps at a time, both in the layout the
// tile reads -- per step of k, kTileCols words of B (two registers) and kTileRows words of A
// (broadcast one at a time). A bfloat16 word is the pair of values at k = 2q and 2q + 1 (the second
// zero when k is odd), so that one `vdpbf16ps` does two values of k; a float32 word is one value,
// for one FMA. Columns and rows beyond the matrix are packed as zeros and never stored. The
// blocking loop, the packing and the tiles are templates over the element type E: uint16_t
// (bfloat16 bits) or float.
//
// Only the functions below carry the AVX-512 target: the file is compiled with the library's own
// flags, so nothing it shares with other objects (inline library functions) gets AVX-512 code. The
// float32 instantiations carry the AVX512-BF16 feature in their target too (one attribute for the
// templates) but use none of its intrinsics, the only way GCC 12 emits its instructions, so they
// run on every AVX-512 host.
#include "kernels/gemm_tiles.h"

#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/tile_simd.h"

// GCC 12's AVX-512 intrinsics start from a deliberately undefined register ("__Y = __Y"), which
// its own -Wuninitialized then reports wherever one is inlined.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace fluxion::runtime {

namespace {

int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// Values of k per 32-bit word of the packed operands.
// Two registers of 32 bfloat16 values a and b interleaved into pairs: a[e / 2] for even e, b[e / 2]
// for odd e, over e < 32 (lo) and 32 <= e < 64 (hi).
constexpr InterleaveIndex<64, 32> kInterleave;

// Packs `width` columns (of W <= 32, the rest zero) of k-major data -- element (p, j) at
// src[p * ld + j], p < depth -- into dst[q * W + j] = the word of step q of column j. float32: a
// row of 32 columns is two registers, stored as they are. bfloat16: two rows of 32 columns in two
// registers, interleaved by one vpermt2w per 16 pairs.
template <class E>
FLUXION_TILE_TARGET void pack_k_major(const E* src, int64_t ld, int64_t depth, int64_t width, int64_t W, uint32_t* dst) {
  const __mmask16 store_lo = lanes(W), store_hi = lanes(W - 16);
  if constexpr (sizeof(E) == 4) {
    const __mmask16 valid_lo = lanes(width), valid_hi = lanes(width - 16);
    for (int64_t q = 0; q < depth; ++q, dst += W) {
      const E* r = src + q * ld;
      _mm512_mask_storeu_epi32(dst, store_lo, _mm512_maskz_loadu_epi32(valid_lo, r));
      if (W > 16) _mm512_mask_storeu_epi32(dst + 16, store_hi, _mm512_maskz_loadu_epi32(valid_hi, r + 16));
    }
  } else {
    const __m512i lo = _mm512_load_si512(kInterleave.index), hi = _mm512_load_si512(kInterleave.index + 32);
    const __mmask32 valid = width >= 32 ? ~__mmask32(0) : (__mmask32(1) << width) - 1;
    for (int64_t q = 0; 2 * q < depth; ++q, dst += W) {
      const E* r0 = src + 2 * q * ld;
      const __m512i a = _mm512_maskz_loadu_epi16(valid, r0);
      const __m512i b = 2 * q + 1 < depth ? _mm512_maskz_loadu_epi16(valid, r0 + ld) : _mm512_setzero_si512();
      _mm512_mask_storeu_epi32(dst, store_lo, _mm512_permutex2var_epi16(a, lo, b));
      if (W > 16) _mm512_mask_storeu_epi32(dst + 16, store_hi, _mm512_permutex2var_epi16(a, hi, b));
    }
  }
}

// The same panel from k-contiguous data -- element (p, j) at src[j * ld + p] -- where a word is
// already one 32-bit word in memory: 16 words of 16 rows at a time by a register transpose (the
// kernel gradient's columns are k-contiguous, and a word at a time packed them at a third of the
// product's time), the last words one at a time.
template <class E>
FLUXION_TILE_TARGET void pack_k_contiguous(const E* src, int64_t ld, int64_t depth, int64_t width, int64_t W, uint32_t* dst) {
  constexpr int64_t per = kPerWord<E>;
  const int64_t steps = (depth + per - 1) / per, whole = depth / per;
  int64_t q0 = 0;
  for (; q0 + 16 <= whole; q0 += 16)
    for (int64_t j0 = 0; j0 < W; j0 += 16) {
      __m512i r[16], t[16];
      for (int i = 0; i < 16; ++i)
        r[i] = j0 + i < width ? _mm512_loadu_si512(src + (j0 + i) * ld + per * q0) : _mm512_setzero_si512();
      transpose16x16(r, t);
      const __mmask16 store = lanes(W - j0);
      for (int c = 0; c < 16; ++c) _mm512_mask_storeu_epi32(dst + (q0 + c) * W + j0, store, t[c]);
    }
  for (int64_t j = 0; j < W; ++j) {
    const E* row = src + j * ld;
    for (int64_t q = q0; q < steps; ++q) {
      uint32_t word = 0;
      if (j < width && q < whole) std::memcpy(&word, row + per * q, 4);
      else if (j < width) word = uint32_t(row[depth - 1]);  // bfloat16, odd depth: the last pair's second value is zero
      dst[q * W + j] = word;
    }
  }
}

// Packs `extent` columns (of B; rows of A) in panels of W, each `steps` x W words: element (p, j)
// at src[j * ld + p] when `k_contiguous`, else at src[p * ld + j].
template <class E>
void pack_panels(const E* src, int64_t ld, bool k_contiguous, int64_t depth, int64_t extent, int64_t W, uint32_t* dst) {
  const int64_t steps = (depth + kPerWord<E> - 1) / kPerWord<E>;
  for (int64_t j = 0; j < extent; j += W) {
    const int64_t width = min64(W, extent - j);
    if (k_contiguous) pack_k_contiguous(src + j * ld, ld, depth, width, W, dst + j * steps);
    else pack_k_major(src + j, ld, depth, width, W, dst + j * steps);
  }
}

// out[rows x cols] (= or +=, `add`) the R x kTileCols tile of a packed A panel (kTileRows words
// per step of k, of which the first R are used) and a packed B panel over `steps` steps of k:
// 2 R float32 accumulators, each step one broadcast of A's word per row and two vdpbf16ps
// (bfloat16) or FMAs (float32). Full panels take R = kTileRows (24 accumulators); a last panel of
// at most 4 or 8 rows takes R = 4 or 8 -- at 64 rows, the 64-feature convolutions' products,
// 12-row tiles computed 72 rows, 12.5% of them zeros.
template <class E, int R>
FLUXION_TILE_TARGET void tile(int64_t steps, const uint32_t* a, const uint32_t* b, float* out, int64_t ld, int64_t rows,
                              int64_t cols, bool add) {
  // The output tile's lines, fetched while the products run: a product whose output outgrows L2
  // (1024 x 1024 float32) otherwise waits for them at every store, at half the speed.
  for (int64_t i = 0; i < rows; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(out + i * ld), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(out + i * ld + 16), _MM_HINT_T0);
  }
  __m512 acc[R][2];
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t q = 0; q < steps; ++q, a += kTileRows, b += kTileCols) tile_step<E, R>(acc, a, b);
  const __mmask16 m0 = lanes(cols), m1 = lanes(cols - 16);
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) {
    if (i >= rows) break;
    float* o = out + i * ld;
    __m512 v0 = acc[i][0], v1 = acc[i][1];
    if (add) v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, o)), v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, o + 16));
    _mm512_mask_storeu_ps(o, m0, v0);
    _mm512_mask_storeu_ps(o + 16, m1, v1);
  }
}

// The 16 values of a run of row r of a panel (WindowRuns) of `image`: run s = (k, half-panel) and
// the row's input feature. An address may lie outside the input where the mask excludes it: a
// masked load does not touch the excluded lanes.
template <class E>
FLUXION_TILE_TARGET auto window_run(const WindowRuns& c, const E* image, int64_t s, int64_t r) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(image + r / c.k_size * c.feature_stride) + uintptr_t(c.run_base[s] * int64_t(sizeof(E)));
  const __mmask16 mask = __mmask16(c.run_mask[s]);
  if constexpr (sizeof(E) == 4) return _mm512_maskz_loadu_epi32(mask, reinterpret_cast<const void*>(at));
  else return _mm256_maskz_loadu_epi16(mask, reinterpret_cast<const void*>(at));
}

// The 32 bfloat16 values of row r of a panel whose first half is half-panel `half` of `halves`.
FLUXION_TILE_TARGET __m512i window_row(const WindowRuns& c, const uint16_t* image, int64_t halves, int64_t half, int64_t r) {
  const int64_t s = r % c.k_size * halves + half;
  return _mm512_inserti64x4(_mm512_castsi256_si512(window_run(c, image, s, r)), window_run(c, image, s + 1, r), 1);
}

// Packs the panels of B's rows [p0, p0 + depth) and columns [j0, j0 + width) (width a multiple of
// kTileCols) from a convolution's input (WindowRuns): per row, two masked loads of a run each,
// stored as they are (float32) or, per pair of rows, interleaved as pack_k_major does (bfloat16).
template <class E>
FLUXION_TILE_TARGET void pack_window_runs(const WindowRuns& c, int64_t p0, int64_t depth, int64_t j0, int64_t width,
                                          uint32_t* dst) {
  const int64_t halves = c.positions / kWindowRun, steps = (depth + kPerWord<E> - 1) / kPerWord<E>;
  for (int64_t j = j0; j < j0 + width; j += kTileCols, dst += steps * kTileCols) {
    const E* image = static_cast<const E*>(c.x) + j / c.positions * c.image_stride;
    const int64_t half = j % c.positions / kWindowRun;
    uint32_t* d = dst;
    if constexpr (sizeof(E) == 4) {
      for (int64_t r = p0; r < p0 + depth; ++r, d += kTileCols) {
        const int64_t s = r % c.k_size * halves + half;
        _mm512_storeu_si512(d, window_run(c, image, s, r));
        _mm512_storeu_si512(d + 16, window_run(c, image, s + 1, r));
      }
    } else {
      const __m512i lo = _mm512_load_si512(kInterleave.index), hi = _mm512_load_si512(kInterleave.index + 32);
      for (int64_t q = 0; q < steps; ++q, d += kTileCols) {
        const __m512i a = window_row(c, image, halves, half, p0 + 2 * q);
        const __m512i b = 2 * q + 1 < depth ? window_row(c, image, halves, half, p0 + 2 * q + 1) : _mm512_setzero_si512();
        _mm512_storeu_si512(d, _mm512_permutex2var_epi16(a, lo, b));
        _mm512_storeu_si512(d + 16, _mm512_permutex2var_epi16(a, hi, b));
      }
    }
  }
}

// The blocked product out[m x n] (rows `ld` apart) = A B over elements E, k deep, A's panels packed
// by pack_a_panels(pc, depth, ic, mc, dst) and B's by pack_b_panels(pc, depth, jc, nc, dst), the
// blocks of k whole multiples of `quantum` values (a multiple of a word's).
template <class E, class PackA, class PackB>
void product(int64_t m, int64_t n, int64_t k, float* out, int64_t ld, int64_t quantum, PackA pack_a_panels,
             PackB pack_b_panels, uint32_t* pack_a, uint32_t* pack_b) {
  constexpr int64_t per = kPerWord<E>;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::memset(out + i * ld, 0, size_t(n) * 4);
    return;
  }
  // Blocks of k evened out (at most kTileSteps words): k = 576 in bfloat16, the 64-feature 3x3
  // convolutions', takes two blocks of 288 rather than 512 and a last pass of 64 over the output.
  const int64_t max_depth = kTileSteps * per, blocks = (k + max_depth - 1) / max_depth;
  const int64_t step = ((k + blocks - 1) / blocks + quantum - 1) / quantum * quantum;
  for (int64_t pc = 0; pc < k; pc += step) {
    const int64_t depth = min64(step, k - pc), steps = (depth + per - 1) / per;
    for (int64_t jc = 0; jc < n; jc += kTileColBlock) {
      const int64_t nc = min64(kTileColBlock, n - jc);
      pack_b_panels(pc, depth, jc, nc, pack_b);
      for (int64_t ic = 0; ic < m; ic += kTileRowBlock) {
        const int64_t mc = min64(kTileRowBlock, m - ic);
        pack_a_panels(pc, depth, ic, mc, pack_a);
        // Rows innermost: the packed panel of B stays in L1 while the panels of A stream from L2.
        for (int64_t jr = 0; jr < nc; jr += kTileCols) {
          for (int64_t ir = 0; ir < mc; ir += kTileRows) {
            const int64_t rows = min64(kTileRows, mc - ir);
            auto run = rows > 8 ? tile<E, int(kTileRows)> : rows > 4 ? tile<E, 8> : tile<E, 4>;
            run(steps, pack_a + ir * steps, pack_b + jr * steps, out + (ic + ir) * ld + jc + jr, ld, rows,
                min64(kTileCols, nc - jr), pc > 0);
          }
        }
      }
    }
  }
}

// The product of a MatmulBlock, with B packed by pack_b_panels (from op(rhs) or elsewhere).
template <class E, class PackB>
void product_of_block(const MatmulBlock& b, PackB pack_b_panels, uint32_t* pack_a, uint32_t* pack_b) {
  const E* lhs = static_cast<const E*>(b.lhs);
  auto pack_lhs = [&](int64_t pc, int64_t depth, int64_t ic, int64_t mc, uint32_t* dst) {
    // Element (i, p) of op(lhs) is lhs[i * ld + p], or lhs[p * ld + i] when transposed.
    const E* block = b.trans_lhs ? lhs + pc * b.lhs_stride + ic : lhs + ic * b.lhs_stride + pc;
    pack_panels(block, b.lhs_stride, !b.trans_lhs, depth, mc, kTileRows, dst);
  };
  product<E>(b.m, b.n, b.k, static_cast<float*>(b.out), b.out_stride, kPerWord<E>, pack_lhs, pack_b_panels, pack_a, pack_b);
}

// The product with B packed from op(rhs).
template <class E>
void product_of_operands(const MatmulBlock& b, uint32_t* pack_a, uint32_t* pack_b) {
  const E* rhs = static_cast<const E*>(b.rhs);
  auto pack_rhs = [&](int64_t pc, int64_t depth, int64_t jc, int64_t nc, uint32_t* dst) {
    // Element (p, j) of op(rhs) is rhs[p * ld + j], or rhs[j * ld + p] when transposed.
    const E* block = b.trans_rhs ? rhs + jc * b.rhs_stride + pc : rhs + pc * b.rhs_stride + jc;
    pack_panels(block, b.rhs_stride, b.trans_rhs, depth, nc, kTileCols, dst);
  };
  product_of_block<E>(b, pack_rhs, pack_a, pack_b);
}

// The product with B packed from a convolution's input.
template <class E>
void product_of_window(const MatmulBlock& b, const WindowRuns& cols, uint32_t* pack_a, uint32_t* pack_b) {
  auto pack_cols = [&](int64_t pc, int64_t depth, int64_t jc, int64_t nc, uint32_t* dst) {
    pack_window_runs<E>(cols, pc, depth, jc, nc, dst);
  };
  product_of_block<E>(b, pack_cols, pack_a, pack_b);
}

// Packs panels of W of rows [r0, r0 + extent) whose words `load` gives 16 steps at a time, 16 rows
// at a time by a register transpose as pack_k_contiguous does (`steps` a multiple of 16; rows beyond
// the extent are zeros): load(load.row(r), load.chunk(q)) is the 16 words of steps [q, q + 16) of
// row r. The divisions that locate a row and a chunk run once per row and per chunk of a call, not
// per load (per load they cost more than the packing itself).
template <class Load>
FLUXION_TILE_TARGET void pack_by_transpose(const Load& load, int64_t r0, int64_t steps, int64_t extent, int64_t W,
                                           uint32_t* dst) {
  for (int64_t j = 0; j < extent; j += W, dst += steps * W)
    for (int64_t j0 = 0; j0 < W; j0 += 16) {
      typename Load::Row rows[16];
      const int64_t n = min64(16, min64(W - j0, extent - j - j0));
      for (int64_t i = 0; i < n; ++i) rows[i] = load.row(r0 + j + j0 + i);
      for (int64_t q0 = 0; q0 < steps; q0 += 16) {
        const typename Load::Chunk chunk = load.chunk(q0);
        __m512i r[16], t[16];
        for (int64_t i = 0; i < 16; ++i) r[i] = i < n ? load(rows[i], chunk) : _mm512_setzero_si512();
        transpose16x16(r, t);
        const __mmask16 store = lanes(W - j0);
        for (int c = 0; c < 16; ++c) _mm512_mask_storeu_epi32(dst + (q0 + c) * W + j0, store, t[c]);
      }
    }
}

// The loaders of a by-feature product's operands (FeatureWindows) for the values of k from `pc`
// on: 16 words of row (b, p) of the columns, from runs of the input (two runs of kWindowRun
// bfloat16 values or one of float32 values), and of row o of the kernel, one load.
template <class E>
struct FeatureColumns {
  struct Row {
    const E* image;  // x's image b
    int64_t run0;    // the first run of position p
  };
  struct Chunk {
    int64_t feature;  // offset of the chunk's feature c
    int64_t run;      // its first run within the window
  };
  const FeatureWindows& f;
  int64_t pc;
  Row row(int64_t r) const {
    return {static_cast<const E*>(f.x) + r / f.positions * f.x_row, r % f.positions * (f.k_size / kWindowRun)};
  }
  Chunk chunk(int64_t q) const {
    const int64_t kk = pc + q * kPerWord<E>;
    return {kk / f.k_size * f.x_feature, kk % f.k_size / kWindowRun};
  }
  FLUXION_TILE_TARGET __m512i run(const E* image, int64_t s) const {
    const uintptr_t at = reinterpret_cast<uintptr_t>(image) + uintptr_t(f.run_base[s] * int64_t(sizeof(E)));
    const __mmask16 mask = __mmask16(f.run_mask[s]);
    if constexpr (sizeof(E) == 4) return _mm512_maskz_loadu_epi32(mask, reinterpret_cast<const void*>(at));
    else return _mm512_castsi256_si512(_mm256_maskz_loadu_epi16(mask, reinterpret_cast<const void*>(at)));
  }
  FLUXION_TILE_TARGET __m512i operator()(const Row& r, const Chunk& c) const {
    const E* image = r.image + c.feature;
    const int64_t s = r.run0 + c.run;
    if constexpr (sizeof(E) == 4) return run(image, s);
    else return _mm512_inserti64x4(run(image, s), _mm512_castsi512_si256(run(image, s + 1)), 1);
  }
};
template <class E>
struct FeatureKernel {
  using Row = const E*;
  using Chunk = int64_t;
  const FeatureWindows& f;
  int64_t pc;
  Row row(int64_t o) const { return static_cast<const E*>(f.w) + o * f.w_row; }
  Chunk chunk(int64_t q) const {
    const int64_t kk = pc + q * kPerWord<E>;
    return kk / f.k_size * f.w_feature + kk % f.k_size;
  }
  FLUXION_TILE_TARGET __m512i operator()(Row r, Chunk c) const { return _mm512_loadu_si512(r + c); }
};

// The by-feature product: blocks of k of whole runs (2 kWindowRun values), both operands packed
// straight from the convolution's arrays.
template <class E>
void product_of_features(int64_t m, int64_t n, const FeatureWindows& f, float* out, int64_t ld, uint32_t* pack_a,
                         uint32_t* pack_b) {
  auto pack_cols = [&](int64_t pc, int64_t depth, int64_t ic, int64_t mc, uint32_t* dst) {
    pack_by_transpose(FeatureColumns<E>{f, pc}, ic, depth / kPerWord<E>, mc, kTileRows, dst);
  };
  auto pack_kernel = [&](int64_t pc, int64_t depth, int64_t jc, int64_t nc, uint32_t* dst) {
    pack_by_transpose(FeatureKernel<E>{f, pc}, jc, depth / kPerWord<E>, nc, kTileCols, dst);
  };
  product<E>(m, n, f.features * f.k_size, out, ld, 2 * kWindowRun, pack_cols, pack_kernel, pack_a, pack_b);
}

}  // namespace

TilePacks tile_pack_scratch() {
  thread_local std::vector<uint32_t> pack_a(kTilePackA + 16), pack_b(kTilePackB + 16);
  auto aligned = [](std::vector<uint32_t>& v) {
    return reinterpret_cast<uint32_t*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t(63));
  };
  return {aligned(pack_a), aligned(pack_b)};
}

void gemm_bf16_block(const MatmulBlock& b, uint32_t* pack_a, uint32_t* pack_b) { product_of_operands<uint16_t>(b, pack_a, pack_b); }
void gemm_f32_block(const MatmulBlock& b, uint32_t* pack_a, uint32_t* pack_b) { product_of_operands<float>(b, pack_a, pack_b); }

void gemm_bf16_window_block(const MatmulBlock& b, const WindowRuns& cols, uint32_t* pack_a, uint32_t* pack_b) {
  product_of_window<uint16_t>(b, cols, pack_a, pack_b);
}
void gemm_f32_window_block(const MatmulBlock& b, const WindowRuns& cols, uint32_t* pack_a, uint32_t* pack_b) {
  product_of_window<float>(b, cols, pack_a, pack_b);
}
void gemm_bf16_feature_block(int64_t m, int64_t n, const FeatureWindows& f, float* out, int64_t out_stride, uint32_t* pack_a,
                             uint32_t* pack_b) {
  product_of_features<uint16_t>(m, n, f, out, out_stride, pack_a, pack_b);
}
void gemm_f32_feature_block(int64_t m, int64_t n, const FeatureWindows& f, float* out, int64_t out_stride, uint32_t* pack_a,
                            uint32_t* pack_b) {
  product_of_features<float>(m, n, f, out, out_stride, pack_a, pack_b);
}

}  // namespace fluxion::runtime

#else  // not x86-64: no caller (host_has_avx512bf16() is false and host_isa_level() 1 there)

namespace fluxion::runtime {
void gemm_bf16_block(const MatmulBlock&, uint32_t*, uint32_t*) {}
void gemm_f32_block(const MatmulBlock&, uint32_t*, uint32_t*) {}
void gemm_bf16_window_block(const MatmulBlock&, const WindowRuns&, uint32_t*, uint32_t*) {}
void gemm_f32_window_block(const MatmulBlock&, const WindowRuns&, uint32_t*, uint32_t*) {}
void gemm_bf16_feature_block(int64_t, int64_t, const FeatureWindows&, float*, int64_t, uint32_t*, uint32_t*) {}
void gemm_f32_feature_block(int64_t, int64_t, const FeatureWindows&, float*, int64_t, uint32_t*, uint32_t*) {}
TilePacks tile_pack_scratch() { return {nullptr, nullptr}; }
}  // namespace fluxion::runtime

#endif
