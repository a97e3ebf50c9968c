// The compile cache: a Program and a CompileTarget in, a shared Executable out, compiled at most once
// per fingerprint by the backend of the target's platform -- the CPU's stage list
// (lowering/compile.h: a native kernel, runtime/cpu_executable.h) or the GPU's
// (lowering/compile_cuda.h: PTX and a launch plan, runtime/gpu_executable.h). Everything above it
// (jit, pmap, eager GPU ops) is the same for both.
//
// The fingerprint is structural -- the platform, the compile options, the target CPU or GPU
// architecture and the program's text, which spells out every input type, every param and every
// literal -- never a function's address. The cache is safe to use from several threads and
// compiles each key once (threads asking for a key being compiled wait for it; a failed compile is
// remembered and re-raised).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "ir/program.h"
#include "compile/target.h"
#include "runtime/executable.h"

namespace fluxion::runtime {

/// The fingerprint the cache uses for `p` compiled for `target`.
std::string fingerprint(const Program& p, const CompileTarget& target);

/// The executable of `p` (its consts are not part of it: they are passed at each call), compiled
/// at most once per fingerprint. Throws CompileError (for the GPU: naming a primitive it does not
/// lower, and the user's line). With FLUXION_DUMP=dir set, each compile
/// writes its program, MLIR, LLVM IR and assembly to dir/<dump_stem>.* (the fingerprint's hash
/// when no stem is given; fx::jit passes interpreters/jit_passes.h's jit_dump_stem).
std::shared_ptr<const Executable> compile(const Program& p, const CompileTarget& target = default_target(),
                                          const std::string& dump_stem = "");

struct CacheStats {
  int64_t compiles = 0;  // keys compiled (successfully or not)
  int64_t hits = 0;      // lookups answered from the cache
  int64_t disk_hits = 0;  // compiles answered from FLUXION_CACHE_DIR (lowering and MLIR passes skipped)
};
CacheStats cache_stats();
/// Forgets every in-memory entry (executables already handed out stay valid), as a new process
/// would start; with FLUXION_CACHE_DIR set, the next compiles read the kernels back from disk.
void clear_cache();

}  // namespace fluxion::runtime
