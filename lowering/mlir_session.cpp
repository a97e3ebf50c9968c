#include "lowering/mlir_session.h"

#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <mlir/Pass/PassRegistry.h>
#include <mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h>
#include <mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h>
#include <mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h>
#include <mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h>
#include <mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h>

#include <cstdlib>
#include <map>
#include <memory>

#include "ir/settings.h"
#include "lowering/passes.h"

namespace fluxion::lowering {

void register_all_mlir(mlir::DialectRegistry& registry);  // mlir_registry.cpp

MlirSession::MlirSession(const mlir::DialectRegistry& registry)
    : context(registry, mlir::MLIRContext::Threading::DISABLED) {
  // Only the dialects the lowering emits; passes load what they depend on. Loading all of the
  // registry made every canonicalization pattern set (and each compile) several times larger.
  for (llvm::StringRef d : {"builtin", "func", "arith", "math", "linalg", "tensor", "memref", "scf", "vector", "bufferization", "llvm"})
    context.getOrLoadDialect(d);
}

MlirSession& mlir_session() {
  static MlirSession* s = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    // The GPU pipeline's PTX comes from LLVM's NVPTX back end (pipeline_cuda.cpp).
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    mlir::DialectRegistry registry;
    register_all_mlir(registry);
    mlir::registerBuiltinDialectTranslation(registry);
    mlir::registerLLVMDialectTranslation(registry);
    mlir::registerOpenMPDialectTranslation(registry);
    mlir::registerGPUDialectTranslation(registry);
    mlir::registerNVVMDialectTranslation(registry);
    register_group_elementwise_pass();
    register_fuse_elementwise_pass();
    register_scalarize_rank0_pass();
    register_lower_copies_pass();
    register_inline_helpers_pass();
    register_outline_parallel_pass();
    register_vectorize_complex_pass();
    register_accurate_math_pass();
    register_math_approx_pass();
    register_gpu_passes();
    return new MlirSession(registry);
  }();
  return *s;
}

mlir::PassManager* pass_manager(const std::string& passes, std::string& diagnostics) {
  static std::map<std::string, std::unique_ptr<mlir::PassManager>> managers;
  // FLUXION_PASS_TIMING: a fresh manager per compile, whose timing report goes to stderr when the
  // next compile replaces it.
  static const bool timing = toggle_setting("FLUXION_PASS_TIMING", false);
  std::unique_ptr<mlir::PassManager>& pm = managers[passes];
  if (!pm || timing) {
    auto fresh = std::make_unique<mlir::PassManager>(&mlir_session().context);  // anchored on builtin.module
    if (timing) fresh->enableTiming();
    fresh->enableVerifier(false);
    std::string err;
    llvm::raw_string_ostream es(err);
    if (failed(mlir::parsePassPipeline(passes, *fresh, es))) {
      diagnostics += "\n  " + err;
      managers.erase(passes);
      return nullptr;
    }
    pm = std::move(fresh);
  }
  return pm.get();
}

}  // namespace fluxion::lowering
