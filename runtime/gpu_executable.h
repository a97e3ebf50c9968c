// A GpuProgram (runtime/gpu_program.h) loaded on one GPU: its PTX module, a function handle per
// launch, and `run`, which queues the launches on the device's stream. The temporaries come from
// the device's caching allocator and go back to it right after the last launch is queued (stream
// order makes that safe: runtime/cuda_allocator.h).
#pragma once
#include <span>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/gpu_program.h"

namespace fluxion::runtime {

class GpuExecutable {
 public:
  /// Loads the PTX on `gpu` (DeviceError with the PTX JIT's log when the driver rejects one).
  GpuExecutable(cuda::Gpu& gpu, GpuProgram program);
  /// Queues every launch; `buffers` are the device addresses of the kernel ABI's buffers
  /// (invars, constvars, outputs). Returns without waiting for the GPU.
  void run(std::span<const cuda::DevicePtr> buffers) const;
  const GpuProgram& program() const { return program_; }

 private:
  cuda::Gpu& gpu_;
  GpuProgram program_;
  std::vector<cuda::Handle> functions_;  // one per launch
};

}  // namespace fluxion::runtime
