// A program compiled for the CPU: a native kernel linked into this process (runtime/kernel.h
// states its ABI), called on the caller's thread; its outputs are host memory.
#pragma once
#include "runtime/executable.h"
#include "runtime/kernel.h"

namespace fluxion::runtime {

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(std::shared_ptr<Kernel> kernel, std::vector<AbstractArray> in_avals, std::vector<AbstractArray> out_avals,
                std::string fingerprint);
  using Executable::run;
  /// `on` is ignored: host memory serves every CPU device (an input in a GPU's memory is read through
  /// its host copy).
  std::vector<Array> run(std::span<const Array> inputs, std::span<const std::shared_ptr<Buffer>> into,
                         const std::optional<RunOn>& on) const override;

 private:
  std::shared_ptr<Kernel> kernel_;
};

}  // namespace fluxion::runtime
