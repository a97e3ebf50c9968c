// The table of CUDA driver entry points every driver call goes through (runtime/cuda_driver.h's
// DriverLibrary::Api): resolved from libcuda.so.1 by dlsym, or filled with the emulated GPU's
// functions (runtime/cuda_emulator.h) under FLUXION_CUDA_DRIVER=emulate. Internal to runtime/.
#pragma once
#include <cstddef>

#include "runtime/cuda_driver.h"

namespace fluxion::runtime::cuda {

// The entry points used, with the driver's own signatures (CUresult is int, CUdevice is int).
struct DriverLibrary::Api {
  using Dev = int;
  int (*cuInit)(unsigned);
  int (*cuGetErrorName)(int, const char**);
  int (*cuGetErrorString)(int, const char**);
  int (*cuDeviceGetCount)(int*);
  int (*cuDeviceGet)(Dev*, int);
  int (*cuDeviceGetName)(char*, int, Dev);
  int (*cuDevicePrimaryCtxRetain)(Handle*, Dev);
  int (*cuCtxSetCurrent)(Handle);
  int (*cuStreamCreate)(Handle*, unsigned);
  int (*cuStreamSynchronize)(Handle);
  int (*cuMemAlloc)(DevicePtr*, size_t);
  int (*cuMemFree)(DevicePtr);
  int (*cuMemHostAlloc)(void**, size_t, unsigned);
  int (*cuMemcpyHtoDAsync)(DevicePtr, const void*, size_t, Handle);
  int (*cuMemcpyDtoHAsync)(void*, DevicePtr, size_t, Handle);
  int (*cuModuleLoadDataEx)(Handle*, const void*, unsigned, int*, void**);
  int (*cuModuleGetFunction)(Handle*, Handle, const char*);
  int (*cuFuncSetAttribute)(Handle, int, int);
  int (*cuLaunchKernel)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Handle, void**, void**);
  // What the GPU check's runner (tools/gpu_runner) needs beyond the library: the driver's version,
  // poisoned and filled buffers, device-to-device copies, modules unloaded after each program, and
  // CUDA events for timing.
  int (*cuDriverGetVersion)(int*);
  int (*cuMemsetD8Async)(DevicePtr, unsigned char, size_t, Handle);
  int (*cuMemsetD32Async)(DevicePtr, unsigned, size_t, Handle);
  int (*cuMemcpyDtoDAsync)(DevicePtr, DevicePtr, size_t, Handle);
  int (*cuModuleUnload)(Handle);
  int (*cuEventCreate)(Handle*, unsigned);
  int (*cuEventDestroy)(Handle);
  int (*cuEventRecord)(Handle, Handle);
  int (*cuEventSynchronize)(Handle);
  int (*cuEventElapsedTime)(float*, Handle, Handle);
  // Not the driver's: the emulated GPU's account of the last error this thread met (the kernel,
  // parameter, index or limit), which DriverLibrary::check appends to the DeviceError. Null for
  // the real driver.
  const char* (*fxErrorDetail)() = nullptr;
};

}  // namespace fluxion::runtime::cuda
