// Included first by the objects built once per x86-64 level (kernels/matmul_eigen.cpp,
// prims/linalg_eigen.cpp; runtime/meson.build sets FLUXION_ISA_LEVEL and that level's -march):
// renames Eigen's namespace to fluxion_eigen_level<N> before Eigen is included. Its templates
// instantiate as weak symbols, and with one shared name the linker would keep one level's copy
// for every caller in the library, e.g. AVX-512 code in the baseline path of an AVX2 machine.
// FLUXION_LEVEL_NAME(prefix) names a level's entry point (prefix1 ... prefix4).
#pragma once

#ifndef FLUXION_ISA_LEVEL
#error "build this file through runtime/meson.build, which sets FLUXION_ISA_LEVEL"
#endif
#define FLUXION_CAT2(a, b) a##b
#define FLUXION_CAT(a, b) FLUXION_CAT2(a, b)
#define FLUXION_LEVEL_NAME(prefix) FLUXION_CAT(prefix, FLUXION_ISA_LEVEL)
#define Eigen FLUXION_LEVEL_NAME(fluxion_eigen_level)
