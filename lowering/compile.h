// The MLIR-free face of the lowering: compile a Program into a native CPU kernel. The runtime
// (runtime/cpu_device.cpp) calls this; no MLIR or LLVM type crosses this header.
//
// Kernel ABI (bare-pointer convention, static shapes): the kernel takes one pointer per array, in
// this order -- the program's invars, then its constvars, then one output buffer per outvar -- each
// pointing at contiguous row-major storage owned by the runtime (bool is one byte, 0 or 1). The
// caller invokes it through `packed(void** args)`, where args[i] points at the i-th pointer.
#pragma once
#include <memory>
#include <string>

#include "ir/primitive.h"
#include "ir/program.h"

namespace fluxion::lowering {

/// Where dot_general's work happens: a call into Eigen (runtime/library_calls.h) or the generated
/// contraction loop nest. `automatic` takes Eigen for float32/float64 (batched) matmuls of at
/// least 32^3 multiply-adds, which measured faster (docs/jit.md), and generated code otherwise
/// (small products fuse with their neighbours).
enum class MatmulPath { automatic, eigen, generated };

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

/// A compiled kernel; owns the JIT-ed code for as long as it lives.
class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  using PackedFn = void (*)(void**);
  PackedFn packed = nullptr;
  /// Where the compile time went: building MLIR, the MLIR passes, LLVM (optimization and code
  /// generation), linking the object code into the process.
  double lower_ms = 0, passes_ms = 0, llvm_ms = 0, link_ms = 0;
  bool from_disk_cache = false;  // the object code came from disk: no MLIR, no LLVM, only linking
};

/// Lowers, optimizes and JIT-compiles `p`. Throws CompileError (naming the primitive and the user's
/// line) when a primitive has no lowering or MLIR/LLVM rejects the module; never prints or aborts.
std::unique_ptr<CompiledKernel> compile_cpu(const Program& p, const CompileOptions& options);

/// Whether the lowering table has a rule for p (the registry test checks every primitive).
bool has_lowering(Prim p);

}  // namespace fluxion::lowering
