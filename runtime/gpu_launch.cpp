#include "runtime/gpu_launch.h"

#include <string>

#include "ir/error.h"

namespace fluxion::runtime {

LoadedGpuProgram load_gpu_program(cuda::Gpu& gpu, const GpuProgram& p) {
  LoadedGpuProgram out;
  for (const GpuModule& m : p.modules) out.modules.push_back(gpu.load_module(m.ptx));
  for (const GpuLaunch& l : p.launches) {
    if (l.kind == GpuLaunch::Kind::library) {  // no PTX: launch_gpu_program's `library` makes it
      out.functions.push_back(nullptr);
      continue;
    }
    if (l.module < 0 || size_t(l.module) >= out.modules.size())
      throw DeviceError("DeviceError: the launch of " + l.kernel + " names PTX module " + std::to_string(l.module) +
                        " of " + std::to_string(out.modules.size()));
    out.functions.push_back(gpu.function(out.modules[size_t(l.module)], l.kernel));
  }
  return out;
}

void launch_gpu_program(cuda::Gpu& gpu, const GpuProgram& p, std::span<const cuda::Handle> functions,
                        std::span<const cuda::DevicePtr> buffers, std::span<const cuda::DevicePtr> temporaries,
                        GpuLibraryCall library) {
  auto count = [](const char* what, size_t want, size_t got) {
    if (want != got)
      throw DeviceError("DeviceError: a GPU program of " + std::to_string(want) + " " + what + " was given " +
                        std::to_string(got));
  };
  count("buffers", size_t(p.num_buffers), buffers.size());
  count("temporaries", p.temporary_bytes.size(), temporaries.size());
  count("launches", p.launches.size(), functions.size());
  std::vector<uint64_t> slots;
  for (size_t i = 0; i < p.launches.size(); ++i) {
    const GpuLaunch& l = p.launches[i];
    std::vector<void*> params = pack_params(l, buffers, temporaries, slots);
    if (l.kind == GpuLaunch::Kind::library) {
      if (!library) throw DeviceError("DeviceError: this GPU program calls " + l.kernel + ", a library call this runner cannot make");
      std::vector<int64_t> args = call_arguments(l, slots);
      library(gpu, l.kernel, args);
      continue;
    }
    gpu.launch(functions[i], l.grid.data(), l.block.data(), l.shared_bytes, params.data());
  }
}

void launch_gpu_program(cuda::Gpu& gpu, const GpuProgram& p, std::span<const cuda::Handle> functions,
                        std::span<const cuda::DevicePtr> buffers, GpuLibraryCall library) {
  std::vector<cuda::DevicePtr> temporaries;
  struct Release {  // also when a launch throws
    cuda::Gpu& gpu;
    std::vector<cuda::DevicePtr>& ptrs;
    ~Release() {
      for (cuda::DevicePtr t : ptrs) gpu.release(t);
    }
  } release{gpu, temporaries};
  temporaries.reserve(p.temporary_bytes.size());
  for (size_t bytes : p.temporary_bytes) temporaries.push_back(gpu.allocate(bytes));
  launch_gpu_program(gpu, p, functions, buffers, temporaries, library);
}

}  // namespace fluxion::runtime
