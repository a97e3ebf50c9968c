// The library calls of a GPU launch plan (runtime/gpu_program.h, GpuLaunch::Kind::library): on a GPU,
// dot_general as cuBLAS's strided batched GEMM, loaded with dlopen (libcublas.so.13, then .12) as
// the driver is, so that one build runs with and without it; on the emulated GPU
// (FLUXION_CUDA_DRIVER=emulate), whose device memory is host memory, the CPU's own GEMM on the same
// buffers -- so the op table checks the plan and its layouts in CI; cuBLAS itself waits for a GPU.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "runtime/cublas.h"
#include "runtime/cuda_driver.h"

namespace fluxion::runtime {

/// Queues library call `function` on gpu's stream with its argument array (device addresses in
/// place): runtime/cublas.h's cublas_library_call on a GPU, the CPU's GEMM on the emulated one.
/// Throws DeviceError naming the call when it is unknown, cuBLAS cannot be loaded, or refuses.
void run_library_call(cuda::Gpu& gpu, const std::string& function, std::span<int64_t> args);

}  // namespace fluxion::runtime
