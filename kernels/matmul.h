// Matrix products at the speed of the CPU the kernels are compiled for: the jit's dot_general
// library call (fluxion_rt_gemm, kernels/library_calls.h) lands here.
//
// Eigen's product is built once per x86-64 level (kernels/matmul_eigen.cpp: SSE2 baseline, SSE4.2,
// AVX2+FMA, AVX-512); a call names the level its kernel was compiled for (lowering/target.h's
// isa_level, so FLUXION_CPU=x86-64-v3 runs the AVX2 build on an AVX-512 machine) and never gets a
// level above the host's. bfloat16 operands run a kernel of their own on CPUs with AVX512-BF16
// (kernels/gemm_tiles.h; native_bf16_for below says when). A large product is cut into row or
// column slabs (or whole batch entries) that the kernels' own OpenMP threads compute
// (kernels/openmp.h). docs/jit.md has the measurements behind these choices.
#pragma once
#include <cstdint>
#include <string>

#include "ir/dtype.h"
#include "prims/isa_level.h"

namespace fluxion::runtime {

/// A batched row-major product out[b] = op(lhs[b]) @ op(rhs[b]) of float32 or float64 matrices,
/// each batch entry contiguous: lhs is [batch, m, k] ([batch, k, m] if trans_lhs), rhs [batch, k, n]
/// ([batch, n, k] if trans_rhs), out [batch, m, n].
///
/// A float32 product may take 16-bit operands (`operands` bfloat16 or float16, the mixed-precision
/// path): they are widened to float32, the products accumulate in float32 as float32 products do,
/// and the output is float32 or, with `narrow_out`, rounded once to the operands' type.
struct Matmul {
  bool is_double = false;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool trans_lhs = false, trans_rhs = false;
  const void* lhs = nullptr;
  const void* rhs = nullptr;
  void* out = nullptr;
  DType operands = DType::float32;  // float32, bfloat16 or float16 (unless is_double)
  bool narrow_out = false;
};

/// Computes `mm` with the build for x86-64 level min(isa_level, host_isa_level()) (at least the
/// baseline), on up to `threads` threads when it has enough work (matmul.cpp says how much).
/// bfloat16 operands take the AVX512-BF16 kernel (kernels/gemm_tiles.h) where native_bf16_for(isa_level),
/// else the widening path below.
void matmul(const Matmul& mm, int isa_level, int threads);

/// A float32 product of 16-bit operands through float32 copies: both widened, the float32 product
/// of the same level, the output rounded once when `narrow_out`. What matmul() does for float16
/// always and for bfloat16 where the native kernel is not allowed.
void matmul_widened(const Matmul& mm, int isa_level, int threads);

/// Whether a bfloat16 product at `isa_level` runs the native AVX512-BF16 kernel: the level is 4,
/// the host has the feature and FLUXION_CPU allows it (prims/isa_level.h kernel_has_avx512bf16),
/// and FLUXION_BF16_GEMM is not "widen" (which forces the widening path).
bool native_bf16_for(int isa_level);

/// to[i] = float(from[i]) for n elements of a float16, bfloat16 or float32 array, on up to
/// `threads` threads (the 16-bit operands of a float32 product or convolution), with the
/// conversion instructions of x86-64 level min(isa_level, the host's).
void widen_to_f32(DType from_dtype, const void* from, float* to, int64_t n, int isa_level, int threads);
/// to[i] = from[i] rounded to nearest even in `to_dtype` (float16, bfloat16 or float32).
void narrow_from_f32(const float* from, DType to_dtype, void* to, int64_t n, int isa_level, int threads);

using fluxion::host_isa_level;  // prims/isa_level.h

/// The build that serves a call made for `isa_level` on this host, e.g. "eigen x86-64-v3".
std::string matmul_implementation(int isa_level);

/// How many blocks the build for `level` (1-4) has computed in this process: tests use it to see
/// which path a compiled kernel took.
uint64_t matmul_blocks_computed(int level);
/// How many blocks the AVX512-BF16 kernel has computed in this process.
uint64_t matmul_bf16_blocks_computed();

}  // namespace fluxion::runtime
