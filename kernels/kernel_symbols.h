// The functions the runtime lends to compiled kernels, under the names the kernels call.
//
// Two kinds. The memory functions MLIR's memref lowering calls for kernel temporaries
// (`_mlir_memref_to_llvm_alloc` ...), bound to the runtime's caching allocator so that a
// temporary costs no malloc and no page fault once warm. And the conversion builtins LLVM emits
// as library calls where the target CPU has no instruction for them: f32 -> bf16 without
// AVX512-BF16 (`__truncsfbf2`), f16 <-> f32 without F16C (`__extendhfsf2`, `__truncsfhf2`), and
// their f64 forms. compiler-rt defines those, but nothing in a GCC-built process is sure to: GCC
// 12's libgcc has the f16 ones and no bf16 one, so every kernel touching bf16 failed to link on
// AVX2 CPUs. The linker (lowering/codegen_cpu.cpp) resolves every undefined symbol of a kernel
// here first, then in the process, and refuses a kernel that names anything else.
//
// The conversions round to nearest even and keep NaNs quiet, as LLVM's own instructions do. They
// follow the x86-64 psABI for _Float16/__bf16: the 16-bit value travels in the low half of an
// XMM register, which GCC 12 gives `_Float16` (it has no arithmetic __bf16 yet).
#pragma once
#include <span>

namespace fluxion::runtime {

struct KernelSymbol {
  const char* name;  // as the kernel's object code names it
  void* address;
};

/// Every symbol above. The table is fixed for the life of the process.
std::span<const KernelSymbol> kernel_symbols();

}  // namespace fluxion::runtime
