// What the AVX-512 tile files (runtime/gemm_tiles.cpp, runtime/gemm_taps.cpp) share: their target
// attribute and the 16 x 16 register transpose. Include it from those files only, after
// <immintrin.h> on x86-64: its functions are static and carry the AVX-512 target, which no object
// compiled with the library's own flags may share through an inline function.
#pragma once

#define FLUXION_TILE_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace fluxion::runtime {

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

}  // namespace fluxion::runtime
