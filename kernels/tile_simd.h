// What the AVX-512 tile files (kernels/gemm_tiles.cpp, kernels/gemm_taps.cpp) share: their target
// attribute, lane masks, the pair-interleaving indices, the 16 x 16 register transpose, the tiles'
// step of k, and the bfloat16 rounding (also kernels/matmul.cpp's). Include it from those files
// only, after <immintrin.h> on x86-64: its functions are static and carry the AVX-512 target, which
// no object compiled with the library's own flags may share through an inline function.
#pragma once
#include <cstdint>

#define FLUXION_TILE_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
// AVX-512 without BF16: what kernels/matmul.cpp's conversions need (x86-64-v4). A function of this
// target inlines into FLUXION_TILE_TARGET ones, not the other way round.
#define FLUXION_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))

namespace fluxion::runtime {

// Values of element type E per 32-bit word of the tiles' packed operands (2 bfloat16, 1 float32).
template <class E>
constexpr int64_t kPerWord = int64_t(4 / sizeof(E));

// The first n lanes of a 16-lane mask (n < 0: none, n >= 16: all).
static inline constexpr __mmask16 lanes(int64_t n) { return __mmask16(n >= 16 ? 0xffffu : (1u << (n < 0 ? 0 : n)) - 1u); }

// vpermw / vpermt2w indices that interleave two runs of Words / 2 16-bit values, the second starting
// `second` words in (the other register's for vpermt2w, the high half for vpermw): word e of the
// result is word e / 2 of the first run for even e, of the second for odd e.
template <int Words, int second>
struct InterleaveIndex {
  alignas(64) uint16_t index[Words];
  constexpr InterleaveIndex() : index() {
    for (int e = 0; e < Words; ++e) index[e] = uint16_t(e / 2 + (e % 2 ? second : 0));
  }
};

// Transposes the 16 x 16 32-bit words of r: word c of out[i] = word i of r[c]. Per group of four
// rows, two rounds of unpacks transpose each 128-bit lane's 4 x 4 words; two rounds of 128-bit lane
// shuffles then transpose the four groups' lanes.
FLUXION_TILE_TARGET static inline void transpose16x16(const __m512i r[16], __m512i out[16]) {
  __m512i u[4][4];  // u[group][e]: lane l holds column 4l + e of the group's four rows
  for (int grp = 0; grp < 4; ++grp) {
    const __m512i* g = r + 4 * grp;
    const __m512i ab_lo = _mm512_unpacklo_epi32(g[0], g[1]), ab_hi = _mm512_unpackhi_epi32(g[0], g[1]);
    const __m512i cd_lo = _mm512_unpacklo_epi32(g[2], g[3]), cd_hi = _mm512_unpackhi_epi32(g[2], g[3]);
    u[grp][0] = _mm512_unpacklo_epi64(ab_lo, cd_lo);
    u[grp][1] = _mm512_unpackhi_epi64(ab_lo, cd_lo);
    u[grp][2] = _mm512_unpacklo_epi64(ab_hi, cd_hi);
    u[grp][3] = _mm512_unpackhi_epi64(ab_hi, cd_hi);
  }
  for (int e = 0; e < 4; ++e) {  // out[4l + e] = lane l of u[0][e], u[1][e], u[2][e], u[3][e]
    const __m512i s0 = _mm512_shuffle_i32x4(u[0][e], u[1][e], 0x88), s1 = _mm512_shuffle_i32x4(u[0][e], u[1][e], 0xdd);
    const __m512i s2 = _mm512_shuffle_i32x4(u[2][e], u[3][e], 0x88), s3 = _mm512_shuffle_i32x4(u[2][e], u[3][e], 0xdd);
    out[e] = _mm512_shuffle_i32x4(s0, s2, 0x88);
    out[4 + e] = _mm512_shuffle_i32x4(s1, s3, 0x88);
    out[8 + e] = _mm512_shuffle_i32x4(s0, s2, 0xdd);
    out[12 + e] = _mm512_shuffle_i32x4(s1, s3, 0xdd);
  }
}

// float32 to bfloat16 bits, to nearest even, NaN kept quiet -- bit for bit ir/dtype.h's scalar
// rounding. Integer arithmetic, not AVX512-BF16's vcvtneps2bf16, which flushes subnormals to zero.
FLUXION_AVX512_TARGET static inline __m256i round_bf16(__m512 v) {
  const __m512i u = _mm512_castps_si512(v), high = _mm512_srli_epi32(u, 16);
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), _mm512_and_si512(high, _mm512_set1_epi32(1))), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  return _mm512_cvtepi32_epi16(_mm512_mask_or_epi32(rounded, nan, high, _mm512_set1_epi32(0x40)));
}

// One step of k of an R x 32 tile: acc[i] += a's word i (broadcast) times b's 32 columns -- two
// vdpbf16ps per row for bfloat16 words (a pair of k values each), two FMAs for float32. E is the
// element type (uint16_t: bfloat16, float).
template <class E, int R>
FLUXION_TILE_TARGET static inline void tile_step(__m512 (&acc)[R][2], const uint32_t* a, const uint32_t* b) {
  if constexpr (sizeof(E) == 4) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
      float ai;
      __builtin_memcpy(&ai, a + i, 4);
      acc[i][0] = _mm512_fmadd_ps(_mm512_set1_ps(ai), b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(_mm512_set1_ps(ai), b1, acc[i][1]);
    }
  } else {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
      const __m512bh ai = (__m512bh)_mm512_set1_epi32(int(a[i]));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
  }
}

}  // namespace fluxion::runtime
