// fx-fuse-elementwise: producer -> consumer fusion of linalg.generic ops (MLIR's elementwise fusion
// patterns, elementwise producers fused into reductions too), with one rule of ours (below).
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/Linalg/Transforms/Transforms.h>
#include <mlir/Dialect/Tensor/IR/Tensor.h>
#include <mlir/Pass/Pass.h>
#include <mlir/Transforms/GreedyPatternRewriteDriver.h>

#include "lowering/op_cost.h"
#include "lowering/passes.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

// linalg-fuse-elementwise-ops with two more rules:
//  * a producer that calls libm (an op the vectorizer cannot handle) is not fused into a
//    reduction, whose vectorization would then fail; it stays a scalar loop of its own and the
//    reduction still vectorizes;
//  * a fused body stays under kMaxFusedCost (op_cost.h). Every fusion clones both bodies into a
//    new op, so a chain fused without bound costs time quadratic in its length (an unrolled
//    1,800-eqn leapfrog: 0.9 s in this pass alone, 27 s at 7,200 eqns; fx-group-elementwise now
//    takes such runs in linear time first), and one huge loop body is slow for LLVM too.
constexpr int64_t kMaxFusedCost = 1024;

bool calls_out(Operation* op) {
  bool found = false;
  op->walk([&](func::CallOp) { found = true; });
  return found;
}

int64_t cost_of(Operation* op) {
  return op->getNumRegions() == 0 || op->getRegion(0).empty() ? 0 : body_cost(op->getRegion(0).front());
}

struct FuseElementwisePass : public PassWrapper<FuseElementwisePass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FuseElementwisePass)
  StringRef getArgument() const final { return "fx-fuse-elementwise"; }
  StringRef getDescription() const final { return "elementwise producer-consumer fusion of linalg.generic ops"; }
  void getDependentDialects(DialectRegistry& r) const override { r.insert<linalg::LinalgDialect, tensor::TensorDialect>(); }
  void runOnOperation() override {
    linalg::ControlFusionFn control = [](OpOperand* fused) {
      Operation* producer = fused->get().getDefiningOp();
      if (!producer || !producer->hasOneUse()) return false;
      if (cost_of(producer) + cost_of(fused->getOwner()) > kMaxFusedCost) return false;
      auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
      if (consumer && consumer.getNumReductionLoops() > 0 && calls_out(producer)) return false;
      return true;
    };
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
  }
};

}  // namespace

void register_fuse_elementwise_pass() { PassRegistration<FuseElementwisePass>(); }

}  // namespace fluxion::lowering
