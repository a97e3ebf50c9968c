// The MLIR-free face of the CUDA backend (pipeline_cuda.cpp), beside compile.h's CPU one: a Program
// becomes PTX plus the host's launch plan (runtime/gpu_program.h). No MLIR or LLVM type crosses it.
#pragma once
#include <string>

#include "ir/primitive.h"
#include "ir/program.h"
#include "lowering/compile.h"
#include "runtime/gpu_program.h"

namespace fluxion::lowering {

/// The same Program lowered to PTX for gpu_chip() and the host's launch plan. CompileError naming
/// the primitive and the user's line for a primitive the GPU pipeline does not lower (never a CPU
/// fallback), and when the build has no CUDA toolkit (libdevice).
runtime::GpuProgram compile_cuda(const Program& p, const CompileOptions& options);
/// Hand-written kernels (the tests of the GPU runtime and of the emulated GPU): `mlir` is a module
/// of gpu.modules (one gpu.func kernel each), compiled to PTX -- and, under the emulated GPU, to
/// host code -- as compile_cuda compiles its own. The result has modules and no launches.
/// CompileError when MLIR rejects the text.
runtime::GpuProgram compile_cuda_kernels(const std::string& mlir, const CompileOptions& options = {});
/// Whether compile_cuda lowers p (the rest raise CompileError).
bool gpu_lowers_primitive(Prim p);
/// The toolkit gpu-module-to-binary reads libdevice from: $FLUXION_CUDA_HOME, else the one meson
/// found (empty when the build has none).
std::string cuda_toolkit_path();
/// The GPU architecture PTX is generated for: $FLUXION_GPU_ARCH, else sm_90 (H100/H200).
std::string gpu_chip();

}  // namespace fluxion::lowering
