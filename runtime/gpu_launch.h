// The raw launch path of a GpuProgram (runtime/gpu_program.h) on a GPU: load its PTX modules, then
// queue its launches from device addresses -- pack_params and cuLaunchKernel per launch, nothing
// else. GpuExecutable runs every GPU program through it, and tools/gpu_runner (the GPU check's
// runner, which needs only the CUDA driver) links it with the driver wrapper and the allocator and
// nothing else of the library: what the runner times on a GPU is this path.
//
// A plan's library steps (dot_general as cuBLAS: runtime/gpu_library.h) are made by the `library`
// callback: libfluxion passes run_library_call; the runner, which carries no cuBLAS yet, passes
// none, and a plan with a library step is then a DeviceError naming the call.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/gpu_program.h"

namespace fluxion::runtime {

/// Makes a library step: its function's name and its argument array (device addresses in place).
using GpuLibraryCall = void (*)(cuda::Gpu&, const std::string& function, std::span<int64_t> args);

/// A program's modules loaded on one GPU, and one function per launch (in launch order; none for a
/// library step).
struct LoadedGpuProgram {
  std::vector<cuda::Handle> modules, functions;
};

/// Loads every PTX module of `p` on `gpu` and finds each launch's kernel. DeviceError (with the PTX
/// JIT's log) when the driver rejects a module, and when a launch names a module that is not there.
LoadedGpuProgram load_gpu_program(cuda::Gpu& gpu, const GpuProgram& p);

/// Queues every launch of `p` on `gpu`'s stream without waiting: `functions` from load_gpu_program,
/// `buffers` the device addresses of the kernel ABI's buffers (invars, constvars, outputs),
/// `temporaries` one device block per GpuProgram::temporary_bytes. DeviceError when a count differs.
void launch_gpu_program(cuda::Gpu& gpu, const GpuProgram& p, std::span<const cuda::Handle> functions,
                        std::span<const cuda::DevicePtr> buffers, std::span<const cuda::DevicePtr> temporaries,
                        GpuLibraryCall library = nullptr);

/// The same with the temporaries taken from `gpu`'s caching allocator and given back right after
/// the last launch is queued (stream order keeps them until the launches ran): a cached jit call.
void launch_gpu_program(cuda::Gpu& gpu, const GpuProgram& p, std::span<const cuda::Handle> functions,
                        std::span<const cuda::DevicePtr> buffers, GpuLibraryCall library = nullptr);

}  // namespace fluxion::runtime
