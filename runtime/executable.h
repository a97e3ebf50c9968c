// A compiled program ready to call: its kernel (runtime/kernel.h) with the types it takes and
// returns. compile/compile_cache.h makes them.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/array.h"
#include "ir/program.h"
#include "runtime/kernel.h"

namespace fluxion::runtime {

/// One compiled program: call it with concrete arrays (the program's invars, then its consts).
class Executable {
 public:
  Executable(std::shared_ptr<Kernel> kernel, std::vector<AbstractArray> in_avals,
             std::vector<AbstractArray> out_avals, std::string fingerprint);
  /// Runs the kernel into freshly allocated outputs. Inputs must have the program's types.
  std::vector<Array> run(std::span<const Array> inputs) const;
  /// The same, writing output k into `into[k]` where that is not null (buffer donation,
  /// interpreters/donation.h: a donated input's buffer of the output's size, which the caller has
  /// proved the kernel may overwrite).
  std::vector<Array> run(std::span<const Array> inputs, std::span<const std::shared_ptr<Buffer>> into) const;

  const std::vector<AbstractArray>& in_avals() const { return in_avals_; }
  const std::vector<AbstractArray>& out_avals() const { return out_avals_; }
  const std::string& fingerprint() const { return fingerprint_; }
  /// What the kernel computes, as profiles show it: the primitives it fused, in program order
  /// ("kernel: tanh+mul+add+reduce_sum").
  const std::string& name() const { return name_; }
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
  std::shared_ptr<Kernel> kernel_;
  std::vector<AbstractArray> in_avals_, out_avals_;
  std::string fingerprint_;
  std::string name_;
};

}  // namespace fluxion::runtime
