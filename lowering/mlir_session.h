// The one MLIRContext every compile uses (dialects, translations and Fluxion's passes registered
// once), under a mutex: a compile takes milliseconds, and the kernels it produces run concurrently
// without it. Also the pass managers, each parsed and initialized once per pass list.
#pragma once
#include <mlir/IR/MLIRContext.h>
#include <mlir/Pass/PassManager.h>

#include <mutex>
#include <string>

namespace fluxion::lowering {

struct MlirSession {
  std::mutex mutex;  // held for a whole compile
  mlir::MLIRContext context;
  explicit MlirSession(const mlir::DialectRegistry& registry);
};

/// The process's session (created on first use; never destroyed).
MlirSession& mlir_session();

/// The pass manager for `passes` (a textual pass pipeline), parsed and initialized on first use
/// and reused by every compile (initialization -- each canonicalize collects the patterns of every
/// loaded dialect -- was half of a one-op kernel's pass time when done per compile). It runs
/// without the verifier between passes. Null if the list does not parse (the reason is appended
/// to `diagnostics`). Call with the session's mutex held.
mlir::PassManager* pass_manager(const std::string& passes, std::string& diagnostics);

}  // namespace fluxion::lowering
