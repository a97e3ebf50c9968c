// The int8 matrix product's four paths (kernels/gemm_int8.h). The VNNI paths pack rhs into
// column panels of one register's width, four k per int32 lane (the operand layout `vpdpbusd`
// wants), and lhs rows into uint8 padded to a multiple of four; a tile of 4 rows x 4 registers
// keeps 16 accumulators in registers for the whole k loop. The AVX2 path runs the same tiles on
// int16 pairs (`vpmaddwd`: two exact products per int32 lane, no shift needed); the portable path
// is a widening loop at the library's baseline flags.
#include "kernels/gemm_int8.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/openmp.h"
#include "prims/isa_level.h"
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace fluxion::runtime {
namespace {

constexpr int64_t kRowsPerChunk = 32;  // rows a thread takes at a time (a multiple of the tile's 4)

std::atomic<uint64_t> g_calls[4];  // int8_gemm_calls, by Int8Path

int32_t lhs_at(const Int8Gemm& g, int64_t i, int64_t p) {
  const int64_t at = i * g.k + p;
  return g.lhs_unsigned ? int32_t(static_cast<const uint8_t*>(g.lhs)[at]) : int32_t(static_cast<const int8_t*>(g.lhs)[at]);
}

// out[i, :] = sum over p of lhs[i, p] * rhs[p, :] for rows [r0, r1): int32 products of widened
// bytes, which the compiler vectorises for the calling function's target.
[[gnu::always_inline]] inline void widening_rows(const Int8Gemm& g, int64_t r0, int64_t r1) {
  for (int64_t i = r0; i < r1; ++i) {
    int32_t* out = g.out + i * g.n;
    std::fill(out, out + g.n, 0);
    for (int64_t p = 0; p < g.k; ++p) {
      const int32_t a = lhs_at(g, i, p);
      const int8_t* b = g.rhs + p * g.n;
      for (int64_t j = 0; j < g.n; ++j) out[j] += a * int32_t(b[j]);
    }
  }
}

void portable_rows(const Int8Gemm& g, int64_t r0, int64_t r1) { widening_rows(g, r0, r1); }

#if defined(__x86_64__)
// rhs packed for `lanes` int32 lanes per register: panel q (columns [q*lanes, q*lanes+lanes)) is
// kg = kp/4 blocks of lanes*4 bytes, block t holding rhs[4t..4t+3, column] per lane. Padding is 0.
struct PackedRhs {
  int64_t lanes, kg, panels;
  bool shifted;  // lhs was shifted by +128 (int8 activations on vpdpbusd): take off 128 * column_sums
  std::vector<uint8_t> bytes;
  std::vector<int32_t> column_sums;  // of rhs over k: the correction of int8 activations
  const uint8_t* panel(int64_t q) const { return bytes.data() + q * kg * lanes * 4; }
};

// Columns of rhs a thread packs at a time: one 64-byte line of each row.
constexpr int64_t kPackColumns = 64;

// Per chunk of kPackColumns columns (chunks to the threads): their sums over k, then per block of
// `Per` k the rows read side by side and each column's Per values stored as one int32 into its
// panel -- loops the compiler vectorises (the first packing, a division-indexed byte scatter on
// one thread, took a quarter of the 1024^3 product's time). `store(dst, rows, j)` writes column j.
template <int Per, class Store>
void pack_panels(const Int8Gemm& g, PackedRhs& r, int threads, Store store) {
  const std::vector<int8_t> zeros(size_t(g.n), 0);
  const int64_t panels_per_chunk = kPackColumns / r.lanes;
  parallel_chunks(threads, (r.panels + panels_per_chunk - 1) / panels_per_chunk, [&](int64_t c) {
    const int64_t q0 = c * panels_per_chunk, q1 = std::min(r.panels, q0 + panels_per_chunk);
    const int64_t j_lo = q0 * r.lanes, j_hi = std::min(g.n, q1 * r.lanes);
    if (!r.column_sums.empty())
      for (int64_t p = 0; p < g.k; ++p)
        for (int64_t j = j_lo; j < j_hi; ++j) r.column_sums[size_t(j)] += g.rhs[p * g.n + j];
    for (int64_t q = q0; q < q1; ++q)
      for (int64_t t = 0; t < r.kg; ++t) {
        const int8_t* w[Per];
        for (int i = 0; i < Per; ++i) w[i] = Per * t + i < g.k ? g.rhs + (Per * t + i) * g.n : zeros.data();
        uint8_t* dst = r.bytes.data() + (q * r.kg + t) * r.lanes * 4 - q * r.lanes * 4;
        for (int64_t j = q * r.lanes; j < std::min(g.n, (q + 1) * r.lanes); ++j) store(dst + j * 4, w, j);
      }
  });
}

PackedRhs pack_rhs(const Int8Gemm& g, int64_t lanes, int threads) {
  PackedRhs r{lanes, (g.k + 3) / 4, (g.n + lanes - 1) / lanes, !g.lhs_unsigned, {}, std::vector<int32_t>(size_t(g.n), 0)};
  r.bytes.assign(size_t(r.panels * r.kg * lanes * 4), 0);
  pack_panels<4>(g, r, threads, [](uint8_t* dst, const int8_t* const (&w)[4], int64_t j) {
    const uint32_t v = uint32_t(uint8_t(w[0][j])) | uint32_t(uint8_t(w[1][j])) << 8 | uint32_t(uint8_t(w[2][j])) << 16 |
                       uint32_t(uint8_t(w[3][j])) << 24;
    std::memcpy(dst, &v, 4);
  });
  return r;
}

// rhs for AVX2's vpmaddwd: two k per int32 lane as int16 (block t holds rhs[2t..2t+1, column]).
PackedRhs pack_rhs_pairs(const Int8Gemm& g, int threads) {
  const int64_t lanes = 8;
  PackedRhs r{lanes, (g.k + 1) / 2, (g.n + lanes - 1) / lanes, false, {}, {}};
  r.bytes.assign(size_t(r.panels * r.kg * lanes * 4), 0);
  pack_panels<2>(g, r, threads, [](uint8_t* dst, const int8_t* const (&w)[2], int64_t j) {
    const uint32_t v = uint32_t(uint16_t(int16_t(w[0][j]))) | uint32_t(uint16_t(int16_t(w[1][j]))) << 16;
    std::memcpy(dst, &v, 4);
  });
  return r;
}

// lhs rows [r0, r1) as int16 pairs, each row padded with zeros to kg pairs.
std::vector<uint8_t> pack_lhs_pairs(const Int8Gemm& g, int64_t r0, int64_t r1, int64_t kg) {
  std::vector<uint8_t> a(size_t((r1 - r0) * kg * 4), 0);
  for (int64_t i = r0; i < r1; ++i) {
    uint8_t* dst = a.data() + (i - r0) * kg * 4;
    auto widen = [&](const auto* src) {
      for (int64_t p = 0; p < g.k; ++p) {
        const int16_t v = int16_t(src[p]);
        std::memcpy(dst + p * 2, &v, 2);
      }
    };
    if (g.lhs_unsigned) widen(static_cast<const uint8_t*>(g.lhs) + i * g.k);
    else widen(static_cast<const int8_t*>(g.lhs) + i * g.k);
  }
  return a;
}

// lhs rows [r0, r1) as uint8 (int8 shifted by +128: its bits with the sign bit flipped), each
// padded with zeros to kg*4 bytes.
std::vector<uint8_t> pack_lhs_rows(const Int8Gemm& g, int64_t r0, int64_t r1, int64_t kg) {
  std::vector<uint8_t> a(size_t((r1 - r0) * kg * 4), 0);
  const uint8_t flip = g.lhs_unsigned ? 0 : 0x80;
  for (int64_t i = r0; i < r1; ++i) {
    const uint8_t* src = static_cast<const uint8_t*>(g.lhs) + i * g.k;
    uint8_t* dst = a.data() + (i - r0) * kg * 4;
    for (int64_t p = 0; p < g.k; ++p) dst[p] = src[p] ^ flip;
  }
  return a;
}

// Stores `lanes` int32 of a tile row into out[0, count), less the correction of int8 activations.
void finish_row(const int32_t* acc, int64_t count, const int32_t* sums, bool shifted, int32_t* out) {
  for (int64_t j = 0; j < count; ++j) out[j] = acc[j] - (shifted ? 128 * sums[j] : 0);
}

#define FLUXION_VNNI_TILE(NAME, TARGET, VEC, LANES, ZERO, DOT, LOAD, SET1, STORE)                            \
  template <int MR, int NV>                                                                                   \
  __attribute__((target(TARGET))) void NAME(const uint8_t* a, int64_t a_stride, const PackedRhs& b, int64_t q0, \
                                            const Int8Gemm& g, int64_t row, int64_t col0) {                   \
    VEC acc[MR][NV];                                                                                          \
    for (int r = 0; r < MR; ++r)                                                                              \
      for (int c = 0; c < NV; ++c) acc[r][c] = ZERO();                                                        \
    for (int64_t t = 0; t < b.kg; ++t) {                                                                      \
      VEC w[NV];                                                                                              \
      for (int c = 0; c < NV; ++c) w[c] = LOAD(reinterpret_cast<const VEC*>(b.panel(q0 + c) + t * LANES * 4)); \
      for (int r = 0; r < MR; ++r) {                                                                          \
        int32_t four;                                                                                         \
        std::memcpy(&four, a + r * a_stride + t * 4, 4);                                                      \
        const VEC x = SET1(four);                                                                             \
        for (int c = 0; c < NV; ++c) acc[r][c] = DOT(acc[r][c], x, w[c]);                                     \
      }                                                                                                       \
    }                                                                                                         \
    for (int r = 0; r < MR; ++r)                                                                              \
      for (int c = 0; c < NV; ++c) {                                                                          \
        alignas(64) int32_t lane[LANES];                                                                      \
        STORE(reinterpret_cast<VEC*>(lane), acc[r][c]);                                                       \
        const int64_t col = col0 + c * LANES;                                                                 \
        finish_row(lane, std::min<int64_t>(LANES, g.n - col), b.column_sums.data() + col, b.shifted,          \
                   g.out + (row + r) * g.n + col);                                                            \
      }                                                                                                       \
  }

FLUXION_VNNI_TILE(tile512, "avx512f,avx512bw,avx512vnni", __m512i, 16, _mm512_setzero_si512, _mm512_dpbusd_epi32,
                  _mm512_loadu_si512, _mm512_set1_epi32, _mm512_store_si512)
FLUXION_VNNI_TILE(tile256, "avx2,avxvnni", __m256i, 8, _mm256_setzero_si256, _mm256_dpbusd_avx_epi32,
                  _mm256_loadu_si256, _mm256_set1_epi32, _mm256_store_si256)
__attribute__((target("avx2"))) inline __m256i madd_add(__m256i acc, __m256i x, __m256i w) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(x, w));
}
FLUXION_VNNI_TILE(tile_madd, "avx2", __m256i, 8, _mm256_setzero_si256, madd_add, _mm256_loadu_si256,
                  _mm256_set1_epi32, _mm256_store_si256)
#undef FLUXION_VNNI_TILE

// Rows [r0, r1) through tiles of 4 rows x 4 registers, the edges through 1-row and 1-register tiles.
template <int Kind>
void vnni_rows(const Int8Gemm& g, const PackedRhs& b, int64_t r0, int64_t r1) {
  const std::vector<uint8_t> a = Kind == 2 ? pack_lhs_pairs(g, r0, r1, b.kg) : pack_lhs_rows(g, r0, r1, b.kg);
  const int64_t stride = b.kg * 4, lanes = b.lanes;
  for (int64_t i = r0; i < r1;) {
    const bool four = r1 - i >= 4;
    const uint8_t* ai = a.data() + (i - r0) * stride;
    for (int64_t q = 0; q < b.panels;) {
      const bool wide = b.panels - q >= 4;
      if constexpr (Kind == 0) {
        if (four && wide) tile512<4, 4>(ai, stride, b, q, g, i, q * lanes);
        else if (four) tile512<4, 1>(ai, stride, b, q, g, i, q * lanes);
        else if (wide) tile512<1, 4>(ai, stride, b, q, g, i, q * lanes);
        else tile512<1, 1>(ai, stride, b, q, g, i, q * lanes);
      } else if constexpr (Kind == 2) {
        if (four && wide) tile_madd<4, 4>(ai, stride, b, q, g, i, q * lanes);
        else if (four) tile_madd<4, 1>(ai, stride, b, q, g, i, q * lanes);
        else if (wide) tile_madd<1, 4>(ai, stride, b, q, g, i, q * lanes);
        else tile_madd<1, 1>(ai, stride, b, q, g, i, q * lanes);
      } else {
        if (four && wide) tile256<4, 4>(ai, stride, b, q, g, i, q * lanes);
        else if (four) tile256<4, 1>(ai, stride, b, q, g, i, q * lanes);
        else if (wide) tile256<1, 4>(ai, stride, b, q, g, i, q * lanes);
        else tile256<1, 1>(ai, stride, b, q, g, i, q * lanes);
      }
      q += wide ? 4 : 1;
    }
    i += four ? 4 : 1;
  }
}
#endif

}  // namespace

bool host_has_avx512_vnni() {
#if defined(__x86_64__)
  static const bool has = host_isa_level() >= 4 && __builtin_cpu_supports("avx512vnni");
  return has;
#else
  return false;
#endif
}

bool host_has_avx_vnni() {
#if defined(__x86_64__)
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;  // CPUID leaf 7 subleaf 1, EAX bit 4
    if (host_isa_level() < 3 || !__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
    return (eax >> 4 & 1u) != 0;
  }();
  return has;
#else
  return false;
#endif
}

bool int8_path_available(Int8Path path) {
  switch (path) {
    case Int8Path::portable: return true;
    case Int8Path::avx2: return host_isa_level() >= 3;
    case Int8Path::avx_vnni: return host_has_avx_vnni();
    case Int8Path::avx512_vnni: return host_has_avx512_vnni();
  }
  return false;
}

Int8Path int8_gemm_path(int isa_level, bool target_avx512_vnni, bool target_avx_vnni) {
  const int level = std::min(isa_level, host_isa_level());
  if (level >= 4 && target_avx512_vnni && host_has_avx512_vnni()) return Int8Path::avx512_vnni;
  if (level >= 3 && target_avx_vnni && host_has_avx_vnni()) return Int8Path::avx_vnni;
  if (level >= 3) return Int8Path::avx2;
  return Int8Path::portable;
}

Int8Path int8_gemm_path(int isa_level) {
  static const bool cpu_unnamed = [] {
    const char* e = std::getenv("FLUXION_CPU");
    const std::string cpu = e ? e : "";
    return cpu.empty() || cpu == "native" || cpu == "host";
  }();
  const int level = std::min(isa_level, kernel_isa_level());
  const bool vnni = level >= 4 && cpu_unnamed;  // a level alone does not promise VNNI: only the host's own does
  return int8_gemm_path(level, vnni, vnni);
}

uint64_t int8_gemm_calls(Int8Path path) { return g_calls[size_t(path)].load(std::memory_order_relaxed); }

std::string int8_path_name(Int8Path path) {
  switch (path) {
    case Int8Path::portable: return "portable";
    case Int8Path::avx2: return "avx2";
    case Int8Path::avx_vnni: return "avx-vnni";
    case Int8Path::avx512_vnni: return "avx512-vnni";
  }
  return "?";
}

void int8_gemm_with(Int8Path path, const Int8Gemm& g, int threads) {
  if (!int8_path_available(path)) throw std::logic_error("int8_gemm_with: path " + int8_path_name(path) + " is not on this CPU");
  g_calls[size_t(path)].fetch_add(1, std::memory_order_relaxed);
  if (g.m <= 0 || g.n <= 0) return;
  const int64_t chunks = (g.m + kRowsPerChunk - 1) / kRowsPerChunk;
  const int use = g.m * g.n * std::max<int64_t>(g.k, 1) < (int64_t(1) << 18) ? 1 : threads;
  auto rows_of = [&](int64_t c) { return std::pair{c * kRowsPerChunk, std::min(g.m, (c + 1) * kRowsPerChunk)}; };
#if defined(__x86_64__)
  if (path == Int8Path::avx512_vnni || path == Int8Path::avx_vnni) {
    const bool wide = path == Int8Path::avx512_vnni;
    const PackedRhs b = pack_rhs(g, wide ? 16 : 8, use);
    parallel_chunks(use, chunks, [&](int64_t c) {
      auto [r0, r1] = rows_of(c);
      wide ? vnni_rows<0>(g, b, r0, r1) : vnni_rows<1>(g, b, r0, r1);
    });
    return;
  }
  if (path == Int8Path::avx2) {
    const PackedRhs b = pack_rhs_pairs(g, use);
    parallel_chunks(use, chunks, [&](int64_t c) { auto [r0, r1] = rows_of(c); vnni_rows<2>(g, b, r0, r1); });
    return;
  }
#endif
  parallel_chunks(use, chunks, [&](int64_t c) { auto [r0, r1] = rows_of(c); portable_rows(g, r0, r1); });
}

void int8_gemm(const Int8Gemm& g, int isa_level, int threads) { int8_gemm_with(int8_gemm_path(isa_level), g, threads); }

}  // namespace fluxion::runtime
