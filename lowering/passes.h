// Fluxion's own MLIR passes that live in files of their own (pipeline.cpp registers them).
#pragma once
#include <string>

namespace fluxion::lowering {

/// fx-accurate-math (accurate_math.cpp): f32 transcendentals through glibc's vector libm (or
/// libm), log of subnormals.
void register_accurate_math_pass();

/// Loads libmvec (once) so that kernels calling it link -- also kernels read back from the disk
/// cache, which skip the pass -- and names the variant in use ("libmvec x86-64 e" for AVX-512,
/// or "no libmvec"), which is part of a cached kernel's identity.
std::string load_vector_libm();

}  // namespace fluxion::lowering
