#include "runtime/gpu_library.h"

#include "ir/error.h"
#include "kernels/library_calls.h"

namespace fluxion::runtime {

void run_library_call(cuda::Gpu& gpu, const std::string& function, std::span<int64_t> args) {
  if (!cuda::emulating()) return cublas_library_call(gpu, function, args);
  if (function != "fluxion_rt_gemm")
    throw DeviceError("DeviceError: a GPU launch plan calls " + function + ", which no GPU library provides");
  // The emulated GPU's memory is host memory and its launches finish before they return: the
  // CPU's GEMM (one thread) computes what cuBLAS would, in the plan's order.
  cublas_gemm_of(args);  // the same refusals as on a GPU
  args[8] = 1;
  fluxion_rt_gemm(args.data());
}

}  // namespace fluxion::runtime
