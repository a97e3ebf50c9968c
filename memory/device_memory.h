// Memory the host cannot address: a GPU's. memory/ sits below every driver, so the platforms that
// have memory of their own register it here (runtime/cuda_memory.cpp for cuda) and Buffer calls
// it: a Buffer of MemoryKind::device holds a device address instead of a host pointer.
//
// Ordering: every implementation queues allocation reuse, copies and kernels of one device in one
// order (a GPU's stream), so a block released while work that uses it is still queued is only
// handed out again to work queued after that work (runtime/cuda_allocator.h says why that is safe).
#pragma once
#include <cstddef>
#include <cstdint>

#include "memory/device.h"

namespace fluxion {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  /// A block of at least `bytes` (at least one byte is reserved) on device `id` of the platform.
  /// Throws (fluxion::DeviceError, from the driver) when the device is out of memory.
  virtual uint64_t allocate(int id, size_t bytes) = 0;
  /// Gives the block back; work queued before may still use it (see the top).
  virtual void release(int id, uint64_t address) noexcept = 0;
  /// Host -> device; the host bytes may be reused when it returns.
  virtual void copy_to_device(int id, uint64_t dst, const void* src, size_t bytes) = 0;
  /// Device -> host, after every piece of work queued on the device before it.
  virtual void copy_to_host(int id, void* dst, uint64_t src, size_t bytes) = 0;
  /// Waits until every piece of work queued on the device has finished (and raises its errors).
  virtual void synchronize(int id) = 0;
};

/// Registers the memory of a platform (runtime/ does it when the platform's first device is made).
void set_device_memory(Platform p, DeviceMemory* memory);
/// The memory of a platform; std::logic_error when none is registered (a Buffer of that platform
/// cannot exist then).
DeviceMemory& device_memory(Platform p);

}  // namespace fluxion
