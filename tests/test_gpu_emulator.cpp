// The emulated GPU itself (FLUXION_CUDA_DRIVER=emulate; runtime/cuda_emulator.h): its memory and
// copies, each launch a GPU refuses, the faults it makes sticky and the reset after them, and
// hand-written kernels whose answer depends on barriers, shared memory and shuffles being emulated
// faithfully. The tests need the emulated driver in the process, so they run in the meson test
// gpu_emulated (tests/meson.build) and are skipped elsewhere.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "lowering/compile_cuda.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_driver_api.h"
#include "runtime/cuda_emulator.h"
#include "test_helpers.h"

namespace fx = fluxion;
namespace cuda = fluxion::runtime::cuda;

namespace {

bool emulated() { return !fx::lowering::cuda_toolkit_path().empty() && cuda::emulating(); }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Clears a sticky error when a test ends, passed or not: the next test starts on a working GPU.
struct ResetAfter {
  ~ResetAfter() { cuda::emulator::reset(); }
};

// Hand-written kernels, one gpu.module each, compiled to PTX and host code once.
const char* kKernels = R"mlir(
module attributes {gpu.container_module} {
  // out[i] = i for the thread's global index i.
  gpu.module @fill {
    gpu.func @fill(%out: memref<256xf32>) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %n = gpu.block_dim x
      %bn = arith.muli %b, %n : index
      %i = arith.addi %bn, %t : index
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      memref.store %f, %out[%i] : memref<256xf32>
      gpu.return
    }
  }
  // One block per row: a tree sum through shared memory, a barrier after every step.
  gpu.module @block_sum {
    gpu.func @block_sum(%in: memref<4x256xf32>, %out: memref<4xf32>)
        workgroup(%buf: memref<256xf32, #gpu.address_space<workgroup>>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c128 = arith.constant 128 : index
      %t = gpu.thread_id x
      %row = gpu.block_id x
      %v = memref.load %in[%row, %t] : memref<4x256xf32>
      memref.store %v, %buf[%t] : memref<256xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      scf.for %k = %c0 to %c8 step %c1 {
        %s = arith.shrui %c128, %k : index
        %active = arith.cmpi ult, %t, %s : index
        scf.if %active {
          %j = arith.addi %t, %s : index
          %a = memref.load %buf[%t] : memref<256xf32, #gpu.address_space<workgroup>>
          %b = memref.load %buf[%j] : memref<256xf32, #gpu.address_space<workgroup>>
          %sum = arith.addf %a, %b : f32
          memref.store %sum, %buf[%t] : memref<256xf32, #gpu.address_space<workgroup>>
        }
        gpu.barrier
      }
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        %r = memref.load %buf[%c0] : memref<256xf32, #gpu.address_space<workgroup>>
        memref.store %r, %out[%row] : memref<4xf32>
      }
      gpu.return
    }
  }
  // One block of 100 threads per row (three warps and a partial one): gpu.all_reduce, which MLIR
  // lowers to shuffles, a shared buffer and a barrier.
  gpu.module @row_max {
    gpu.func @row_max(%in: memref<4x100xf32>, %out: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %t = gpu.thread_id x
      %row = gpu.block_id x
      %v = memref.load %in[%row, %t] : memref<4x100xf32>
      %m = gpu.all_reduce maximumf %v uniform {} : (f32) -> (f32)
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        memref.store %m, %out[%row] : memref<4xf32>
      }
      gpu.return
    }
  }
  // Each mode of gpu.shuffle on lane + 100, and whether its source lane was valid.
  gpu.module @shuffles {
    gpu.func @shuffles(%out: memref<4x32xi32>, %valid: memref<4x32xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %one = arith.constant 1 : i32
      %three = arith.constant 3 : i32
      %width = arith.constant 32 : i32
      %hundred = arith.constant 100 : i32
      %t = gpu.thread_id x
      %ti = arith.index_cast %t : index to i32
      %v = arith.addi %ti, %hundred : i32
      %x, %xv = gpu.shuffle xor %v, %one, %width : i32
      %d, %dv = gpu.shuffle down %v, %one, %width : i32
      %u, %uv = gpu.shuffle up %v, %one, %width : i32
      %i, %iv = gpu.shuffle idx %v, %three, %width : i32
      memref.store %x, %out[%c0, %t] : memref<4x32xi32>
      memref.store %d, %out[%c1, %t] : memref<4x32xi32>
      memref.store %u, %out[%c2, %t] : memref<4x32xi32>
      memref.store %i, %out[%c3, %t] : memref<4x32xi32>
      %xw = arith.extui %xv : i1 to i32
      %dw = arith.extui %dv : i1 to i32
      %uw = arith.extui %uv : i1 to i32
      %iw = arith.extui %iv : i1 to i32
      memref.store %xw, %valid[%c0, %t] : memref<4x32xi32>
      memref.store %dw, %valid[%c1, %t] : memref<4x32xi32>
      memref.store %uw, %valid[%c2, %t] : memref<4x32xi32>
      memref.store %iw, %valid[%c3, %t] : memref<4x32xi32>
      gpu.return
    }
  }
  // Half of warp 0 waits at a barrier, the other half at a shuffle: they can never meet.
  gpu.module @diverge {
    gpu.func @diverge(%out: memref<64xi32>) kernel {
      %c16 = arith.constant 16 : index
      %one = arith.constant 1 : i32
      %width = arith.constant 32 : i32
      %t = gpu.thread_id x
      %low = arith.cmpi ult, %t, %c16 : index
      scf.if %low {
        gpu.barrier
      } else {
        %ti = arith.index_cast %t : index to i32
        %r, %ok = gpu.shuffle xor %ti, %one, %width : i32
        memref.store %r, %out[%t] : memref<64xi32>
      }
      gpu.return
    }
  }
  // 64 KiB of static shared memory: over the 48 KiB a block may have.
  gpu.module @big_shared {
    gpu.func @big_shared(%in: memref<16384xf32>, %out: memref<16384xf32>)
        workgroup(%buf: memref<16384xf32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %in[%t] : memref<16384xf32>
      memref.store %v, %buf[%t] : memref<16384xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %w = memref.load %buf[%t] : memref<16384xf32, #gpu.address_space<workgroup>>
      memref.store %w, %out[%t] : memref<16384xf32>
      gpu.return
    }
  }
}
)mlir";

const fx::runtime::GpuProgram& kernels() {
  static const fx::runtime::GpuProgram p = fx::lowering::compile_cuda_kernels(kKernels);
  return p;
}

// The function `name` of kernels(), loaded on cuda:0.
cuda::Handle kernel(const std::string& name) {
  for (const fx::runtime::GpuModule& m : kernels().modules)
    if (m.name == name) return cuda::Gpu::get(0).function(cuda::Gpu::get(0).load_module(m.ptx), name);
  FAIL("no kernel " << name);
  return nullptr;
}

// A device buffer of `n` values of T, from `values` (or left as allocated).
template <class T>
struct DeviceArray {
  cuda::Gpu& gpu = cuda::Gpu::get(0);
  size_t n;
  cuda::DevicePtr ptr;
  explicit DeviceArray(size_t count, const std::vector<T>& values = {}) : n(count), ptr(gpu.allocate(count * sizeof(T))) {
    if (!values.empty()) gpu.copy_to_device(ptr, values.data(), n * sizeof(T));
  }
  ~DeviceArray() { gpu.release(ptr); }
  std::vector<T> read() {
    std::vector<T> out(n);
    gpu.copy_to_host(out.data(), ptr, n * sizeof(T));
    return out;
  }
};

// Launches `fn` with `args` (device addresses), null-terminated as Gpu::launch takes them.
void launch(cuda::Handle fn, std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block, std::vector<uint64_t> args,
            uint32_t shared = 0) {
  std::vector<void*> params;
  for (uint64_t& a : args) params.push_back(&a);
  params.push_back(nullptr);
  cuda::Gpu::get(0).launch(fn, grid.data(), block.data(), shared, params.data());
}


}  // namespace

TEST_CASE("gpu emulator: one device; memory is checked on every copy and free" * doctest::skip(!emulated())) {
  CHECK(cuda::device_count() == 1);
  CHECK(cuda::device_name(0) == "Fluxion emulated GPU (sm_90 limits)");
  CHECK(fx::devices("cuda").size() == 1);
  const size_t before = cuda::emulator::live_allocations();
  {
    DeviceArray<float> a(1000, std::vector<float>(1000, 2.5f));
    CHECK(a.read() == std::vector<float>(1000, 2.5f));
    std::vector<float> host(2000);
    const std::string e = test_helpers::error_of<fx::DeviceError>([&] { a.gpu.copy_to_host(host.data(), a.ptr, host.size() * sizeof(float)); });
    CHECK_MESSAGE(contains(e, "cuMemcpyDtoHAsync: CUDA_ERROR_INVALID_VALUE (1): invalid argument"), e);
    CHECK_MESSAGE(contains(e, "the emulated GPU: cuMemcpyDtoHAsync of 8000 bytes"), e);
    CHECK_MESSAGE(contains(e, "bytes short of the 8000 needed"), e);
    CHECK(cuda::emulator::sticky_error() == 0);  // a refused copy is not a fault
  }
  CHECK(cuda::emulator::live_allocations() >= before);  // the caching allocator keeps the block
  const std::string e = test_helpers::error_of<fx::DeviceError>([] { cuda::Gpu::get(1); });
  CHECK_MESSAGE(contains(e, "cuda:1 is not a device; the driver sees 1 GPU(s)"), e);
}

TEST_CASE("gpu emulator: launches over a GPU's limits are refused with CUDA_ERROR_INVALID_VALUE, not sticky" *
          doctest::skip(!emulated())) {
  ResetAfter reset;
  cuda::Handle fill = kernel("fill");
  DeviceArray<float> out(256);
  const std::vector<std::pair<std::array<uint32_t, 6>, std::string>> refused = {
      {{1, 1, 1, 1, 1, 65}, "block (1, 1, 65): z = 65 is outside 1..64"},
      {{1, 1, 1, 1025, 1, 1}, "x = 1025 is outside 1..1024"},
      {{1, 1, 1, 64, 4, 8}, "block (64, 4, 8) has 2048 threads, over the limit of 1024"},
      {{1, 65536, 1, 1, 1, 1}, "grid (1, 65536, 1): y = 65536 is outside 1..65535"},
      {{1, 1, 65536, 1, 1, 1}, "z = 65536 is outside 1..65535"},
      {{0, 1, 1, 1, 1, 1}, "x = 0 is outside"},
  };
  for (const auto& [dims, why] : refused) {
    CAPTURE(why);
    const std::string e = test_helpers::error_of<fx::DeviceError>([&] { launch(fill, {dims[0], dims[1], dims[2]}, {dims[3], dims[4], dims[5]}, {out.ptr}); });
    CHECK_MESSAGE(contains(e, "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE (1)"), e);
    CHECK_MESSAGE(contains(e, "the emulated GPU: kernel fill: "), e);
    CHECK_MESSAGE(contains(e, why), e);
  }
  // The pipeline's kernels carry .maxntid (their known block size): a bigger block is refused.
  const fx::Program p = fx::make_ir([](const fx::Array& a) { return fx::exp(a); })(fx::ones({1000}));
  const fx::runtime::GpuProgram g = fx::lowering::compile_cuda(p, {});
  REQUIRE(g.launches.size() == 1);
  cuda::Handle exp = out.gpu.function(out.gpu.load_module(g.modules[0].ptx), g.launches[0].kernel);
  DeviceArray<float> x(1000), y(1000);
  const std::string ntid = test_helpers::error_of<fx::DeviceError>([&] { launch(exp, {2, 1, 1}, {512, 1, 1}, {x.ptr, y.ptr}); });
  CHECK_MESSAGE(contains(ntid, "block (512, 1, 1) has more threads than the entry's .maxntid (256, 1, 1)"), ntid);
  // Shared memory: 64 KiB of static memory never fits; dynamic memory past 48 KiB only opted in.
  DeviceArray<float> large(16384);
  const std::string big = test_helpers::error_of<fx::DeviceError>([&] { launch(kernel("big_shared"), {1, 1, 1}, {32, 1, 1}, {large.ptr, large.ptr}); });
  CHECK_MESSAGE(contains(big, "65536 bytes of static and 0 of dynamic shared memory exceed the block's 49152"), big);
  const std::string dyn = test_helpers::error_of<fx::DeviceError>([&] { launch(fill, {1, 1, 1}, {256, 1, 1}, {out.ptr}, 64 << 10); });
  CHECK_MESSAGE(contains(dyn, "0 bytes of static and 65536 of dynamic shared memory exceed the block's 49152"), dyn);
  cuda::Gpu::get(0).set_max_dynamic_shared_bytes(fill, 100 << 10);
  launch(fill, {1, 1, 1}, {256, 1, 1}, {out.ptr}, 64 << 10);
  const std::string over = test_helpers::error_of<fx::DeviceError>([&] { launch(fill, {1, 1, 1}, {256, 1, 1}, {out.ptr}, 101 << 10); });
  CHECK_MESSAGE(contains(over, "exceed the block's 102400 (what the kernel opted in to)"), over);
  const std::string attr = test_helpers::error_of<fx::DeviceError>([&] { cuda::Gpu::get(0).set_max_dynamic_shared_bytes(fill, 228 << 10); });
  CHECK_MESSAGE(contains(attr, "cuFuncSetAttribute: CUDA_ERROR_INVALID_VALUE"), attr);
  // None of that was a fault: the same kernel runs right after.
  CHECK(cuda::emulator::sticky_error() == 0);
  launch(fill, {1, 1, 1}, {256, 1, 1}, {out.ptr});
  std::vector<float> iota(256);
  std::iota(iota.begin(), iota.end(), 0.f);
  CHECK(out.read() == iota);
}

TEST_CASE("gpu emulator: a launch whose parameter count is not the PTX entry's is refused" * doctest::skip(!emulated())) {
  ResetAfter reset;
  cuda::Handle sum = kernel("block_sum");
  DeviceArray<float> in(4 * 256), out(4);
  const std::string fewer = test_helpers::error_of<fx::DeviceError>([&] { launch(sum, {4, 1, 1}, {256, 1, 1}, {in.ptr}); });
  CHECK_MESSAGE(contains(fewer, "CUDA_ERROR_INVALID_VALUE"), fewer);
  CHECK_MESSAGE(contains(fewer, "kernel block_sum takes 2 parameters (its PTX .entry lists them), the launch passed 1"), fewer);
  const std::string more = test_helpers::error_of<fx::DeviceError>([&] { launch(sum, {4, 1, 1}, {256, 1, 1}, {in.ptr, out.ptr, out.ptr}); });
  CHECK_MESSAGE(contains(more, "takes 2 parameters (its PTX .entry lists them), the launch passed 3"), more);
  CHECK(cuda::emulator::sticky_error() == 0);
}

TEST_CASE("gpu emulator: an out-of-bounds store is CUDA_ERROR_ILLEGAL_ADDRESS, sticky until reset" *
          doctest::skip(!emulated())) {
  ResetAfter reset;
  cuda::Handle fill = kernel("fill");
  DeviceArray<float> out(256);
  // Two blocks of 256 threads store to a memref<256xf32>: the second block stores past its end.
  const std::string e = test_helpers::error_of<fx::DeviceError>([&] { launch(fill, {2, 1, 1}, {256, 1, 1}, {out.ptr}); });
  CHECK_MESSAGE(contains(e, "cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered"), e);
  CHECK_MESSAGE(contains(e, "kernel fill, block (1, 0, 0), thread (0, 0, 0): store to parameter 0 (memref<256xf32>) at "
                            "index 256 of dimension 0, whose size is 256 (and 255 more)"),
                e);
  CHECK(cuda::emulator::sticky_error() == 700);
  // Sticky, as on a GPU: every later call fails with the same error and detail.
  const std::string sync = test_helpers::error_of<fx::DeviceError>([] { cuda::Gpu::get(0).synchronize(); });
  CHECK_MESSAGE(contains(sync, "cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS"), sync);
  CHECK_MESSAGE(contains(sync, "index 256 of dimension 0"), sync);
  CHECK(contains(test_helpers::error_of<fx::DeviceError>([&] { out.read(); }), "CUDA_ERROR_ILLEGAL_ADDRESS"));
  cuda::emulator::reset();
  CHECK(cuda::emulator::sticky_error() == 0);
  launch(fill, {1, 1, 1}, {256, 1, 1}, {out.ptr});
  CHECK(out.read()[255] == 255.f);
}

TEST_CASE("gpu emulator: a pointer parameter outside a live allocation large enough for its memref is an illegal address" *
          doctest::skip(!emulated())) {
  ResetAfter reset;
  cuda::Handle fill = kernel("fill");
  DeviceArray<float> small(100);  // the kernel's memref<256xf32> needs 1024 bytes
  const std::string e = test_helpers::error_of<fx::DeviceError>([&] { launch(fill, {1, 1, 1}, {100, 1, 1}, {small.ptr}); });
  CHECK_MESSAGE(contains(e, "CUDA_ERROR_ILLEGAL_ADDRESS"), e);
  CHECK_MESSAGE(contains(e, "kernel fill parameter 0 (memref<256xf32>, 1024 bytes): "), e);
  CHECK_MESSAGE(contains(e, "is 0 bytes into an allocation of"), e);
  cuda::emulator::reset();
  const std::string host = test_helpers::error_of<fx::DeviceError>([&] {
    std::vector<float> h(256);
    launch(fill, {1, 1, 1}, {256, 1, 1}, {reinterpret_cast<uint64_t>(h.data())});
  });
  CHECK_MESSAGE(contains(host, "lies in no live device allocation"), host);
}

TEST_CASE("gpu emulator: barriers and shared memory -- a block's tree sum" * doctest::skip(!emulated())) {
  DeviceArray<float> out(4);
  std::vector<float> values(4 * 256);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(int(i * 7919 % 1000) - 500);  // exact sums in f32
  DeviceArray<float> in(values.size(), values);
  launch(kernel("block_sum"), {4, 1, 1}, {256, 1, 1}, {in.ptr, out.ptr});
  const std::vector<float> got = out.read();
  for (size_t r = 0; r < 4; ++r) {
    CAPTURE(r);
    CHECK(got[r] == std::accumulate(values.begin() + long(r * 256), values.begin() + long(r * 256 + 256), 0.f));
  }
}

TEST_CASE("gpu emulator: gpu.all_reduce over a block of three warps and a partial one" * doctest::skip(!emulated())) {
  DeviceArray<float> out(4);
  std::vector<float> values(4 * 100);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(int(i * 37 % 101) - 50);
  DeviceArray<float> in(values.size(), values);
  launch(kernel("row_max"), {4, 1, 1}, {100, 1, 1}, {in.ptr, out.ptr});
  const std::vector<float> got = out.read();
  for (size_t r = 0; r < 4; ++r)
    CHECK(got[r] == *std::max_element(values.begin() + long(r * 100), values.begin() + long(r * 100 + 100)));
}

TEST_CASE("gpu emulator: gpu.shuffle in each mode picks the lanes PTX's shfl.sync picks" * doctest::skip(!emulated())) {
  DeviceArray<int32_t> out(4 * 32), valid(4 * 32);
  launch(kernel("shuffles"), {1, 1, 1}, {32, 1, 1}, {out.ptr, valid.ptr});
  const std::vector<int32_t> got = out.read(), ok = valid.read();
  for (int lane = 0; lane < 32; ++lane) {
    CAPTURE(lane);
    CHECK(got[size_t(lane)] == 100 + (lane ^ 1));  // xor 1
    CHECK(ok[size_t(lane)] == 1);
    CHECK(got[size_t(32 + lane)] == 100 + (lane < 31 ? lane + 1 : lane));  // down 1: lane 31 keeps its own
    CHECK(ok[size_t(32 + lane)] == (lane < 31));
    CHECK(got[size_t(64 + lane)] == 100 + (lane > 0 ? lane - 1 : lane));  // up 1: lane 0 keeps its own
    CHECK(ok[size_t(64 + lane)] == (lane > 0));
    CHECK(got[size_t(96 + lane)] == 103);  // idx 3
    CHECK(ok[size_t(96 + lane)] == 1);
  }
}

TEST_CASE("gpu emulator: threads that cannot all meet fail the launch (CUDA_ERROR_LAUNCH_FAILED)" *
          doctest::skip(!emulated())) {
  ResetAfter reset;
  DeviceArray<int32_t> out(64);
  const std::string e = test_helpers::error_of<fx::DeviceError>([&] { launch(kernel("diverge"), {1, 1, 1}, {64, 1, 1}, {out.ptr}); });
  CHECK_MESSAGE(contains(e, "CUDA_ERROR_LAUNCH_FAILED (719)"), e);
  CHECK_MESSAGE(contains(e, "kernel diverge, block (0, 0, 0): the threads of a block cannot all meet: 16 wait at a barrier, "
                            "16 at a shuffle, 32 have returned"),
                e);
  CHECK(cuda::emulator::sticky_error() == 719);
}

TEST_CASE("gpu emulator: a module without host code is not loaded" * doctest::skip(!emulated())) {
  const std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n";
  const std::string e = test_helpers::error_of<fx::DeviceError>([&] { cuda::Gpu::get(0).load_module(ptx); });
  CHECK_MESSAGE(contains(e, "cuModuleLoadDataEx: CUDA_ERROR_NOT_SUPPORTED (801)"), e);
  CHECK_MESSAGE(contains(e, "the PTX JIT said: the emulated GPU runs only PTX that compile_cuda made in this process"), e);
}

// What the GPU check's runner (tools/gpu_runner) calls beyond the library: each does what the driver
// does, and refuses what the driver refuses, with its codes.
TEST_CASE("gpu emulator: fills, device-to-device copies, events and module unloads, as the GPU check's runner uses them" *
          doctest::skip(!emulated())) {
  ResetAfter reset;
  const auto& api = cuda::driver()->api();
  cuda::Gpu& gpu = cuda::Gpu::get(0);
  int version = 0;
  CHECK(api.cuDriverGetVersion(&version) == 0);
  CHECK(version == 13000);
  DeviceArray<uint32_t> a(1000), b(1000);
  CHECK(api.cuMemsetD8Async(a.ptr, 0xFF, 1000 * 4, gpu.stream()) == 0);
  CHECK(a.read() == std::vector<uint32_t>(1000, 0xFFFFFFFFu));
  CHECK(api.cuMemsetD32Async(a.ptr + 8, 0x3F000000u, 10, gpu.stream()) == 0);  // 0.5f in elements 2..11
  std::vector<uint32_t> want(1000, 0xFFFFFFFFu);
  std::fill(want.begin() + 2, want.begin() + 12, 0x3F000000u);
  CHECK(a.read() == want);
  CHECK(api.cuMemcpyDtoDAsync(b.ptr, a.ptr, 1000 * 4, gpu.stream()) == 0);
  CHECK(b.read() == want);
  // Refused, not sticky: past the allocation's end, a misaligned 32-bit fill, a copy too long.
  CHECK(api.cuMemsetD32Async(a.ptr, 0, 1 << 20, gpu.stream()) == 1);
  CHECK(api.cuMemsetD32Async(a.ptr + 2, 0, 4, gpu.stream()) == 1);
  CHECK(api.cuMemcpyDtoDAsync(b.ptr, a.ptr, size_t(1) << 24, gpu.stream()) == 1);
  CHECK(b.read() == want);
  CHECK(cuda::emulator::sticky_error() == 0);

  cuda::Handle start = nullptr, end = nullptr, never = nullptr;
  REQUIRE(api.cuEventCreate(&start, 0) == 0);
  REQUIRE(api.cuEventCreate(&end, 0) == 0);
  REQUIRE(api.cuEventCreate(&never, 0) == 0);
  CHECK(api.cuEventRecord(start, gpu.stream()) == 0);
  DeviceArray<float> out(256);
  launch(kernel("fill"), {2, 1, 1}, {128, 1, 1}, {out.ptr});
  CHECK(api.cuEventRecord(end, gpu.stream()) == 0);
  CHECK(api.cuEventSynchronize(end) == 0);
  float ms = -1;
  CHECK(api.cuEventElapsedTime(&ms, start, end) == 0);
  CHECK(ms >= 0);
  CHECK(api.cuEventElapsedTime(&ms, start, never) == 400);  // never recorded
  CHECK(api.cuEventDestroy(never) == 0);
  CHECK(api.cuEventDestroy(never) == 400);
  CHECK(api.cuEventDestroy(start) == 0);
  CHECK(api.cuEventDestroy(end) == 0);

  std::string ptx;
  for (const fx::runtime::GpuModule& m : kernels().modules)
    if (m.name == "fill") ptx = m.ptx;
  cuda::Handle module = gpu.load_module(ptx);
  CHECK(gpu.function(module, "fill") != nullptr);
  CHECK(api.cuModuleUnload(module) == 0);
  CHECK(api.cuModuleUnload(module) == 400);
  CHECK(cuda::emulator::sticky_error() == 0);
}

TEST_CASE("cuda gpu: copies from two threads at once each arrive whole (the staging buffer is shared)" *
          doctest::skip(cuda::device_count() == 0)) {
  cuda::Gpu& gpu = cuda::Gpu::get(0);
  constexpr size_t n = 1 << 20;
  auto worker = [&](int id, int& wrong) {
    const std::vector<int32_t> mine(n, id);
    std::vector<int32_t> back(n);
    for (int round = 0; round < 20; ++round) {
      const cuda::DevicePtr p = gpu.allocate(n * sizeof(int32_t));
      gpu.copy_to_device(p, mine.data(), n * sizeof(int32_t));
      gpu.copy_to_host(back.data(), p, n * sizeof(int32_t));
      gpu.release(p);
      wrong += back != mine;
    }
  };
  int wrong_a = 0, wrong_b = 0;
  std::thread a(worker, 1, std::ref(wrong_a)), b(worker, 2, std::ref(wrong_b));
  a.join();
  b.join();
  CHECK(wrong_a == 0);
  CHECK(wrong_b == 0);
}
