// fluxion_gpu_runner's host code for the kernels: none. On a GPU the driver runs the PTX; under the
// emulated GPU this build has no compiler, so a module load fails (CUDA_ERROR_NOT_SUPPORTED) and
// fluxion_gpu_runner_emulated is the build to use (gpu_runner.h).
#include "runtime/cublas.h"
#include "tools/gpu_runner.h"

namespace fluxion::gpu_runner {

std::shared_ptr<const void> prepare_host_code(const Case&) { return nullptr; }

runtime::GpuLibraryCall library_call() { return &runtime::cublas_library_call; }

}  // namespace fluxion::gpu_runner
