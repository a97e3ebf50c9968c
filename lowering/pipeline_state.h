// Internal to lowering/: what every backend's pipeline (pipeline_cpu.cpp, pipeline_cuda.cpp) holds
// while one program moves through its stages -- the MLIR session, held locked for the whole
// compile; the module; the diagnostics MLIR reports, which every CompileError carries; and the
// dumps under CompileOptions::dump_dir.
#pragma once
#include <mlir/IR/BuiltinOps.h>
#include <mlir/IR/Diagnostics.h>
#include <mlir/IR/Verifier.h>
#include <mlir/Pass/PassManager.h>

#include <fstream>
#include <mutex>
#include <string>

#include "ir/error.h"
#include "ir/program.h"
#include "lowering/compile.h"
#include "lowering/mlir_session.h"

namespace fluxion::lowering {

class PipelineState {
 public:
  /// `what` names the pipeline in errors ("jit", "jit for the GPU"); dumps are named
  /// <dump_name>.<dump_infix><stage suffix>.
  PipelineState(const Program& p, const CompileOptions& o, std::string what, std::string dump_infix)
      : program_(p), options_(o), what_(std::move(what)), dump_infix_(std::move(dump_infix)), session_(mlir_session()),
        lock_(session_.mutex), handler_(&session_.context, [this](mlir::Diagnostic& d) {
          llvm::raw_string_ostream os(diagnostics_);
          os << "\n  " << d.getLocation() << ": " << d;
          for (const mlir::Diagnostic& note : d.getNotes()) os << "\n    note: " << note;
          return mlir::success();
        }) {
    dump("program.txt", p.str());
  }

  [[noreturn]] void fail(const std::string& stage) const {
    throw CompileError("CompileError: " + what_ + ": " + stage + " failed for the program\n" + program_.str() +
                       "MLIR said:" + diagnostics_);
  }

  /// Runs a textual pass list on the module and verifies the result; `stage` names it in errors.
  void run(const std::string& passes, const char* stage) {
    mlir::PassManager* pm = pass_manager(passes, diagnostics_);
    if (!pm) fail(std::string("parsing the pass list of ") + stage);
    if (mlir::failed(pm->run(*module_))) fail(stage);
    if (mlir::failed(mlir::verify(*module_))) fail(std::string("verifying the module after ") + stage);
  }

  void dump(const char* suffix, const std::string& text) const {
    if (options_.dump_dir.empty()) return;
    std::ofstream(options_.dump_dir + "/" + options_.dump_name + "." + dump_infix_ + suffix) << text;
  }
  void dump_module(const char* suffix) const {
    if (options_.dump_dir.empty()) return;
    std::string s;
    llvm::raw_string_ostream os(s);
    mlir::ModuleOp m = module_.get();
    m.print(os);
    dump(suffix, s);
  }

 protected:
  const Program& program_;
  const CompileOptions& options_;
  const std::string what_, dump_infix_;
  MlirSession& session_;
  std::lock_guard<std::mutex> lock_;
  std::string diagnostics_;
  mlir::ScopedDiagnosticHandler handler_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
};

}  // namespace fluxion::lowering
