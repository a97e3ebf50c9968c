// The 8-bit integer matrix product of quantized inference: int32 out = lhs @ rhs with int8 or
// uint8 activations (lhs) and int8 weights (rhs), every product and sum exact in int32 (no
// intermediate saturation; docs/quantization.md says when a sum could overflow int32: only past
// k = 2^31 / (255 * 128) = 65793 with every operand at its extreme).
//
// One of four paths runs, chosen per call from the x86-64 level the caller was compiled for and the
// CPU: AVX512-VNNI (`vpdpbusd` on 512-bit registers), AVX-VNNI (the same instruction on 256-bit
// registers, Alder Lake and later), AVX2 (`vpmaddwd` on operands widened to int16 pairs, levels
// 3-4 without VNNI) and a widening loop at the library's baseline flags (levels 1-2). `vpdpbusd` multiplies unsigned
// by signed bytes, so int8 activations are shifted by +128 into uint8 and 128 * (column sums of
// rhs) is taken off afterwards -- exact, since the four products it adds per lane are summed in
// int32 without saturation.
#pragma once
#include <cstdint>
#include <string>

namespace fluxion::runtime {

/// out[m, n] (int32, row-major) = lhs[m, k] @ rhs[k, n], both row-major and contiguous.
struct Int8Gemm {
  int64_t m = 0, n = 0, k = 0;
  const void* lhs = nullptr;  // int8, or uint8 when lhs_unsigned
  bool lhs_unsigned = false;
  const int8_t* rhs = nullptr;
  int32_t* out = nullptr;
};

enum class Int8Path { portable, avx2, avx_vnni, avx512_vnni };

/// Whether this CPU has AVX512-VNNI (with the AVX-512 of level 4) / AVX-VNNI.
bool host_has_avx512_vnni();
bool host_has_avx_vnni();

/// The path a call made for x86-64 level `isa_level` takes on this host: VNNI only at level 4 (the
/// level an unset or native FLUXION_CPU gives) and only when FLUXION_CPU names no target (unset,
/// "native" or "host": x86-64-v4 and the LLVM CPU names are not assumed to have it), AVX2 at levels
/// 3-4, else the portable loop. Tests and benchmarks run each path with int8_gemm_with.
Int8Path int8_gemm_path(int isa_level);

/// The path compiled code takes (the jit's dot_general library call, kernels/gemm_call.cpp): its
/// target's x86-64 level and VNNI extensions, as lowering's CpuTarget has them, capped by this
/// host's. AVX512-VNNI needs level 4; AVX-VNNI level 3 (Alder Lake has it without AVX-512).
Int8Path int8_gemm_path(int isa_level, bool target_avx512_vnni, bool target_avx_vnni);

/// How many products have run on `path` in this process (int8_gemm_with calls): tests check the
/// path a compiled kernel took.
uint64_t int8_gemm_calls(Int8Path path);

/// Whether `path` can run on this host (its instructions are there).
bool int8_path_available(Int8Path path);

/// "avx512-vnni", "avx-vnni", "avx2", "portable".
std::string int8_path_name(Int8Path path);

/// Computes `g` with int8_gemm_path(isa_level), rows split over up to `threads` threads.
void int8_gemm(const Int8Gemm& g, int isa_level, int threads);

/// Computes `g` with `path`, which must be available (int8_path_available): tests force each path.
void int8_gemm_with(Int8Path path, const Int8Gemm& g, int threads);

}  // namespace fluxion::runtime
