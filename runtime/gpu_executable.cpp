#include "runtime/gpu_executable.h"

#include <string>

#include "ir/error.h"

namespace fluxion::runtime {

GpuExecutable::GpuExecutable(cuda::Gpu& gpu, GpuProgram program) : gpu_(gpu), program_(std::move(program)) {
  std::vector<cuda::Handle> modules;
  for (const GpuModule& m : program_.modules) modules.push_back(gpu_.load_module(m.ptx));
  for (const GpuLaunch& l : program_.launches) {
    if (l.module < 0 || size_t(l.module) >= modules.size())
      throw DeviceError("DeviceError: the launch of " + l.kernel + " names PTX module " + std::to_string(l.module) +
                        " of " + std::to_string(modules.size()));
    functions_.push_back(gpu_.function(modules[size_t(l.module)], l.kernel));
  }
}

void GpuExecutable::run(std::span<const cuda::DevicePtr> buffers) const {
  if (int(buffers.size()) != program_.num_buffers)
    throw DeviceError("DeviceError: a GPU program of " + std::to_string(program_.num_buffers) + " buffers was given " +
                      std::to_string(buffers.size()));
  std::vector<cuda::DevicePtr> temporaries;
  for (size_t bytes : program_.temporary_bytes) temporaries.push_back(gpu_.allocate(bytes));
  struct Release {  // also when a launch throws
    cuda::Gpu& gpu;
    std::vector<cuda::DevicePtr>& ptrs;
    ~Release() {
      for (cuda::DevicePtr p : ptrs) gpu.release(p);
    }
  } release{gpu_, temporaries};
  std::vector<uint64_t> slots;
  for (size_t i = 0; i < program_.launches.size(); ++i) {
    const GpuLaunch& l = program_.launches[i];
    std::vector<void*> params = pack_params(l, buffers, temporaries, slots);
    gpu_.launch(functions_[i], l.grid.data(), l.block.data(), l.shared_bytes, params.data());
  }
}

}  // namespace fluxion::runtime
