#include "lowering/mlir_probe.h"

#include <llvm/Support/raw_ostream.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/IR/Builders.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/IR/MLIRContext.h>

namespace fluxion::lowering {

std::string mlir_probe() {
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::func::FuncDialect>();
  mlir::OpBuilder b(&ctx);
  auto module = mlir::ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module.getBody());
  auto fn = b.create<mlir::func::FuncOp>(b.getUnknownLoc(), "probe", b.getFunctionType({}, {}));
  b.setInsertionPointToEnd(fn.addEntryBlock());
  b.create<mlir::func::ReturnOp>(b.getUnknownLoc());
  std::string s;
  llvm::raw_string_ostream os(s);
  module.print(os);
  module->erase();
  return os.str();
}

}  // namespace fluxion::lowering
