// Internal to lowering/: the kernels of the GPU pipeline as host code for the emulated GPU
// (runtime/cuda_emulator.h; docs/gpu.md, "The emulated GPU"). pipeline_cuda.cpp takes a copy of
// each gpu.module after outlining -- the same gpu.func the PTX is made from, before the NVVM
// conversion -- and, under FLUXION_CUDA_DRIVER=emulate, compiles it through the CPU route
// (codegen_cpu.h) into a function of one thread:
//
//   func.func @kernel(<the kernel's parameters>, <one memref per workgroup buffer>,
//                     <thread x y z, block x y z, block dims, grid dims: index>, <context: !llvm.ptr>)
//
// On the way: MLIR's own GPU rewrites (gpu.all_reduce into shuffles, a barrier and a workgroup
// buffer, as the NVVM conversion does it) and the GPU pipeline's math expansions (fx-gpu-math's
// patterns); the ids become arguments; gpu.barrier and gpu.shuffle become calls of the emulator
// (fluxion_emu_barrier, fluxion_emu_shuffle); private attributions become allocas; every
// memref.load, memref.store and memref.atomic_rmw is checked against its memref's shape, an
// access outside it calling fluxion_emu_out_of_bounds instead of touching memory.
#pragma once
#include <mlir/IR/BuiltinOps.h>
#include <mlir/IR/OwningOpRef.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda_emulator.h"

namespace fluxion::lowering {

/// A copy of one gpu.module of a module, in a module of its own.
struct EmulationSource {
  std::string name;  // the gpu.module's symbol
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// Copies of every gpu.module of `m` (call after gpu-kernel-outlining, before the NVVM conversion).
std::vector<EmulationSource> copy_gpu_modules(mlir::ModuleOp m);

/// Compiles one copy to host code and links it into the process. Null on failure, with MLIR's
/// reasons in `diagnostics` (link failures throw CompileError). `dump(suffix, text)` receives the
/// host function before its lowering to LLVM.
std::shared_ptr<const runtime::cuda::emulator::HostModule> compile_for_emulation(
    EmulationSource& source, std::string& diagnostics, const std::function<void(const std::string&, const std::string&)>& dump);

}  // namespace fluxion::lowering
