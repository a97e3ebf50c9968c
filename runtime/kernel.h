// A compiled kernel as the runtime holds it: a packed entry point and the code behind it. A
// backend's compiler (lowering/compile.h) makes one; an Executable (runtime/executable.h) calls it.
//
// Kernel ABI (bare-pointer convention): the kernel takes one pointer per array, in
// this order -- the program's invars, then its constvars, then one output buffer per outvar -- each
// pointing at contiguous row-major storage owned by the runtime (bool is one byte, 0 or 1) --
// and, for a polymorphic program (docs/shape_polymorphism.md), one int64 per symbol after them, in
// Executable::symbols() order: the sizes its dynamic extents are computed from. The caller invokes
// it through `packed(void** args)`, where args[i] points at the i-th pointer (or size).
#pragma once

namespace fluxion::runtime {

class Kernel {
 public:
  virtual ~Kernel() = default;  // a backend's subclass owns the code and frees it
  using PackedFn = void (*)(void**);
  PackedFn packed = nullptr;
  /// Where the compile time went: building MLIR, the MLIR passes, LLVM (optimization and code
  /// generation), linking the object code into the process.
  double lower_ms = 0, passes_ms = 0, llvm_ms = 0, link_ms = 0;
  bool from_disk_cache = false;  // the object code came from disk: no MLIR, no LLVM, only linking
};

}  // namespace fluxion::runtime
