// The runtime an exported object (fx::export_, transforms/export.h) links against instead of
// libfluxion: no LLVM, no MLIR, no tracing -- only what compiled kernels call. The JIT's linker
// binds those names to kernels/kernel_symbols.h's table and to fluxion_rt_gemm in the process;
// a statically linked program needs them as real symbols, defined here by forwarding to the same
// table (so both paths run the same code). Built as libfluxion_aot_rt.a (kernels/meson.build)
// with memory/buffer.cpp, kernels/gemm_call.cpp, the matmul objects and the windowed kernels
// (convolutions, pooling: kernels/conv.cpp) -- but no reference kernels (windowed_reference below).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ir/primitive.h"
#include "kernels/conv.h"
#include "kernels/kernel_symbols.h"

namespace {

// The table's entry for `name`; a missing one is a build error of this library, caught by the
// export test, so it aborts rather than throws (it runs inside compiled code).
void* table_symbol(const char* name) {
  for (const fluxion::runtime::KernelSymbol& s : fluxion::runtime::kernel_symbols())
    if (std::strcmp(s.name, name) == 0) return s.address;
  std::fprintf(stderr, "fluxion AOT runtime: no kernel symbol %s\n", name);
  std::abort();
}

template <class Fn>
Fn bound(const char* name) {
  return reinterpret_cast<Fn>(table_symbol(name));
}

}  // namespace

// fx::export_ refuses programs whose windowed calls would get here (windowed_has_kernel), so this
// is a build error of the library, not a user's: it aborts (it runs inside compiled code).
void fluxion::runtime::windowed_reference(Prim p, std::span<const View>, std::span<const View>, const Params&) {
  std::fprintf(stderr, "fluxion AOT runtime: no kernel for windowed primitive %d (export_ should have refused it)\n",
               int(p));
  std::abort();
}

// Each forwarder looks its target up once.
#define FLUXION_FORWARD(Ret, name, Params, Args)            \
  extern "C" Ret name Params {                               \
    static const auto fn = bound<Ret(*) Params>(#name);      \
    return fn Args;                                          \
  }

FLUXION_FORWARD(void*, _mlir_memref_to_llvm_alloc, (size_t n), (n))
FLUXION_FORWARD(void*, _mlir_memref_to_llvm_aligned_alloc, (size_t alignment, size_t n), (alignment, n))
FLUXION_FORWARD(void, _mlir_memref_to_llvm_free, (void* p), (p))
#if (defined(__x86_64__) || defined(__aarch64__)) && defined(__FLT16_MAX__)
FLUXION_FORWARD(_Float16, __truncsfbf2, (float x), (x))
FLUXION_FORWARD(_Float16, __truncdfbf2, (double x), (x))
FLUXION_FORWARD(float, __extendbfsf2, (_Float16 x), (x))
FLUXION_FORWARD(float, __extendhfsf2, (_Float16 x), (x))
FLUXION_FORWARD(double, __extendhfdf2, (_Float16 x), (x))
FLUXION_FORWARD(_Float16, __truncsfhf2, (float x), (x))
FLUXION_FORWARD(_Float16, __truncdfhf2, (double x), (x))
FLUXION_FORWARD(float, __gnu_h2f_ieee, (uint16_t b), (b))
FLUXION_FORWARD(uint16_t, __gnu_f2h_ieee, (float x), (x))
#endif
#undef FLUXION_FORWARD
