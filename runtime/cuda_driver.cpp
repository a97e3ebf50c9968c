#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "ir/error.h"
#include "runtime/cuda_allocator.h"
#include "runtime/cuda_driver_api.h"
#include "runtime/cuda_emulator.h"

namespace fluxion::runtime::cuda {

namespace {
constexpr int kSuccess = 0;
constexpr int kJitErrorLogBuffer = 5, kJitErrorLogBufferBytes = 6;  // CUjit_option
constexpr unsigned kStreamNonBlocking = 1;                           // CU_STREAM_NON_BLOCKING
constexpr size_t kStagingBytes = size_t(64) << 20;
constexpr int kMaxDynamicSharedSizeBytes = 8;                        // CUfunction_attribute
const char* const kEmulatedDriver = "emulate";                       // FLUXION_CUDA_DRIVER's value

// The names of the codes a user is likely to meet, for drivers (and the toolkit's stub library)
// whose cuGetErrorName does not answer.
const char* known_error_name(int code) {
  static const std::map<int, const char*> names = {
      {1, "CUDA_ERROR_INVALID_VALUE"}, {2, "CUDA_ERROR_OUT_OF_MEMORY"}, {3, "CUDA_ERROR_NOT_INITIALIZED"},
      {34, "CUDA_ERROR_STUB_LIBRARY"}, {35, "CUDA_ERROR_INSUFFICIENT_DRIVER"}, {100, "CUDA_ERROR_NO_DEVICE"},
      {101, "CUDA_ERROR_INVALID_DEVICE"}, {200, "CUDA_ERROR_INVALID_IMAGE"}, {201, "CUDA_ERROR_INVALID_CONTEXT"},
      {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"}, {218, "CUDA_ERROR_INVALID_PTX"}, {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
      {400, "CUDA_ERROR_INVALID_HANDLE"}, {500, "CUDA_ERROR_NOT_FOUND"}, {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
      {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"}, {719, "CUDA_ERROR_LAUNCH_FAILED"}, {999, "CUDA_ERROR_UNKNOWN"}};
  auto it = names.find(code);
  return it == names.end() ? nullptr : it->second;
}
}  // namespace

std::string driver_error_message(const char* call, int code, const char* name, const char* text) {
  if (!name) name = known_error_name(code);
  std::string s = std::string("DeviceError: ") + call + ": " + (name ? name : "CUDA error") + " (" + std::to_string(code) + ")";
  if (text) s += std::string(": ") + text;
  if (code == 34) s += " (the CUDA toolkit's stub libcuda.so was loaded instead of the driver's libcuda.so.1)";
  return s;
}

DriverLibrary::DriverLibrary(const std::string& path) : api_(std::make_unique<Api>()) {
  if (path == kEmulatedDriver) {
    emulator::fill_api(*api_);
    return;
  }
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = dlerror();
    throw DeviceError("DeviceError: the CUDA driver library " + path + " could not be loaded: " + (why ? why : "?"));
  }
  auto bind = [&](auto& fn, const char* symbol) {
    void* p = dlsym(handle_, symbol);
    if (!p) {
      dlclose(handle_);
      throw DeviceError("DeviceError: the CUDA driver library " + path + " has no " + symbol + " (a driver older than CUDA 11?)");
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  Api& a = *api_;
  bind(a.cuInit, "cuInit");
  bind(a.cuGetErrorName, "cuGetErrorName");
  bind(a.cuGetErrorString, "cuGetErrorString");
  bind(a.cuDeviceGetCount, "cuDeviceGetCount");
  bind(a.cuDeviceGet, "cuDeviceGet");
  bind(a.cuDeviceGetName, "cuDeviceGetName");
  bind(a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  bind(a.cuCtxSetCurrent, "cuCtxSetCurrent");
  bind(a.cuStreamCreate, "cuStreamCreate");
  bind(a.cuStreamSynchronize, "cuStreamSynchronize");
  bind(a.cuMemAlloc, "cuMemAlloc_v2");
  bind(a.cuMemFree, "cuMemFree_v2");
  bind(a.cuMemHostAlloc, "cuMemHostAlloc");
  bind(a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  bind(a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  bind(a.cuModuleLoadDataEx, "cuModuleLoadDataEx");
  bind(a.cuModuleGetFunction, "cuModuleGetFunction");
  bind(a.cuFuncSetAttribute, "cuFuncSetAttribute");
  bind(a.cuLaunchKernel, "cuLaunchKernel");
  bind(a.cuDriverGetVersion, "cuDriverGetVersion");
  bind(a.cuMemsetD8Async, "cuMemsetD8Async");
  bind(a.cuMemsetD32Async, "cuMemsetD32Async");
  bind(a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  bind(a.cuModuleUnload, "cuModuleUnload");
  bind(a.cuEventCreate, "cuEventCreate");
  bind(a.cuEventDestroy, "cuEventDestroy_v2");
  bind(a.cuEventRecord, "cuEventRecord");
  bind(a.cuEventSynchronize, "cuEventSynchronize");
  bind(a.cuEventElapsedTime, "cuEventElapsedTime");  // not _v2 (CUDA 12.8): the same for these events, in every driver
}

DriverLibrary::~DriverLibrary() {
  if (handle_) dlclose(handle_);
}

void DriverLibrary::check(int code, const char* call) const {
  if (code == kSuccess) return;
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_->cuGetErrorName(code, &name) != kSuccess) name = nullptr;
  if (api_->cuGetErrorString(code, &text) != kSuccess) text = nullptr;
  std::string message = driver_error_message(call, code, name, text);
  if (api_->fxErrorDetail)
    if (const char* detail = api_->fxErrorDetail(); detail && *detail) message += std::string("\nthe emulated GPU: ") + detail;
  throw DeviceError(message);
}

void DriverLibrary::init() const { check(api_->cuInit(0), "cuInit"); }

std::string driver_path() {
  const char* p = std::getenv("FLUXION_CUDA_DRIVER");
  return p && *p ? p : "libcuda.so.1";
}

bool emulating() {
  const DriverLibrary* d = driver();
  return d && d->emulated();
}

namespace {
struct Loaded {
  std::unique_ptr<DriverLibrary> library;
  std::string reason;
};
const Loaded& loaded() {
  static const Loaded* l = [] {
    auto* r = new Loaded;  // lives as long as the process: kernels may run during static destruction
    try {
      auto lib = std::make_unique<DriverLibrary>(driver_path());
      lib->init();
      r->library = std::move(lib);
    } catch (const DeviceError& e) {
      r->reason = e.what();
    }
    return r;
  }();
  return *l;
}
}  // namespace

const DriverLibrary* driver() { return loaded().library.get(); }
const std::string& unavailable_reason() { return loaded().reason; }

int device_count() {
  const DriverLibrary* d = driver();
  if (!d) return 0;
  int n = 0;
  if (d->api().cuDeviceGetCount(&n) != kSuccess) return 0;  // e.g. CUDA_ERROR_NO_DEVICE
  return n;
}

std::string device_name(int ordinal) {
  const DriverLibrary* d = driver();
  if (!d) throw DeviceError("DeviceError: no CUDA driver: " + unavailable_reason());
  int dev = 0;
  d->check(d->api().cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  char name[256] = {0};
  d->check(d->api().cuDeviceGetName(name, int(sizeof(name)), dev), "cuDeviceGetName");
  return name;
}

// ---- one GPU ------------------------------------------------------------------------------------

struct Gpu::Cache {
  Cache(CachingAllocator::Allocate a, CachingAllocator::Free f) : allocator(std::move(a), std::move(f)) {}
  CachingAllocator allocator;
  std::mutex mu;
};

namespace {
const DriverLibrary& require_driver(int ordinal) {
  const DriverLibrary* d = driver();
  if (!d) throw DeviceError("DeviceError: cuda:" + std::to_string(ordinal) + " is not available: " + unavailable_reason());
  const int n = device_count();
  if (ordinal < 0 || ordinal >= n)
    throw DeviceError("DeviceError: cuda:" + std::to_string(ordinal) + " is not a device; the driver sees " +
                      std::to_string(n) + " GPU(s)");
  return *d;
}
}  // namespace

Gpu& Gpu::get(int ordinal) {
  static std::mutex mu;
  static auto* gpus = new std::map<int, Gpu*>();  // never destroyed (see `loaded`)
  std::lock_guard<std::mutex> lock(mu);
  Gpu*& g = (*gpus)[ordinal];
  if (!g) g = new Gpu(ordinal);
  return *g;
}

Gpu::Gpu(int ordinal) : d_(require_driver(ordinal)), ordinal_(ordinal) {
  const auto& a = d_.api();
  int dev = 0;
  d_.check(a.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  d_.check(a.cuDevicePrimaryCtxRetain(&context_, dev), "cuDevicePrimaryCtxRetain");
  make_current();
  d_.check(a.cuStreamCreate(&stream_, kStreamNonBlocking), "cuStreamCreate");
  staging_bytes_ = kStagingBytes;
  d_.check(a.cuMemHostAlloc(&staging_, staging_bytes_, 0), "cuMemHostAlloc");
  cache_ = std::make_unique<Cache>(
      [this](size_t bytes) {
        DevicePtr p = 0;
        d_.check(d_.api().cuMemAlloc(&p, bytes), "cuMemAlloc");
        return p;
      },
      [this](uint64_t p) { d_.api().cuMemFree(p); });
}

void Gpu::make_current() const { d_.check(d_.api().cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

DevicePtr Gpu::allocate(size_t bytes) {
  make_current();
  std::lock_guard<std::mutex> lock(cache_->mu);
  return cache_->allocator.allocate(bytes);
}

void Gpu::release(DevicePtr p) {
  std::lock_guard<std::mutex> lock(cache_->mu);
  cache_->allocator.release(p);
}

// Chunks of the staging buffer: each chunk is copied into (or out of) pinned memory on the host
// and moved by DMA; the stream orders the chunks, and one synchronisation per chunk keeps the
// staging buffer free for the next.
void Gpu::copy_to_device(DevicePtr dst, const void* src, size_t bytes) {
  std::lock_guard<std::mutex> lock(staging_mu_);
  make_current();
  for (size_t done = 0; done < bytes; done += staging_bytes_) {
    const size_t n = std::min(staging_bytes_, bytes - done);
    std::memcpy(staging_, static_cast<const char*>(src) + done, n);
    d_.check(d_.api().cuMemcpyHtoDAsync(dst + done, staging_, n, stream_), "cuMemcpyHtoDAsync");
    synchronize();
  }
}

void Gpu::copy_to_host(void* dst, DevicePtr src, size_t bytes) {
  std::lock_guard<std::mutex> lock(staging_mu_);
  make_current();
  for (size_t done = 0; done < bytes; done += staging_bytes_) {
    const size_t n = std::min(staging_bytes_, bytes - done);
    d_.check(d_.api().cuMemcpyDtoHAsync(staging_, src + done, n, stream_), "cuMemcpyDtoHAsync");
    synchronize();
    std::memcpy(static_cast<char*>(dst) + done, staging_, n);
  }
}

void Gpu::synchronize() { d_.check(d_.api().cuStreamSynchronize(stream_), "cuStreamSynchronize"); }

Handle Gpu::load_module(const std::string& ptx) {
  make_current();
  char log[8192] = {0};
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferBytes};
  void* values[] = {log, reinterpret_cast<void*>(uintptr_t(sizeof(log)))};
  Handle module = nullptr;
  const int r = d_.api().cuModuleLoadDataEx(&module, ptx.c_str(), 2, options, values);  // c_str: NUL-terminated
  if (r != kSuccess) {
    try {
      d_.check(r, "cuModuleLoadDataEx");
    } catch (const DeviceError& e) {
      throw DeviceError(std::string(e.what()) + "\nthe PTX JIT said: " + log);
    }
  }
  return module;
}

Handle Gpu::function(Handle module, const std::string& name) {
  Handle fn = nullptr;
  d_.check(d_.api().cuModuleGetFunction(&fn, module, name.c_str()), "cuModuleGetFunction");
  return fn;
}

void Gpu::set_max_dynamic_shared_bytes(Handle fn, int bytes) {
  make_current();
  d_.check(d_.api().cuFuncSetAttribute(fn, kMaxDynamicSharedSizeBytes, bytes), "cuFuncSetAttribute");
}

void Gpu::launch(Handle fn, const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes, void** params) {
  make_current();
  d_.check(d_.api().cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes, stream_,
                                   params, nullptr),
           "cuLaunchKernel");
}

}  // namespace fluxion::runtime::cuda
