// The last stages of every kernel pipeline that runs through LLVM on the host: math approximated,
// vectors and loops lowered, then everything to the LLVM dialect. The CPU pipeline
// (pipeline_cpu.cpp) and the emulated GPU (gpu_emulation.cpp) share them, so a kernel the emulator
// runs is lowered the way a CPU kernel is, and a fix to one is a fix to both.
#pragma once

#include <string>

namespace fluxion::lowering {

struct ToLlvmOptions {
  /// Vector reductions may reassociate (the CPU's tree reductions); the emulator keeps them in
  /// order, as a GPU thread's loop adds.
  bool reassociate_reductions = false;
  /// Linalg ops left after bufferization become loops (the CPU pipeline keeps some to here).
  bool linalg_to_loops = false;
  /// complex.* ops to the LLVM dialect (only the CPU pipeline has complex kernels).
  bool complex = false;
  /// omp.* (the CPU pipeline's threads) to the LLVM dialect.
  bool openmp = false;
};

/// The pass list (mlir-opt's textual form, ending without a comma).
std::string to_llvm_passes(const ToLlvmOptions& options);

}  // namespace fluxion::lowering
