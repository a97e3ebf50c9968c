// The emulated GPU (FLUXION_CUDA_DRIVER=emulate; docs/gpu.md, "The emulated GPU"): a CUDA driver
// whose one device, cuda:0, runs kernels on the CPU, so that everything above the driver -- device
// memory, the caching allocator, launch plans, parameter packing, copies, the kernels themselves
// -- runs in CI on machines without a GPU. Not for speed: for correctness, and for everything a
// GPU would refuse.
//
//   device memory  host memory, 256-byte aligned, filled with 0xFF bytes when allocated (NaN in
//                  every float type, -1 in every integer one: a kernel that reads what nobody wrote
//                  shows it); an allocation table, so that copies, kernel parameters and frees are
//                  checked against live allocations
//   streams        run their work at once, in order (a copy or launch is done when it returns)
//   modules        a PTX module runs as the host code compile_cuda made from the same gpu.func
//                  (lowering/gpu_emulation.h), registered here under the PTX text; the PTX itself
//                  is read for each entry's parameter list, .maxntid and static shared memory
//   launches       refused as a GPU refuses them (CUDA_ERROR_INVALID_VALUE): block dims over
//                  1024 x 1024 x 64 or 1024 threads, over the entry's .maxntid, grid x over
//                  2^31-1 or y, z over 65535, shared memory over 48 KiB a block (227 KiB where the
//                  kernel opted in), a parameter count other than the entry's
//   faults         a pointer parameter outside a live allocation large enough for its memref, or
//                  a load or store outside its memref's shape: CUDA_ERROR_ILLEGAL_ADDRESS; threads
//                  of a block that cannot all meet at a barrier: CUDA_ERROR_LAUNCH_FAILED. Both
//                  are sticky, as on a GPU: every later call returns them until reset().
//   errors         CUresult codes under CUDA's names; the detail (kernel, parameter, index, limit)
//                  reaches the DeviceError through the Api's fxErrorDetail.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda_driver.h"

namespace fluxion::runtime::cuda::emulator {

/// gpu.shuffle's modes as the host code passes them to fluxion_emu_shuffle.
enum class ShuffleMode : int32_t { xor_ = 0, up = 1, down = 2, idx = 3 };

/// One parameter of a kernel's host code, in the PTX entry's order.
struct HostParam {
  bool pointer = true;    // a memref (bare pointer); else a scalar passed by value
  size_t bytes = 0;       // pointer: the bytes from the pointer its memref reaches (offset and strides
                          // included); scalar: its size
  std::string type;       // the MLIR type, for messages
};

/// One kernel as host code. `run(args)` runs one thread: args[i] points at the i-th argument of
/// the host function -- the kernel's parameters, then one pointer per shared (workgroup) buffer,
/// then the thread's ids as int64 (thread x y z, block x y z, block dims x y z, grid dims x y z),
/// then the thread's context (the `void*` the fluxion_emu_* functions take).
struct HostKernel {
  std::string name;  // the PTX entry
  void (*run)(void** args) = nullptr;
  std::vector<HostParam> params;
  std::vector<size_t> shared_buffers;  // bytes of each workgroup buffer, in argument order
  bool synchronizes = false;           // has barriers or shuffles: a block's threads run as fibers
  std::vector<std::string> sites;      // the bounds-checked loads and stores, by site number
};

/// The host code of one PTX module. `code` owns what `run` points into (linked kernels).
struct HostModule {
  std::vector<HostKernel> kernels;
  std::vector<std::shared_ptr<const void>> code;
};

/// Makes `module` the host code of the PTX text `ptx` (as compile_cuda produced it, without the
/// trailing NUL). The emulator keeps only a weak reference: the caller keeps the code alive (a
/// GpuModule holds it), and a launch of a module whose code is gone fails with
/// CUDA_ERROR_INVALID_HANDLE.
void register_module(const std::string& ptx, std::shared_ptr<const HostModule> module);

/// Fills the driver table with the emulator's entry points (DriverLibrary("emulate")).
void fill_api(DriverLibrary::Api& api);

/// Clears a sticky error (CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_FAILED), which a real GPU
/// clears only with a new process; memory and modules stay. For tests.
void reset();

/// The sticky error's code, or 0.
int sticky_error();

/// Live device allocations and their bytes (tests).
size_t live_allocations();
size_t live_bytes();

/// The emulated device's name.
const char* device_name();

}  // namespace fluxion::runtime::cuda::emulator

// What emulated kernels call (by these names, found in the process when they are linked), each
// with the thread's context, the last argument of HostKernel::run:
extern "C" {
/// gpu.barrier: waits until every thread of the block that has not returned is at a barrier.
void fluxion_emu_barrier(void* thread);
/// gpu.shuffle (32-bit after MLIR's own rewrites): waits until every live lane of the warp is at
/// a shuffle, then returns the value of the lane PTX's shfl.sync picks (its own where none).
uint64_t fluxion_emu_shuffle(void* thread, uint64_t value, int32_t offset, int32_t width, int32_t mode);
/// Whether the last shuffle's source lane was in range (gpu.shuffle's second result): 1 or 0.
int32_t fluxion_emu_shuffle_valid(void* thread);
/// A load or store whose index `index` in dimension `dim` is outside [0, size): recorded as the
/// launch's fault (CUDA_ERROR_ILLEGAL_ADDRESS) with `site`'s description; the access is skipped.
/// Called for every dimension of a failing access; those in range are ignored.
void fluxion_emu_out_of_bounds(void* thread, int64_t site, int64_t dim, int64_t index, int64_t size);
}
