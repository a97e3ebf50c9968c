// The CUDA runtime pieces that need no GPU: loading the driver (a missing library, the toolkit's
// stub library), driver errors as DeviceError, the caching allocator over a fake backend, the
// kernel-parameter packing, and the device list without a GPU. tests/test_gpu.cpp runs programs on
// a GPU (skipped without one).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <filesystem>
#include <string>

#include "lowering/compile_cuda.h"
#include "runtime/cuda_allocator.h"
#include "runtime/cuda_driver.h"
#include "runtime/gpu_program.h"

namespace fx = fluxion;
namespace cuda = fluxion::runtime::cuda;
using fluxion::runtime::GpuLaunch;
using fluxion::runtime::GpuParam;

namespace {
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const std::string kStub = fx::lowering::cuda_toolkit_path() + "/lib64/stubs/libcuda.so";
bool have_stub() { return !fx::lowering::cuda_toolkit_path().empty() && std::filesystem::exists(kStub); }
}  // namespace

TEST_CASE("cuda driver: a missing library is a DeviceError naming it and the loader's reason") {
  try {
    cuda::DriverLibrary lib("/nonexistent/libcuda.so.1");
    FAIL("a library that does not exist was loaded");
  } catch (const fx::DeviceError& e) {
    CHECK_MESSAGE(contains(e.what(), "/nonexistent/libcuda.so.1"), e.what());
    CHECK_MESSAGE(contains(e.what(), "No such file"), e.what());  // dlerror's words
  }
}

TEST_CASE("cuda driver: the toolkit's stub library loads, and its cuInit failure is a DeviceError" *
          doctest::skip(!have_stub())) {
  cuda::DriverLibrary lib(kStub);  // every entry point resolves
  try {
    lib.init();
    FAIL("the stub library's cuInit succeeded");
  } catch (const fx::DeviceError& e) {
    CHECK_MESSAGE(contains(e.what(), "cuInit: CUDA_ERROR_STUB_LIBRARY (34)"), e.what());
    CHECK_MESSAGE(contains(e.what(), "stub libcuda.so"), e.what());
  }
}

TEST_CASE("cuda driver: error messages carry the call, the error's name and the driver's text") {
  CHECK(cuda::driver_error_message("cuMemAlloc", 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory") ==
        "DeviceError: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory");
  // A driver that does not name the code: the common ones are known, the rest say their number.
  CHECK(cuda::driver_error_message("cuInit", 100, nullptr, nullptr) == "DeviceError: cuInit: CUDA_ERROR_NO_DEVICE (100)");
  CHECK(cuda::driver_error_message("cuLaunchKernel", 12345, nullptr, nullptr) ==
        "DeviceError: cuLaunchKernel: CUDA error (12345)");
}

TEST_CASE("cuda devices: without a GPU none is listed and device_put to cuda:0 is a DeviceError naming it" *
          doctest::skip(cuda::device_count() > 0)) {
  CHECK(fx::devices("cuda").empty());
  for (const fx::Device& d : fx::devices()) CHECK(d.platform == fx::Platform::cpu);
  const fx::Device gpu{fx::Platform::cuda, 0};
  try {
    fx::Array x = fx::device_put(fx::ones({3}), gpu);
    FAIL("device_put to a GPU that is not there succeeded");
  } catch (const fx::DeviceError& e) {
    CHECK_MESSAGE(contains(e.what(), "device_put"), e.what());
    CHECK_MESSAGE(contains(e.what(), "cuda:0 is not a device"), e.what());
    CHECK_MESSAGE(contains(e.what(), "test_gpu_runtime.cpp"), e.what());  // the user's line
  }
  CHECK_THROWS_AS([&] { fx::default_device_scope scope(gpu); }(), fx::DeviceError);
}

TEST_CASE("cuda allocator: steady state reuses blocks; size classes; out of memory trims the cache") {
  int live = 0, allocations = 0, frees = 0;
  uint64_t next = 0x1000;
  int limit = 1 << 30;  // blocks the fake device holds at most
  cuda::CachingAllocator a(
      [&](size_t bytes) -> uint64_t {
        if (live >= limit) throw fx::DeviceError("DeviceError: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2)");
        ++live, ++allocations;
        const uint64_t p = next;
        next += bytes;
        return p;
      },
      [&](uint64_t) { --live, ++frees; });
  CHECK(cuda::CachingAllocator::size_class(1) == 512);
  CHECK(cuda::CachingAllocator::size_class(513) == 1024);
  CHECK(cuda::CachingAllocator::size_class((1 << 20) + 1) == size_t(2) << 20);
  // A jitted call's pattern: the same temporaries every call. Only the first call allocates.
  for (int call = 0; call < 10; ++call) {
    const uint64_t t1 = a.allocate(4000), t2 = a.allocate(3 << 20);
    a.release(t1);
    a.release(t2);
  }
  CHECK(a.backend_allocations() == 2);
  CHECK(a.live_blocks() == 0);
  CHECK(a.cached_bytes() == 4096 + (size_t(4) << 20));
  // Same class, same block: a 3900-byte request gets the 4096-byte block back.
  const uint64_t again = a.allocate(3900);
  CHECK(a.backend_allocations() == 2);
  // Out of memory with blocks cached: they go back to the device and the request succeeds.
  limit = live;
  const uint64_t big = a.allocate(100 << 20);
  CHECK(frees == 1);  // the cached 4 MiB block
  CHECK(a.backend_allocations() == 3);
  a.release(big);
  a.release(again);
  CHECK_THROWS_AS(a.release(again), fx::DeviceError);  // given back twice
}

TEST_CASE("gpu launch: parameters are packed in the launch's order, from buffers and temporaries") {
  GpuLaunch l;
  l.kernel = "kernel_kernel";
  // The order MLIR's outlining chose (first use in the body), not the argument order.
  l.params = {{GpuParam::Kind::buffer, 3}, {GpuParam::Kind::temporary, 0}, {GpuParam::Kind::buffer, 0}};
  const std::vector<uint64_t> buffers = {0xA0, 0xA1, 0xA2, 0xA3}, temps = {0xB0};
  std::vector<uint64_t> slots;
  std::vector<void*> p = fx::runtime::pack_params(l, buffers, temps, slots);
  REQUIRE(p.size() == 4);
  CHECK(*static_cast<uint64_t*>(p[0]) == 0xA3);
  CHECK(*static_cast<uint64_t*>(p[1]) == 0xB0);
  CHECK(*static_cast<uint64_t*>(p[2]) == 0xA0);
  CHECK(p[3] == nullptr);  // the end of the list, which the emulated GPU counts up to
  l.params.push_back({GpuParam::Kind::temporary, 1});
  try {
    fx::runtime::pack_params(l, buffers, temps, slots);
    FAIL("an out-of-range temporary was packed");
  } catch (const fx::DeviceError& e) {
    CHECK_MESSAGE(contains(e.what(), "kernel_kernel parameter 3 is temporary 1"), e.what());
  }
}
