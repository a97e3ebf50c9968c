// runtime::matmul: picks the Eigen build for the call's level (or, for bfloat16 operands, the
// AVX512-BF16 kernel of kernels/gemm_tiles.h where allowed) and cuts the product into blocks for
// the threads.
#include "kernels/matmul.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ir/settings.h"
#include "kernels/gemm_tiles.h"
#include "kernels/matmul_block.h"
#include "kernels/openmp.h"
#include "kernels/scratch.h"
#if defined(__x86_64__)
#include "kernels/tile_simd.h"
#endif

namespace fluxion::runtime {

namespace {

using BuildFn = void (*)(bool is_double, const MatmulBlock& b);

// Index: the x86-64 level. Only the baseline build exists off x86-64 (runtime/meson.build).
#if defined(__x86_64__)
constexpr BuildFn kBuilds[] = {nullptr, &matmul_eigen_level1, &matmul_eigen_level2, &matmul_eigen_level3,
                               &matmul_eigen_level4};
#else
constexpr BuildFn kBuilds[] = {nullptr, &matmul_eigen_level1};
#endif
constexpr int kTopLevel = int(sizeof kBuilds / sizeof kBuilds[0]) - 1;

std::atomic<uint64_t> g_blocks[kTopLevel + 1];
std::atomic<uint64_t> g_bf16_blocks;

int level_for(int isa_level) { return std::clamp(isa_level, 1, host_isa_level()); }

// Products below this many multiply-adds stay on the calling thread: waking the pool costs more
// than half of them (measured in docs/jit.md: 256 x 512 x 10, the MLP's output layer, gains).
constexpr int64_t kThreadedMacs = int64_t(1) << 20;
// How a product is cut into slabs for threads: boundaries on multiples of `align` rows or columns
// (whole vectors and register tiles), and row slabs only with at least `rows` rows per thread (or
// at least as many rows as columns).
struct SlabRule {
  int64_t align, rows;
};
// Eigen's float32/float64 product: slabs of 16; rows from 16 per thread.
constexpr SlabRule kEigenSlabs{16, 16};
// The bfloat16 kernel: a thread of a row slab packs all of B, and packing runs at the speed of
// memory (a fifth of 64 x 576 x 8192, a convolution's im2col product, on one thread), so a wide
// product of few rows runs in column slabs, each thread packing half of B; row slabs from two row
// blocks per thread.
constexpr SlabRule kBf16Slabs{kTileCols, 2 * kTileRowBlock};

// Conversions run in chunks of this many elements, one chunk per task: enough to amortise a task,
// small enough to split a 512 x 512 operand between two threads.
constexpr int64_t kConvertChunk = int64_t(1) << 16;

// Calls f(begin, end) over [0, n) in chunks on up to `threads` threads (one thread below a chunk).
template <class F>
void in_chunks(int64_t n, int threads, F f) {
  const int64_t chunks = (n + kConvertChunk - 1) / kConvertChunk;
  parallel_chunks(threads, chunks, [&](int64_t c) { f(c * kConvertChunk, std::min(n, (c + 1) * kConvertChunk)); });
}

// The conversion loops, over restrict pointers so that GCC vectorises them (bfloat16 is the top
// half of a float32: a shift, and a rounding add without branches). float16 takes the F16C
// instructions where the call's level has them (x86-64-v3 and up), else the scalar conversions
// of ir/dtype.h; both round to nearest even and agree on every non-NaN value.
void widen_bf16(const uint16_t* __restrict from, float* __restrict to, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = uint32_t(from[i]) << 16;
    std::memcpy(to + i, &u, 4);
  }
}

void narrow_bf16(const float* __restrict from, uint16_t* __restrict to, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, from + i, 4);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    to[i] = uint16_t((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : rounded);  // NaN stays quiet NaN
  }
}

#if defined(__x86_64__)
// The same conversions 16 lanes at a time for x86-64-v4 (AVX-512 F, BW and VL): the baseline build's
// SSE2 loops took 2.5% of the bfloat16 ResNet-18 step (every convolution's output is rounded).
// Integer arithmetic, not AVX512-BF16's vcvtneps2bf16, which flushes subnormals to zero and would
// round differently from ir/dtype.h (round_bf16, kernels/tile_simd.h, shared with the tap product's
// stores). The tail is a masked load and store. (GCC 12 warns inside its
// own AVX-512 intrinsics' headers, as in gemm_tiles.cpp.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
FLUXION_AVX512_TARGET void narrow_bf16_avx512(const float* from, uint16_t* to, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 live = lanes(n - i);
    _mm256_mask_storeu_epi16(to + i, live, round_bf16(_mm512_maskz_loadu_ps(live, from + i)));
  }
}

FLUXION_AVX512_TARGET void widen_bf16_avx512(const uint16_t* from, float* to, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 live = lanes(n - i);
    const __m512i u = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(live, from + i));
    _mm512_mask_storeu_epi32(to + i, live, _mm512_slli_epi32(u, 16));
  }
}

#pragma GCC diagnostic pop

bool avx512_for(int isa_level) {
  static const bool host = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return host && isa_level >= 4;
}

__attribute__((target("avx,f16c"))) void widen_f16_f16c(const uint16_t* from, float* to, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(to + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i))));
  for (; i < n; ++i) to[i] = _cvtsh_ss(from[i]);
}

__attribute__((target("avx,f16c"))) void narrow_f16_f16c(const float* from, uint16_t* to, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to + i), _mm256_cvtps_ph(_mm256_loadu_ps(from + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) to[i] = _cvtss_sh(from[i], _MM_FROUND_TO_NEAREST_INT);
}

bool f16c_for(int isa_level) {
  static const bool host = __builtin_cpu_supports("f16c");
  return host && isa_level >= 3;
}
#else
bool f16c_for(int) { return false; }
bool avx512_for(int) { return false; }
void narrow_bf16_avx512(const float*, uint16_t*, int64_t) {}
void widen_bf16_avx512(const uint16_t*, float*, int64_t) {}
void widen_f16_f16c(const uint16_t*, float*, int64_t) {}
void narrow_f16_f16c(const float*, uint16_t*, int64_t) {}
#endif

}  // namespace

void widen_to_f32(DType from_dtype, const void* from, float* to, int64_t n, int isa_level, int threads) {
  const bool f16c = f16c_for(isa_level), wide = avx512_for(isa_level);
  in_chunks(n, threads, [=](int64_t lo, int64_t hi) {
    const uint16_t* f16 = static_cast<const uint16_t*>(from) + lo;
    if (from_dtype == DType::bfloat16 && wide) widen_bf16_avx512(f16, to + lo, hi - lo);
    else if (from_dtype == DType::bfloat16) widen_bf16(f16, to + lo, hi - lo);
    else if (from_dtype == DType::float16 && f16c) widen_f16_f16c(f16, to + lo, hi - lo);
    else if (from_dtype == DType::float16)
      for (int64_t i = lo; i < hi; ++i) to[i] = float(static_cast<const float16_t*>(from)[i]);
    else std::memcpy(to + lo, static_cast<const float*>(from) + lo, size_t(hi - lo) * 4);
  });
}

void narrow_from_f32(const float* from, DType to_dtype, void* to, int64_t n, int isa_level, int threads) {
  const bool f16c = f16c_for(isa_level), wide = avx512_for(isa_level);
  in_chunks(n, threads, [=](int64_t lo, int64_t hi) {
    uint16_t* t16 = static_cast<uint16_t*>(to) + lo;
    if (to_dtype == DType::bfloat16 && wide) narrow_bf16_avx512(from + lo, t16, hi - lo);
    else if (to_dtype == DType::bfloat16) narrow_bf16(from + lo, t16, hi - lo);
    else if (to_dtype == DType::float16 && f16c) narrow_f16_f16c(from + lo, t16, hi - lo);
    else if (to_dtype == DType::float16)
      for (int64_t i = lo; i < hi; ++i) static_cast<float16_t*>(to)[i] = float16_t(from[i]);
    else std::memcpy(static_cast<float*>(to) + lo, from + lo, size_t(hi - lo) * 4);
  });
}

std::string matmul_implementation(int isa_level) {
  const int level = level_for(isa_level);
#if defined(__x86_64__)
  return level == 1 ? "eigen x86-64" : "eigen x86-64-v" + std::to_string(level);
#else
  (void)level;
  return "eigen baseline";
#endif
}

uint64_t matmul_blocks_computed(int level) {
  return level >= 1 && level <= kTopLevel ? g_blocks[level].load(std::memory_order_relaxed) : 0;
}

namespace {

// Cuts `mm` into blocks for up to `threads` threads and hands each to block(MatmulBlock): whole
// batch entries per thread where the batch has enough, else slabs of output rows or columns.
// Operand elements are `size` bytes, output elements `out_size`.
template <class Block>
void in_blocks(const Matmul& mm, int64_t size, int64_t out_size, int threads, SlabRule rule, Block block) {
  const int64_t lhs_stride = mm.trans_lhs ? mm.m : mm.k, rhs_stride = mm.trans_rhs ? mm.k : mm.n;
  auto at = [](const void* p, int64_t bytes) { return static_cast<const char*>(p) + bytes; };

  // Rows [r0, r1) and columns [c0, c1) of batch entry b. A row slab of op(lhs) starts r0 rows (or,
  // transposed, r0 columns) in; a column slab of op(rhs) c0 columns (or rows) in.
  auto compute = [&](int64_t b, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    block(MatmulBlock{r1 - r0,
                      c1 - c0,
                      mm.k,
                      at(mm.lhs, size * (b * mm.m * mm.k + r0 * (mm.trans_lhs ? 1 : lhs_stride))),
                      lhs_stride,
                      mm.trans_lhs,
                      at(mm.rhs, size * (b * mm.k * mm.n + c0 * (mm.trans_rhs ? rhs_stride : 1))),
                      rhs_stride,
                      mm.trans_rhs,
                      const_cast<char*>(at(mm.out, out_size * (b * mm.m * mm.n + r0 * mm.n + c0))),
                      mm.n});
  };

  const int64_t macs = mm.batch * mm.m * mm.n * mm.k;
  const int64_t parts = threads > 1 && macs >= kThreadedMacs ? threads : 1;
  if (mm.batch >= parts) {  // whole batch entries per thread
    parallel_chunks(int(parts), parts, [&](int64_t t) {
      for (int64_t b = mm.batch * t / parts; b < mm.batch * (t + 1) / parts; ++b) compute(b, 0, mm.m, 0, mm.n);
    });
    return;
  }
  // Fewer batch entries than threads: each entry in slabs of output rows (a thread then packs all
  // of rhs, which costs little next to its share of the product), or of columns where the rows
  // are too few. Column slabs share a cache line per output row between threads, which made the
  // MLP's 256 x 10 x 512 product (k = 10: output writes dominate) 3x slower than one thread.
  const bool rows = mm.m >= rule.rows * parts || mm.m >= mm.n;
  const int64_t extent = rows ? mm.m : mm.n;
  const int64_t slabs = std::clamp<int64_t>(extent / rule.align, 1, parts);
  auto edge = [&](int64_t s) { return s == slabs ? extent : (extent * s / slabs) / rule.align * rule.align; };
  parallel_chunks(threads, mm.batch * slabs, [&](int64_t i) {
    const int64_t b = i / slabs, s = i % slabs;
    if (rows) compute(b, edge(s), edge(s + 1), 0, mm.n);
    else compute(b, 0, mm.m, edge(s), edge(s + 1));
  });
}

// The float32 output of a 16-bit product: the caller's, or scratch to be rounded once at the end.
float* f32_out(const Matmul& mm, Scratch<float>& buf) {
  return mm.narrow_out ? buf.get(mm.batch * mm.m * mm.n) : static_cast<float*>(mm.out);
}

// A bfloat16 product on AVX512-BF16 (kernels/gemm_tiles.h): the operands packed straight from
// bfloat16, float32 accumulators, the output rounded once when it is bfloat16.
void matmul_bf16_native(const Matmul& mm, int isa_level, int threads) {
  thread_local Scratch<float> out_buf;
  Matmul f = mm;
  f.out = f32_out(mm, out_buf);
  in_blocks(f, 2, 4, threads, kBf16Slabs, [](const MatmulBlock& b) {
    const TilePacks packs = tile_pack_scratch();  // of the thread computing the block (the kernels' OpenMP workers)
    gemm_bf16_block(b, packs.a, packs.b);
    g_bf16_blocks.fetch_add(1, std::memory_order_relaxed);
  });
  if (mm.narrow_out) narrow_from_f32(out_buf.data.get(), mm.operands, mm.out, mm.batch * mm.m * mm.n, isa_level, threads);
}

}  // namespace

// A product of 16-bit operands: both widened to float32 once (in parallel; the widening reads and
// writes O(m k + k n) elements against the product's O(m n k) multiply-adds), the float32 product,
// then the output rounded once when it is 16-bit too.
void matmul_widened(const Matmul& mm, int isa_level, int threads) {
  thread_local Scratch<float> lhs_buf, rhs_buf, out_buf;
  const int64_t nl = mm.batch * mm.m * mm.k, nr = mm.batch * mm.k * mm.n, no = mm.batch * mm.m * mm.n;
  Matmul f = mm;
  f.operands = DType::float32;
  f.narrow_out = false;
  f.lhs = lhs_buf.get(nl);
  f.rhs = rhs_buf.get(nr);
  f.out = f32_out(mm, out_buf);
  widen_to_f32(mm.operands, mm.lhs, lhs_buf.data.get(), nl, isa_level, threads);
  widen_to_f32(mm.operands, mm.rhs, rhs_buf.data.get(), nr, isa_level, threads);
  matmul(f, isa_level, threads);
  if (mm.narrow_out) narrow_from_f32(out_buf.data.get(), mm.operands, mm.out, no, isa_level, threads);
}

bool native_bf16_for(int isa_level) {
  static const bool enabled = choice_setting("FLUXION_BF16_GEMM") != "widen";
  return enabled && isa_level >= 4 && kernel_has_avx512bf16();
}

uint64_t matmul_bf16_blocks_computed() { return g_bf16_blocks.load(std::memory_order_relaxed); }

void matmul(const Matmul& mm, int isa_level, int threads) {
  if (!mm.is_double && mm.operands == DType::bfloat16 && native_bf16_for(isa_level)) {
    matmul_bf16_native(mm, isa_level, threads);
    return;
  }
  if (!mm.is_double && mm.operands != DType::float32) {
    matmul_widened(mm, isa_level, threads);
    return;
  }
  const int level = level_for(isa_level);
  const BuildFn build = kBuilds[level];
  const int64_t size = mm.is_double ? 8 : 4;
  in_blocks(mm, size, size, threads, kEigenSlabs, [&](const MatmulBlock& b) {
    build(mm.is_double, b);
    g_blocks[level].fetch_add(1, std::memory_order_relaxed);
  });
}

}  // namespace fluxion::runtime
