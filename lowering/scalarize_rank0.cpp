// fx-scalarize-rank0: a linalg.generic with no loops (every operand rank 0) becomes the scalar code
// it stands for -- tensor.extract of each input, the body, tensor.from_elements of each result.
//
// Left to the vectorizer, MLIR 19 turns a 0-d generic that reads with tensor.extract (a gather of
// one element: fx::take(t, fx::scalar(1), 0)) into a rank-0 vector.gather and an ill-typed
// multiply, and the LLVM conversion then crashed the process. There is nothing to vectorize in one
// element anyway.
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/Tensor/IR/Tensor.h>
#include <mlir/IR/IRMapping.h>
#include <mlir/Pass/Pass.h>

#include "lowering/passes.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

void scalarize(linalg::GenericOp g) {
  OpBuilder b(g);
  IRMapping map;
  for (OpOperand& operand : g->getOpOperands()) {
    Value v = operand.get();
    Value scalar = isa<RankedTensorType>(v.getType()) ? b.create<tensor::ExtractOp>(g.getLoc(), v, ValueRange{}).getResult() : v;
    map.map(g.getMatchingBlockArgument(&operand), scalar);
  }
  for (Operation& op : g.getBody()->without_terminator()) b.clone(op, map);
  Operation* yield = g.getBody()->getTerminator();
  for (unsigned i = 0; i < g->getNumResults(); ++i) {
    Value out = b.create<tensor::FromElementsOp>(g.getLoc(), g->getResult(i).getType(),
                                                 ValueRange{map.lookupOrDefault(yield->getOperand(i))});
    g->getResult(i).replaceAllUsesWith(out);
  }
  g.erase();
}

struct ScalarizeRank0Pass : public PassWrapper<ScalarizeRank0Pass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ScalarizeRank0Pass)
  StringRef getArgument() const final { return "fx-scalarize-rank0"; }
  StringRef getDescription() const final { return "linalg.generic ops without loops -> scalar code"; }
  void getDependentDialects(DialectRegistry& r) const override { r.insert<tensor::TensorDialect>(); }
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> zero_d;
    getOperation()->walk([&](linalg::GenericOp g) {
      if (g.getNumLoops() == 0 && g.hasPureTensorSemantics()) zero_d.push_back(g);
    });
    for (linalg::GenericOp g : zero_d) scalarize(g);
  }
};

}  // namespace

void register_scalarize_rank0_pass() { PassRegistration<ScalarizeRank0Pass>(); }

}  // namespace fluxion::lowering
