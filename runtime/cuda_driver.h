// The CUDA driver API, loaded with dlopen (issue 12): one build of the library runs with and without
// a GPU or driver, and builds where no CUDA toolkit is installed. No CUDA header is included here
// (this header is installed): the few driver types are spelled as plain integers and pointers, the
// way the driver's ABI defines them (CUdeviceptr is 64 bits, handles are pointers).
//
// Every driver call goes through `check`, which turns a CUresult into a fluxion::DeviceError
// carrying the call, the error's name and the driver's own message.
//
// What a cuda:k device owns: a primary context, one stream (every launch and copy is queued on it,
// so work on one device runs in order without host synchronisation), a pinned host staging buffer
// for host<->device copies, and a caching allocator (runtime/cuda_allocator.h).
//
// FLUXION_CUDA_DRIVER=emulate fills the same table of entry points with the emulated GPU's
// (runtime/cuda_emulator.h): one device, cuda:0, whose kernels run on the CPU. Everything above the
// table -- Gpu, the allocator, GpuExecutable, the copies -- runs unchanged.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fluxion::runtime::cuda {

using DevicePtr = uint64_t;  // CUdeviceptr
using Handle = void*;        // CUcontext, CUstream, CUmodule, CUfunction

/// The error text for a failed driver call: "DeviceError: cuInit: CUDA_ERROR_NO_DEVICE (100): no
/// CUDA-capable device is detected". `name`/`text` may be null (the stub library, or a driver
/// that does not know the code): the name then comes from a table of the common codes.
std::string driver_error_message(const char* call, int code, const char* name, const char* text);

/// The loaded driver library: its entry points, resolved once. Construction throws DeviceError
/// (naming the library and dlerror's reason) when the library cannot be loaded or lacks a symbol.
/// The path "emulate" loads nothing: the entry points are the emulated GPU's.
class DriverLibrary {
 public:
  explicit DriverLibrary(const std::string& path);
  ~DriverLibrary();
  DriverLibrary(const DriverLibrary&) = delete;
  DriverLibrary& operator=(const DriverLibrary&) = delete;

  /// cuInit(0); DeviceError when the driver refuses (no device, the toolkit's stub library, ...).
  void init() const;
  /// Throws DeviceError (driver_error_message) when `code` is not CUDA_SUCCESS.
  void check(int code, const char* call) const;

  struct Api;  // the function pointers (cuda_driver_api.h)
  const Api& api() const { return *api_; }
  bool emulated() const { return handle_ == nullptr; }

 private:
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
};

/// Where the driver is looked for: $FLUXION_CUDA_DRIVER, else "libcuda.so.1" (the loader's path).
std::string driver_path();
/// Whether the process's driver is the emulated GPU (FLUXION_CUDA_DRIVER=emulate): compile_cuda
/// then also compiles each kernel to host code for it (lowering/gpu_emulation.h).
bool emulating();

/// The process's driver, loaded and initialised (cuInit) on first use; nullptr when there is none,
/// with the reason in `unavailable_reason()`. Never throws.
const DriverLibrary* driver();
const std::string& unavailable_reason();

/// GPUs the driver sees (0 without a driver).
int device_count();
std::string device_name(int ordinal);

/// One GPU's runtime state: context, stream, staging buffer. Created on first use, kept for the
/// process's lifetime. Throws DeviceError for an ordinal the driver does not have.
class Gpu {
 public:
  static Gpu& get(int ordinal);

  int ordinal() const { return ordinal_; }
  Handle stream() const { return stream_; }

  DevicePtr allocate(size_t bytes);  // from the caching allocator, ordered on stream()
  void release(DevicePtr p);         // back to the cache; reusable by later work on stream()

  /// Host <-> device through the pinned staging buffer (so the transfers are DMA at full speed);
  /// returns when the bytes have arrived. Safe from several threads: one copy holds the staging
  /// buffer at a time.
  void copy_to_device(DevicePtr dst, const void* src, size_t bytes);
  void copy_to_host(void* dst, DevicePtr src, size_t bytes);
  void synchronize();

  /// Loads a PTX module (the JIT log is part of the DeviceError when the driver rejects it).
  Handle load_module(const std::string& ptx);
  Handle function(Handle module, const std::string& name);
  /// Lets `fn` take more than 48 KiB of dynamic shared memory per block, up to `bytes`
  /// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; 227 KiB with the static part on sm_90).
  void set_max_dynamic_shared_bytes(Handle fn, int bytes);
  /// Queues a launch on stream(); `params[i]` points at the i-th kernel parameter's value, and a
  /// nullptr follows the last (pack_params' layout): the driver reads only as many as the kernel
  /// takes, the emulated one counts them and refuses a launch whose count differs.
  void launch(Handle fn, const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes, void** params);
  /// Makes this GPU's context the calling thread's (for libraries that use the current context:
  /// cuBLAS, runtime/gpu_library.cpp).
  void make_current() const;

 private:
  explicit Gpu(int ordinal);
  const DriverLibrary& d_;
  int ordinal_;
  Handle context_ = nullptr, stream_ = nullptr;
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  std::mutex staging_mu_;  // the staging buffer serves one copy at a time
  struct Cache;
  std::unique_ptr<Cache> cache_;
};

}  // namespace fluxion::runtime::cuda
