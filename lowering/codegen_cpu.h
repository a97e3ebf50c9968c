// The last two stages of the CPU pipeline: the kernel module (LLVM dialect) becomes object code
// for the target CPU (lowering/target.h), and object code becomes a callable kernel in this
// process. Object code is what the disk cache stores, so a new process that finds a kernel there
// skips MLIR and LLVM entirely and only links.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "lowering/compile.h"

namespace mlir {
class ModuleOp;
}

namespace fluxion::lowering {

/// One kernel's machine code: a relocatable ELF object defining `kernel` (the bare-pointer ABI of
/// compile.h) and its packed entry point `_mlir_kernel(void** args)`.
struct ObjectCode {
  std::string bytes;
  double translate_ms = 0, optimize_ms = 0, codegen_ms = 0;  // MLIR -> LLVM IR (OpenMP outlining), LLVM passes, code generation
};

/// Translates `m` to LLVM IR, adds the packed entry point, optimizes at `opt_level` (0-3) and emits
/// object code for cpu_target(). `ll_dump` (if not empty) receives the optimized LLVM IR and
/// `asm_dump` the assembly. `entry` renames `kernel` (and `_mlir_kernel` to `_mlir_<entry>`): an
/// exported object's C entry point. Throws CompileError.
ObjectCode emit_object(mlir::ModuleOp m, int opt_level, const std::string& ll_dump = "", const std::string& asm_dump = "",
                       const std::string& entry = "kernel");

/// The symbols `object` needs from outside itself.
std::vector<std::string> undefined_symbols(const std::string& object);

/// The undefined symbols of `object` that nothing here provides: not the runtime's kernel symbols
/// (kernels/kernel_symbols.h), not libmvec, libomp or any library of the process. Loads libomp
/// first when the object calls it.
std::vector<std::string> unresolved_symbols(const std::string& object);

/// Whether kernels can have parallel loops: the OpenMP runtime they call is loadable here.
bool openmp_available();

/// Links `object` into this process and returns the kernel, which owns the code. Every undefined
/// symbol must resolve, or CompileError names the ones that do not (`what` says which program).
std::unique_ptr<runtime::Kernel> link_object(const std::string& object, const std::string& what);

}  // namespace fluxion::lowering
