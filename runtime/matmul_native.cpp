// Eigen's matrix product compiled for AVX-512 inside a library built for baseline x86-64: the
// kernels the JIT emits use the host's vector units, and a matmul library call must too, or it
// runs at SSE2 speed (half or less). fluxion_rt_matmul (library_calls.cpp) calls this only
// where the CPU has AVX-512 and falls back to the baseline build of Eigen elsewhere.
//
// How: the standard headers come first (so their inline functions, which other translation units
// share, stay baseline code); then a target pragma plus the ISA macros Eigen reads to pick its
// AVX-512 kernels (GCC's pragma does not define them); and Eigen's namespace is renamed, so none of
// these instantiations can stand in for the baseline ones elsewhere in the library.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iosfwd>
#include <limits>
#include <new>
#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__AVX512F__)
#define FLUXION_MATMUL_NATIVE 1
#pragma GCC target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma,avx,sse4.2")
#define __SSE3__ 1
#define __SSSE3__ 1
#define __SSE4_1__ 1
#define __SSE4_2__ 1
#define __AVX__ 1
#define __AVX2__ 1
#define __FMA__ 1
#define __AVX512F__ 1
#define __AVX512DQ__ 1
#define __AVX512VL__ 1
#define __AVX512BW__ 1
#define Eigen fluxion_eigen_avx512
#pragma GCC diagnostic push  // Eigen's AVX-512 headers warn where its baseline headers do not
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>

#include "runtime/eigen_matmul.inc"
#pragma GCC diagnostic pop
#endif

namespace fluxion::runtime {

// Declared in library_calls.cpp. False: no AVX-512 build here or no AVX-512 on this CPU.
bool matmul_avx512(const int64_t* a, bool is_double) {
#ifdef FLUXION_MATMUL_NATIVE
  static const bool supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  if (!supported) return false;
  if (is_double) matmul<double>(a);
  else matmul<float>(a);
  return true;
#else
  (void)a;
  (void)is_double;
  return false;
#endif
}

}  // namespace fluxion::runtime
