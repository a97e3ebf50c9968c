// Which x86-64 micro-architecture level (psABI: 1 baseline, 2 SSE4.2, 3 AVX2+FMA, 4 AVX-512) the
// precompiled kernels may use. The library carries Eigen's kernels built once per level
// (kernels/matmul_eigen.cpp, prims/linalg_eigen.cpp) and picks one per call from these.
#pragma once

namespace fluxion {

/// This CPU's level, 1-4 (1 on other architectures).
int host_isa_level();

/// The level eager kernels run at: the host's, lowered to the level FLUXION_CPU names when it is
/// x86-64 or x86-64-v2/v3/v4 (so that FLUXION_CPU=x86-64-v3 runs the AVX2 kernels on an AVX-512
/// machine, as the jit's library calls do). Another FLUXION_CPU (an LLVM CPU name) leaves the
/// host's level: compiled code passes its own target's level to its library calls.
int kernel_isa_level();

/// Whether this CPU has AVX512-BF16 (`vdpbf16ps`: CPUID leaf 7 subleaf 1, EAX bit 5) next to the
/// AVX-512 of level 4. False on other architectures.
bool host_has_avx512bf16();

/// Whether the precompiled kernels may use AVX512-BF16: the host has it and FLUXION_CPU does not
/// name a target without it. Unset, "native" and "host" keep the host's; an LLVM CPU name keeps it
/// only for the CPUs known to have it (cooperlake, sapphirerapids, emeraldrapids, graniterapids,
/// graniterapids-d, diamondrapids, znver4, znver5); x86-64-v2/v3/v4 never have it, so
/// FLUXION_CPU=x86-64-v4 runs what an AVX-512 CPU without BF16 runs.
bool kernel_has_avx512bf16();

}  // namespace fluxion
