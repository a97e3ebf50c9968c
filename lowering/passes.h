// Fluxion's own MLIR passes, one file each; mlir_session.cpp registers them once.
#pragma once
#include <string>

namespace mlir {
class RewritePatternSet;
}

namespace fluxion::lowering {

/// fx-group-elementwise (group_elementwise.cpp): runs of elementwise generics -> one generic each,
/// in linear time.
void register_group_elementwise_pass();
/// fx-fuse-elementwise (fuse_elementwise.cpp): producer -> consumer fusion of linalg.generic ops.
void register_fuse_elementwise_pass();
/// fx-scalarize-rank0 (scalarize_rank0.cpp): generics without loops -> scalar code.
void register_scalarize_rank0_pass();
/// fx-inline-helpers (inline_helpers.cpp): calls to private helpers inlined, those to kernel
/// parts (lower_parts.cpp) kept.
void register_inline_helpers_pass();
/// fx-outline-parallel (outline_parallel.cpp): each outermost omp.parallel region of a function
/// with several moved into a function of its own, before translation (linear-time outlining).
void register_outline_parallel_pass();
/// fx-lower-copies (lower_copies.cpp): memref.copy -> vector loops (or scalar ones).
void register_lower_copies_pass();
/// fx-vectorize-complex (vectorize_complex.cpp): elementwise generics on complex memrefs ->
/// vector loops on the planar parts (after bufferization and convert-complex-to-standard).
void register_vectorize_complex_pass();
/// fx-accurate-math (accurate_math.cpp): f32 transcendentals through glibc's vector libm (or
/// libm), f64 ones through libmvec's f64 variants, log of subnormals.
void register_accurate_math_pass();
/// fx-math-approx (accurate_math.cpp): vectorizable polynomial approximations of the f32 math
/// fx-accurate-math left (exp, log, tanh, erf; sin and cos without libmvec).
void register_math_approx_pass();

/// fx-gpu-copies, fx-gpu-parallel, fx-gpu-math (gpu_passes.cpp): the GPU pipeline's mapping of
/// bufferized functions to parallel loops (every memory access inside one), and the math ops the
/// NVVM conversion lacks.
void register_gpu_passes();

/// fx-gpu-rows (gpu_rows.cpp): reductions over the innermost dims, with the ops over the same rows
/// beside them, as one block per row (registered by register_gpu_passes).
void register_gpu_rows_pass();

/// fx-gpu-columns (gpu_columns.cpp): reductions over outer dims (column sums) as a launch of
/// partials over slices of the reduced extent, then a fold (registered by register_gpu_passes).
void register_gpu_columns_pass();

/// fx-gpu-math's rewrites (gpu_passes.cpp) without its renaming of C math functions to
/// libdevice's: the emulated GPU's kernels (gpu_emulation.cpp) compute what the PTX computes.
void populate_gpu_math_patterns(mlir::RewritePatternSet& patterns);

/// The fusion passes both pipelines run first (pipeline_cpu.cpp).
extern const char* const kFusionPasses;

/// Loads libmvec (once) so that kernels calling it link -- also kernels read back from the disk
/// cache, which skip the pass -- and names the variant in use ("libmvec x86-64 e" for AVX-512,
/// or "no libmvec"), which is part of a cached kernel's identity.
std::string load_vector_libm();

}  // namespace fluxion::lowering
