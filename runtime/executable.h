// The CPU device, compiled executables and the compile cache.
//
// The cache is keyed by a structural fingerprint -- the device, the compile options and the
// program's text, which spells out every input type, every param and every literal -- never by a
// function's address. It is safe to use from several threads and compiles each key once (threads
// asking for a key being compiled wait for it; a failed compile is remembered and re-raised).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/array.h"
#include "ir/program.h"

namespace fluxion {
namespace lowering {
class CompiledKernel;
}

namespace runtime {

struct Device {
  std::string name;     // "cpu"
  int num_threads = 1;  // threads of the compiled kernels' outer loops
  /// How dot_general is compiled: "auto" (Eigen for float32/float64 matmuls with at least
  /// 32^3 multiply-adds, generated code otherwise), "eigen" or "generated" (benchmarks compare them).
  std::string matmul = "auto";
};

/// The host CPU. Its thread count is FLUXION_NUM_THREADS, or the number of cores.
const Device& cpu_device();

/// One compiled program: call it with concrete arrays (the program's invars, then its consts).
class Executable {
 public:
  Executable(std::shared_ptr<lowering::CompiledKernel> kernel, std::vector<AbstractArray> in_avals,
             std::vector<AbstractArray> out_avals, std::string fingerprint);
  /// Runs the kernel into freshly allocated outputs. Inputs must have the program's types.
  std::vector<Array> run(std::span<const Array> inputs) const;

  const std::vector<AbstractArray>& in_avals() const { return in_avals_; }
  const std::vector<AbstractArray>& out_avals() const { return out_avals_; }
  const std::string& fingerprint() const { return fingerprint_; }
  /// Milliseconds spent building MLIR, in the MLIR passes, in LLVM (optimization and code
  /// generation), and linking the object code into the process.
  double lower_ms() const;
  double passes_ms() const;
  double llvm_ms() const;
  double link_ms() const;
  /// Whether the kernel's object code was read back from the on-disk cache (FLUXION_CACHE_DIR):
  /// then only linking happened.
  bool from_disk_cache() const;

 private:
  std::shared_ptr<lowering::CompiledKernel> kernel_;
  std::vector<AbstractArray> in_avals_, out_avals_;
  std::string fingerprint_;
};

/// The fingerprint the cache uses for `p` on `device`.
std::string fingerprint(const Program& p, const Device& device);

/// The executable of `p` (its consts are not part of it: they are passed at each call), compiled
/// at most once per fingerprint. Throws CompileError. With FLUXION_DUMP=dir set, each compile
/// writes its program, MLIR and LLVM IR to dir/<fingerprint hash>.*.
std::shared_ptr<const Executable> compile(const Program& p, const Device& device = cpu_device());

struct CacheStats {
  int64_t compiles = 0;  // keys compiled (successfully or not)
  int64_t hits = 0;      // lookups answered from the cache
  int64_t disk_hits = 0;  // compiles answered from FLUXION_CACHE_DIR (lowering and MLIR passes skipped)
};
CacheStats cache_stats();
/// Forgets every in-memory entry (executables already handed out stay valid), as a new process
/// would start; with FLUXION_CACHE_DIR set, the next compiles read the kernels back from disk.
void clear_cache();

}  // namespace runtime
}  // namespace fluxion
