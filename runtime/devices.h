// Devices as users see them (shared/api.md "Devices"): the list, placement of arrays, the default
// device, and the worker each CPU device runs its share of an fx::pmap on.
//
// FLUXION_CPU_DEVICES=N gives N CPU devices in one process (XLA's forced host device count): they
// share host memory, and a pmap over them runs N programs at once on worker threads
// (runtime/device_workers.h). After fx::distributed::initialize every process sees the global list: process p owns
// cpu:(p*N) .. cpu:(p*N+N-1) (runtime/distributed.h).
//
// A GPU, cuda:k (the driver's, or the emulated one: FLUXION_CUDA_DRIVER=emulate), holds Buffers in
// its own memory (MemoryKind::device, memory/device_memory.h, from its caching allocator); its
// work is queued on its stream (block_until_ready waits for it); device_put copies host <-> device;
// eager ops on its arrays are cached one-op GPU programs (compile/eager_device.cpp) and fx::jit
// compiles for it when its arguments live there. Its collectives (NCCL) are not written yet.
#pragma once
#include <source_location>
#include <span>
#include <string_view>
#include <vector>

#include "ir/array.h"
#include "memory/device.h"

namespace fluxion {

/// Every device of every process, in order (cpu:0, cpu:1, ...).
std::vector<Device> devices();
/// The devices of one platform ("cpu", "cuda"); empty where there are none.
std::vector<Device> devices(std::string_view platform);
/// The devices this process drives (all of them without distributed::initialize).
std::vector<Device> local_devices();
/// The same, of one platform ("cpu", "cuda").
std::vector<Device> local_devices(std::string_view platform);
bool is_local(const Device& d);

/// x on device d: a copy placed there and committed to it, so eager ops that use it run there
/// (computation follows data); x itself when it is already committed to d. To or from a GPU it is
/// a copy between host and device memory. A tracer is returned as it is (placement is decided when
/// the program runs). DeviceError for a device this process does not have or cannot use.
Array device_put(const Array& x, const Device& d, std::source_location loc = std::source_location::current());

/// New arrays and eager ops without committed operands go to `d` while the scope lives (on this
/// thread). DeviceError for a device this process does not have.
class default_device_scope {
 public:
  explicit default_device_scope(const Device& d, std::source_location loc = std::source_location::current());
  ~default_device_scope();
  default_device_scope(const default_device_scope&) = delete;
  default_device_scope& operator=(const default_device_scope&) = delete;
};

namespace runtime {
/// CPU devices per process: FLUXION_CPU_DEVICES (default 1).
int cpu_devices_per_process();
/// Checks that d is one of this process's devices; DeviceError naming `what` and `loc` if not.
void check_local(const fluxion::Device& d, std::string_view what, SourceLoc loc);
}  // namespace runtime

}  // namespace fluxion
