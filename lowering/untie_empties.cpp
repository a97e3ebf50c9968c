// One tensor.empty per use, before tiling.
//
// CSE after fusion leaves one tensor.empty per shape and element type for a whole kernel (the
// ResNet-18 step: 39 of them for 757 generics), and fx-group-elementwise gives a group's results
// the inits of its members, which are then that same empty. A generic with two results of one
// shape thus has one tensor as both of its outs; tiled into an scf.forall, the two shared_outs are
// tied to it. One-Shot Bufferize counts every shared_out as read, so all but one of those got a
// fresh buffer and a full copy of the (undefined) contents before the loop, and inside it the
// two results' slices of the one tensor conflicted and were copied per chunk: 74 of the step's 360
// threaded loops, 2-3x the loop's own time (a batch-norm forward at [128, 64, 32, 32]: 44 ms on
// two threads against 15 ms on one). An empty per use, each carrying its own `fx.empty` number so
// that the CSE before bufferization cannot merge them again, gives every result its own buffer.
#include <mlir/Dialect/Tensor/IR/Tensor.h>
#include <mlir/IR/Builders.h>

#include "lowering/tiling.h"

namespace fluxion::lowering {

using namespace mlir;

int64_t untie_empty_tensors(ModuleOp module) {
  SmallVector<tensor::EmptyOp> empties;
  module.walk([&](tensor::EmptyOp e) { empties.push_back(e); });
  MLIRContext* ctx = module.getContext();
  Type i64 = IntegerType::get(ctx, 64);
  int64_t next = 0, cloned = 0;
  for (tensor::EmptyOp e : empties) {
    SmallVector<OpOperand*> uses;
    for (OpOperand& u : e->getUses()) uses.push_back(&u);
    e->setAttr("fx.empty", IntegerAttr::get(i64, next++));
    OpBuilder b(e);
    for (size_t i = 1; i < uses.size(); ++i) {
      Operation* copy = b.clone(*e);
      copy->setAttr("fx.empty", IntegerAttr::get(i64, next++));
      uses[i]->set(copy->getResult(0));
      ++cloned;
    }
  }
  return cloned;
}

}  // namespace fluxion::lowering
