// A program compiled for the GPU (runtime/gpu_program.h: PTX modules and the launch plan) as an
// Executable: `run` takes Arrays, copies host inputs to the device, allocates the outputs in the
// device's memory and queues the launches on its stream without waiting (block_until_ready,
// printing or to_vector wait). The modules are loaded on a GPU the first time the program runs
// there. The temporaries come from the device's caching allocator and go back to it right after
// the last launch is queued (stream order makes that safe: runtime/cuda_allocator.h).
#pragma once
#include <map>
#include <mutex>
#include <span>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/executable.h"
#include "runtime/gpu_program.h"

namespace fluxion::runtime {

class GpuExecutable final : public Executable {
 public:
  GpuExecutable(GpuProgram program, std::vector<AbstractArray> in_avals, std::vector<AbstractArray> out_avals,
                std::string fingerprint, CompileTimes times);
  /// A program without types, loaded on `gpu` at once (DeviceError with the PTX JIT's log when the
  /// driver rejects a module): for tests and tools that hold device addresses themselves.
  GpuExecutable(cuda::Gpu& gpu, GpuProgram program);

  using Executable::run;
  std::vector<Array> run(std::span<const Array> inputs, std::span<const std::shared_ptr<Buffer>> into,
                         const std::optional<RunOn>& on) const override;
  /// Queues every launch on the GPU given at construction; `buffers` are the device addresses of
  /// the kernel ABI's buffers (invars, constvars, outputs). Returns without waiting for the GPU.
  void run(std::span<const cuda::DevicePtr> buffers) const;
  /// The same on any GPU.
  void launch(cuda::Gpu& gpu, std::span<const cuda::DevicePtr> buffers) const;
  const GpuProgram& program() const { return program_; }

 private:
  const std::vector<cuda::Handle>& functions_on(cuda::Gpu& gpu) const;
  GpuProgram program_;
  cuda::Gpu* gpu_ = nullptr;  // the raw constructor's
  mutable std::mutex mutex_;
  mutable std::map<int, std::vector<cuda::Handle>> functions_;  // per GPU ordinal: one per launch
};

}  // namespace fluxion::runtime
