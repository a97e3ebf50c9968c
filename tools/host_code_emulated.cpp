// fluxion_gpu_runner_emulated's host code for the kernels (gpu_runner.h): under the emulated GPU
// (FLUXION_CUDA_DRIVER=emulate) a PTX module runs as host code compiled in this process. The bundle
// carries each program's kernels as the GPU pipeline had them before the NVVM conversion
// (kernels.mlir: its dump of the `map` stage); compile_cuda_kernels compiles them to PTX and host
// code as compile_cuda does, and each gpu.module's host code is registered under the bundle's PTX
// of the module of the same name -- the PTX the runner then loads, as it would on a GPU.
#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "lowering/compile_cuda.h"
#include "runtime/cuda_emulator.h"
#include "runtime/gpu_library.h"
#include "tools/gpu_runner.h"

namespace fluxion::gpu_runner {

std::shared_ptr<const void> prepare_host_code(const Case& c) {
  if (!cuda::emulating()) return nullptr;
  std::ifstream f(c.dir + "/kernels.mlir");
  if (!f) return nullptr;  // the module loads then fail with CUDA_ERROR_NOT_SUPPORTED, naming why
  std::ostringstream text;
  text << f.rdbuf();
  auto compiled = std::make_shared<runtime::GpuProgram>(lowering::compile_cuda_kernels(text.str()));
  for (const runtime::GpuModule& m : c.program.modules) {
    const runtime::GpuModule* same = nullptr;
    for (const runtime::GpuModule& k : compiled->modules)
      if (k.name == m.name) same = &k;
    if (!same || !same->host_code)
      throw CompileError("CompileError: " + c.dir + "/kernels.mlir has no host code for the module " + m.name);
    cuda::emulator::register_module(m.ptx, std::static_pointer_cast<const cuda::emulator::HostModule>(same->host_code));
  }
  return compiled;  // the registry's references are weak: this keeps the code alive
}

runtime::GpuLibraryCall library_call() { return &runtime::run_library_call; }

}  // namespace fluxion::gpu_runner
