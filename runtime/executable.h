// A compiled program ready to call, whatever it was compiled for: the interface the compile cache
// (compile/compile_cache.h) hands out and fx::jit, fx::pmap and eager GPU ops call. Two kinds:
// runtime/cpu_executable.h (a native kernel in this process) and runtime/gpu_executable.h (PTX
// modules and their launch plan on a GPU's stream).
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/array.h"
#include "memory/buffer.h"

namespace fluxion::runtime {

struct SymbolicDims;  // a polymorphic program's dims, decoded once (executable.cpp)

/// Where the compile time went, in milliseconds: building MLIR, the MLIR passes, LLVM (optimization
/// and code generation; PTX for the GPU), linking the object code into the process (loading it).
struct CompileTimes {
  double lower_ms = 0, passes_ms = 0, llvm_ms = 0, link_ms = 0;
  /// The object code was read back from the on-disk cache (FLUXION_CACHE_DIR): only linking happened.
  bool from_disk_cache = false;
};

/// Where a call runs and whether its results are committed there. Without one, an executable runs
/// where its inputs are: the CPU for host arrays; for a GPU program the GPU its committed inputs are
/// on, else the default device when that is a GPU, else cuda:0.
struct RunOn {
  Device device;
  bool committed = false;
};

/// One compiled program: call it with concrete arrays (the program's invars, then its consts).
class Executable {
 public:
  Executable(std::vector<AbstractArray> in_avals, std::vector<AbstractArray> out_avals, std::string fingerprint,
             Platform platform, CompileTimes times);
  virtual ~Executable() = default;
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  /// Runs the program into freshly allocated outputs. Inputs must have the program's types
  /// (TypeError naming the argument otherwise).
  std::vector<Array> run(std::span<const Array> inputs) const { return run(inputs, {}, std::nullopt); }
  /// The same, writing output k into `into[k]` where that is not null (buffer donation,
  /// interpreters/donation.h: a donated input's buffer of the output's size, which the caller has
  /// proved the program may overwrite).
  std::vector<Array> run(std::span<const Array> inputs, std::span<const std::shared_ptr<Buffer>> into) const {
    return run(inputs, into, std::nullopt);
  }
  /// The same, on a given device (RunOn).
  virtual std::vector<Array> run(std::span<const Array> inputs, std::span<const std::shared_ptr<Buffer>> into,
                                 const std::optional<RunOn>& on) const = 0;

  const std::vector<AbstractArray>& in_avals() const { return in_avals_; }
  const std::vector<AbstractArray>& out_avals() const { return out_avals_; }
  const std::string& fingerprint() const { return fingerprint_; }
  /// The platform the program was compiled for.
  Platform platform() const { return platform_; }
  /// What the program computes, as profiles show it: the primitives it fused, in program order
  /// ("kernel: tanh+mul+add+reduce_sum").
  const std::string& name() const { return name_; }
  double lower_ms() const { return times_.lower_ms; }
  double passes_ms() const { return times_.passes_ms; }
  double llvm_ms() const { return times_.llvm_ms; }
  double link_ms() const { return times_.link_ms; }
  bool from_disk_cache() const { return times_.from_disk_cache; }
  /// A polymorphic program's symbols (docs/shape_polymorphism.md), sorted: the kernel takes their
  /// values after its buffers. Empty for a program of concrete types.
  const std::vector<std::string>& symbols() const { return symbols_; }

 protected:
  /// TypeError unless `inputs` match in_avals() (count and types; a symbolic dim matches any size
  /// that agrees with the other dims of its symbol). Returns the symbols' values, in symbols() order.
  std::vector<int64_t> check_inputs(std::span<const Array> inputs) const;
  /// The outputs' types for these values of the symbols (out_avals() itself when there are none).
  std::vector<AbstractArray> concrete_out_avals(std::span<const int64_t> symbol_values) const;

 private:
  std::vector<AbstractArray> in_avals_, out_avals_;
  std::vector<std::string> symbols_;
  std::shared_ptr<const SymbolicDims> symbolic_;  // null for a program of concrete types
  std::string fingerprint_;
  Platform platform_;
  CompileTimes times_;
  std::string name_;
};

}  // namespace fluxion::runtime
