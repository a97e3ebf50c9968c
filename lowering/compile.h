// The MLIR-free face of the CPU backend: compile a Program into a native kernel
// (runtime/kernel.h, whose comment states the kernel ABI). compile/compile_cache.cpp calls this;
// no MLIR or LLVM type crosses this header.
#pragma once
#include <memory>
#include <string>

#include "ir/primitive.h"
#include "ir/program.h"
#include "runtime/kernel.h"

namespace fluxion::lowering {

/// Where dot_general's work happens: a call into Eigen (kernels/library_calls.h) or the generated
/// contraction loop nest. `automatic` takes Eigen for float32/float64 (batched) matmuls of at
/// least 32^3 multiply-adds, which measured faster (docs/jit.md), and kernels/gemm_int8.h for int8
/// ones with an int32 result at the same threshold, and generated code otherwise
/// (small products fuse with their neighbours). `gpu_library` (the CUDA pipeline): every float
/// product the CPU could give Eigen goes to cuBLAS whatever its size; int8 products stay generated.
enum class MatmulPath { automatic, eigen, generated, gpu_library };

struct CompileOptions {
  /// Worker threads for the outer loops (1: no threading code at all).
  int num_threads = 1;
  MatmulPath matmul = MatmulPath::automatic;
  /// When non-empty, the program, the MLIR before and after the pipeline and the LLVM IR are
  /// written there as <name>.program.txt, .input.mlir, .lowered.mlir and .ll.
  std::string dump_dir;
  /// File-name stem of the dumps and of the on-disk cache file (the fingerprint's hash).
  std::string dump_name = "kernel";
  /// When both are set, the kernel is looked up in / stored to cache_dir/<dump_name>.fxkernel,
  /// whose header must hold cache_key (the whole fingerprint) exactly.
  std::string cache_dir, cache_key;
};

/// Lowers, optimizes and JIT-compiles `p`. Throws CompileError (naming the primitive and the user's
/// line) when a primitive has no lowering or MLIR/LLVM rejects the module; never prints or aborts.
std::unique_ptr<runtime::Kernel> compile_cpu(const Program& p, const CompileOptions& options);

/// The same stages up to object code, not linked: a relocatable ELF object for cpu_target() whose
/// entry point is `entry` (the kernel ABI of runtime/kernel.h) and `_mlir_<entry>(void** args)`
/// (the packed one). fx::export_ writes it to a file. Throws CompileError.
std::string compile_object_cpu(const Program& p, const CompileOptions& options, const std::string& entry);

/// Whether the lowering table has a rule for p (the registry test checks every primitive).
bool has_lowering(Prim p);

}  // namespace fluxion::lowering
