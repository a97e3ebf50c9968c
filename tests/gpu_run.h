// Running a program compiled by compile_cuda on a GPU (or the emulated one) from the tests: the
// runtime's raw entry -- a Gpu and device addresses in, launches queued (runtime/gpu_executable.h).
#pragma once
#include <fluxion.h>

#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/gpu_program.h"

namespace gpu_test {

/// Copies `args` and the program's constants to `gpu`, fills the outputs with 0xFF bytes (so an
/// element no kernel writes shows), runs `compiled`, waits, and copies the outputs back. The
/// device buffers go back to the allocator also when something throws.
std::vector<fluxion::Array> run(fluxion::runtime::cuda::Gpu& gpu, const fluxion::runtime::GpuProgram& compiled,
                                const fluxion::Program& p, const std::vector<fluxion::Array>& args);

}  // namespace gpu_test
