// A GPU's memory for Buffer (memory/device_memory.h), through the device's runtime state
// (runtime/cuda_driver.h: its caching allocator, its stream, the pinned staging buffer).
// Registered when the library loads; nothing touches the driver until a GPU buffer is made.
#include <algorithm>

#include "memory/device_memory.h"
#include "runtime/cuda_driver.h"

namespace fluxion::runtime::cuda {

namespace {

class CudaMemory final : public DeviceMemory {
 public:
  uint64_t allocate(int id, size_t bytes) override { return Gpu::get(id).allocate(std::max<size_t>(bytes, 1)); }
  void release(int id, uint64_t address) noexcept override {
    try {
      Gpu::get(id).release(address);
    } catch (...) {  // a buffer outliving its driver (process exit): nothing to give back to
    }
  }
  void copy_to_device(int id, uint64_t dst, const void* src, size_t bytes) override {
    Gpu::get(id).copy_to_device(dst, src, bytes);
  }
  void copy_to_host(int id, void* dst, uint64_t src, size_t bytes) override { Gpu::get(id).copy_to_host(dst, src, bytes); }
  void synchronize(int id) override { Gpu::get(id).synchronize(); }
};

const bool registered = [] {
  set_device_memory(Platform::cuda, new CudaMemory);  // never destroyed: buffers may outlive statics
  return true;
}();

}  // namespace

}  // namespace fluxion::runtime::cuda
