// A stand-in for the CUDA driver's libcuda.so.1, built as tests/libcuda_stand_in.so.1 for the meson
// test gpu_check_emulated: it lets the GPU check's travelling runner (fluxion_gpu_runner, which
// dlopens a driver and has no emulator host code) go through its pure-driver path here -- every
// entry point runtime/cuda_driver.cpp binds, with the driver's C signatures. Memory is host memory
// from mmap (never given back: a test's worth), kernels do nothing, events say 1 ms. What it
// proves: the runner binds, loads, fills, launches, copies and times through the real table's path;
// not that any kernel computes anything (the emulated GPU and a GPU do that).
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {
using Ptr = unsigned long long;
void* at(Ptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }
void* handle(uintptr_t n) { return reinterpret_cast<void*>(n); }
constexpr int kInvalidValue = 1, kOutOfMemory = 2, kInvalidPtx = 218;
}  // namespace

extern "C" {
int cuInit(unsigned) { return 0; }
int cuDriverGetVersion(int* v) { return *v = 13000, 0; }
int cuGetErrorName(int, const char** s) { return *s = "CUDA_ERROR_STAND_IN", 0; }
int cuGetErrorString(int, const char** s) { return *s = "an error of the stand-in driver", 0; }
int cuDeviceGetCount(int* n) { return *n = 1, 0; }
int cuDeviceGet(int* d, int) { return *d = 0, 0; }
int cuDeviceGetName(char* name, int len, int) {
  std::strncpy(name, "stand-in libcuda (no kernels run)", size_t(len));
  return 0;
}
int cuDevicePrimaryCtxRetain(void** c, int) { return *c = handle(1), 0; }
int cuCtxSetCurrent(void*) { return 0; }
int cuStreamCreate(void** s, unsigned) { return *s = handle(2), 0; }
int cuStreamSynchronize(void*) { return 0; }
int cuMemAlloc_v2(Ptr* p, size_t n) {
  void* m = mmap(nullptr, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return kOutOfMemory;
  *p = reinterpret_cast<uintptr_t>(m);
  return 0;
}
int cuMemFree_v2(Ptr) { return 0; }
int cuMemHostAlloc(void** p, size_t n, unsigned) { return (*p = std::malloc(n)) ? 0 : kOutOfMemory; }
int cuMemcpyHtoDAsync_v2(Ptr d, const void* s, size_t n, void*) { return std::memcpy(at(d), s, n), 0; }
int cuMemcpyDtoHAsync_v2(void* d, Ptr s, size_t n, void*) { return std::memcpy(d, at(s), n), 0; }
int cuMemcpyDtoDAsync_v2(Ptr d, Ptr s, size_t n, void*) { return std::memcpy(at(d), at(s), n), 0; }
int cuMemsetD8Async(Ptr p, unsigned char v, size_t n, void*) { return std::memset(at(p), v, n), 0; }
int cuMemsetD32Async(Ptr p, unsigned v, size_t n, void*) {
  if (p % 4) return kInvalidValue;
  for (size_t i = 0; i < n; ++i) std::memcpy(static_cast<char*>(at(p)) + 4 * i, &v, 4);
  return 0;
}
int cuModuleLoadDataEx(void** m, const void* image, unsigned, int*, void**) {
  if (!image || !std::strstr(static_cast<const char*>(image), ".entry")) return kInvalidPtx;
  return *m = handle(3), 0;
}
int cuModuleUnload(void*) { return 0; }
int cuModuleGetFunction(void** f, void*, const char*) { return *f = handle(4), 0; }
int cuFuncSetAttribute(void*, int, int) { return 0; }
int cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void** params,
                   void**) {
  return params && params[0] ? 0 : kInvalidValue;
}
int cuEventCreate(void** e, unsigned) { return *e = handle(5), 0; }
int cuEventDestroy_v2(void*) { return 0; }
int cuEventRecord(void*, void*) { return 0; }
int cuEventSynchronize(void*) { return 0; }
int cuEventElapsedTime(float* ms, void*, void*) { return *ms = 1.0f, 0; }
}
