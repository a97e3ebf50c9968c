// The runner's few device helpers over the runtime's driver table (gpu_runner.h).
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "ir/error.h"
#include "runtime/cuda_driver_api.h"
#include "runtime/gpu_launch.h"
#include "tools/gpu_runner.h"

namespace fluxion::gpu_runner {

const cuda::DriverLibrary& driver() {
  const cuda::DriverLibrary* d = cuda::driver();
  if (!d) throw DeviceError(cuda::unavailable_reason());
  return *d;
}

DeviceBuffers::~DeviceBuffers() {
  for (cuda::DevicePtr p : ptrs) gpu.release(p);
}

cuda::DevicePtr DeviceBuffers::add(size_t bytes) {
  ptrs.push_back(gpu.allocate(bytes));
  return ptrs.back();
}

void fill32(cuda::Gpu& gpu, cuda::DevicePtr p, size_t bytes, uint32_t pattern) {
  driver().check(driver().api().cuMemsetD32Async(p, pattern, bytes / 4, gpu.stream()), "cuMemsetD32Async");
}

void poison(cuda::Gpu& gpu, cuda::DevicePtr p, size_t bytes) {
  driver().check(driver().api().cuMemsetD8Async(p, 0xFF, bytes, gpu.stream()), "cuMemsetD8Async");
}

void put_input(cuda::Gpu& gpu, cuda::DevicePtr p, const Case& c, const Input& in) {
  if (in.file.empty()) {
    fill32(gpu, p, in.bytes, in.pattern);
    return;
  }
  const std::string path = c.dir + "/" + in.file;
  std::ifstream f(path, std::ios::binary);
  std::error_code size_error;
  const uintmax_t size = std::filesystem::file_size(path, size_error);
  if (!f || size_error || size > in.bytes)
    throw std::runtime_error(path + ": not readable, or more than the buffer's " + std::to_string(in.bytes) + " bytes");
  std::vector<char> bytes(size);
  if (!f.read(bytes.data(), std::streamsize(size))) throw std::runtime_error(path + ": a short read");
  if (!bytes.empty()) gpu.copy_to_device(p, bytes.data(), bytes.size());
}

// load_gpu_program is the library's own loading (GpuExecutable's); when it throws, the modules it
// loaded before are not unloaded -- a few kilobytes of a failed program, on a GPU whose process ends
// with the check anyway.
Loaded::Loaded(cuda::Gpu& g, const runtime::GpuProgram& p) : gpu(g) {
  runtime::LoadedGpuProgram l = runtime::load_gpu_program(gpu, p);
  modules = std::move(l.modules);
  functions = std::move(l.functions);
}

Loaded::~Loaded() {
  for (cuda::Handle m : modules) driver().api().cuModuleUnload(m);  // an error here has been reported already
}

bool context_lost(cuda::Gpu& gpu) { return driver().api().cuStreamSynchronize(gpu.stream()) != 0; }

}  // namespace fluxion::gpu_runner
