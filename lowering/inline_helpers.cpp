// fx-inline-helpers: inlines every call to a private function of the module -- the library-call
// wrappers (lower_library.cpp) and the helper that buffer deallocation adds, which the bare-pointer
// ABI cannot lower -- but not the calls to the parts of a kernel (lower_parts.cpp): MLIR's
// `inline` would fold them back into one function, the size the parts exist to avoid.
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/IR/SymbolTable.h>
#include <mlir/Pass/Pass.h>
#include <mlir/Transforms/InliningUtils.h>

#include "lowering/lower.h"
#include "lowering/passes.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

struct InlineHelpersPass : public PassWrapper<InlineHelpersPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(InlineHelpersPass)
  StringRef getArgument() const final { return "fx-inline-helpers"; }
  StringRef getDescription() const final { return "inline the calls to private helpers, not to kernel parts"; }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    InlinerInterface inliner(&getContext());
    // An inlined helper may call another: repeat until no call is left to inline.
    for (bool again = true; again;) {
      again = false;
      SmallVector<std::pair<func::CallOp, func::FuncOp>> calls;
      module.walk([&](func::CallOp call) {
        auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
        if (callee && callee.isPrivate() && !callee.isExternal() && !callee->hasAttr(kPartAttr))
          calls.emplace_back(call, callee);
      });
      for (auto [call, callee] : calls) {
        if (failed(inlineCall(inliner, call, callee, &callee.getBody()))) {
          call.emitError("fx-inline-helpers: cannot inline the call to ") << callee.getName();
          return signalPassFailure();
        }
        call.erase();
        again = true;
      }
    }
  }
};

}  // namespace

void register_inline_helpers_pass() { PassRegistration<InlineHelpersPass>(); }

}  // namespace fluxion::lowering
