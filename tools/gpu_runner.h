// The GPU check's runner (docs/gpu.md, "The GPU check"): runs a bundle of programs compiled here by
// the GPU pipeline on a machine that has a GPU and its driver and nothing else of ours. Built twice
// from the same sources (tools/meson.build):
//
//   fluxion_gpu_runner           the runtime's GPU pieces linked in statically (the dlopen'd driver
//                                wrapper, the caching allocator, launch plans, the raw launch path:
//                                runtime/gpu_launch.h) and no LLVM, MLIR or libfluxion: this travels
//   fluxion_gpu_runner_emulated  the same runner linked with libfluxion, for the emulated GPU
//                                (FLUXION_CUDA_DRIVER=emulate) in CI: it compiles each program's
//                                pre-NVVM kernels (kernels.mlir in the bundle) to host code and
//                                registers it under the bundle's PTX (host_code_*.cpp)
//
// Modes (main in gpu_runner.cpp):
//   env                          the driver, its version, device 0, glibc
//   check DIR RESULTS SECONDS    every program of DIR (a bundle's check/) in worker processes: inputs
//                                in, outputs and temporaries poisoned (0xFF bytes), a synchronise after
//                                each launch, outputs to RESULTS/<n>/out<i>.bin, "<n> ok" or "<n>
//                                <error>" to RESULTS/status.txt; a fresh worker after an error that
//                                loses the context; within SECONDS
//   bench DIR OUT.json REPS      the benchmark programs of DIR (a bundle's bench/), timed with CUDA
//                                events (median of REPS after warm-up) beside a device-to-device copy,
//                                and the host time of a cached launch; JSON lines to OUT.json
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/gpu_launch.h"
#include "runtime/gpu_program.h"

namespace fluxion::gpu_runner {

namespace cuda = runtime::cuda;

// ---- the bundle (gpu_bundle.cpp reads it; tests/test_gpu_bundle.cpp writes it) ------------------

/// One input buffer: its bytes come from a file of the case, or are a 32-bit pattern filled on the
/// GPU (benchmark inputs, too large to travel).
struct Input {
  size_t bytes = 0;
  std::string file;     // empty: filled with `pattern`
  uint32_t pattern = 0;
};

/// One program of a bundle: DIR/<n>/plan.txt, its PTX modules and input files.
struct Case {
  std::string dir;
  runtime::GpuProgram program;  // modules (name, PTX), launches, temporaries, num_buffers
  std::vector<Input> inputs;    // buffers 0..k-1 of the kernel ABI (the program's invars, then constvars)
  std::vector<size_t> outputs;  // bytes of buffers k.. (the outputs)
};

/// Reads DIR/plan.txt and the PTX it names. std::runtime_error naming the file and line when the
/// plan is not one this runner reads.
Case read_case(const std::string& dir);

/// The lines of a list file (cases.txt), each split at its first space: (first word, the rest).
std::vector<std::pair<std::string, std::string>> read_list(const std::string& path);

// ---- the device (gpu_runner_device.cpp) ----------------------------------------------------------

/// The process's driver, loaded and initialised: DeviceError with the reason when there is none.
const cuda::DriverLibrary& driver();

/// Device blocks from the GPU's caching allocator, given back when this goes.
struct DeviceBuffers {
  cuda::Gpu& gpu;
  std::vector<cuda::DevicePtr> ptrs;
  ~DeviceBuffers();
  cuda::DevicePtr add(size_t bytes);
};

/// Queues a fill of `bytes` bytes at `p` with the 32-bit `pattern` (bytes a multiple of 4).
void fill32(cuda::Gpu& gpu, cuda::DevicePtr p, size_t bytes, uint32_t pattern);
/// Queues 0xFF bytes over [p, p + bytes): NaN in every float type, -1 in every integer one.
void poison(cuda::Gpu& gpu, cuda::DevicePtr p, size_t bytes);
/// Copies or fills an input into its device block (returns when it is there).
void put_input(cuda::Gpu& gpu, cuda::DevicePtr p, const Case& c, const Input& in);

/// The case's modules loaded on the GPU (runtime/gpu_launch.h), unloaded when this goes.
struct Loaded {
  cuda::Gpu& gpu;
  std::vector<cuda::Handle> modules, functions;
  Loaded(cuda::Gpu& gpu, const runtime::GpuProgram& p);
  ~Loaded();
  Loaded(const Loaded&) = delete;
  Loaded& operator=(const Loaded&) = delete;
};

/// Whether the GPU's context is lost (a sticky error: an illegal address, a launch failure): every
/// call then fails, on a GPU until the process ends.
bool context_lost(cuda::Gpu& gpu);

/// Host code for the case's kernels where the driver needs it (the emulated GPU), kept alive by the
/// returned pointer while the case runs; null where it does not (host_code_*.cpp: one per build).
std::shared_ptr<const void> prepare_host_code(const Case& c);

/// What makes a plan's library steps (runtime/gpu_launch.h): cuBLAS on a GPU; on the emulated GPU
/// (fluxion_gpu_runner_emulated) the library's own, which computes with the CPU's GEMM.
runtime::GpuLibraryCall library_call();

// ---- the modes ----------------------------------------------------------------------------------

int run_env();
int run_check(const std::string& dir, const std::string& results, double seconds, const char* self);
int run_worker(const std::string& dir, const std::string& results, size_t first);
int run_bench(const std::string& dir, const std::string& out, int reps);

}  // namespace fluxion::gpu_runner
