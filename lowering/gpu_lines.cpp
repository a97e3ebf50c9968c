#include "lowering/gpu_lines.h"

#include <mlir/Dialect/SCF/IR/SCF.h>

namespace fluxion::lowering {

using namespace mlir;

Value lines_in_parallel(LowerCtx& c, Value init, const LineBody& body) {
  OpBuilder& b = c.b;
  const Location l = c.loc;
  auto type = cast<RankedTensorType>(init.getType());
  const int64_t outer = type.getDimSize(0), n = type.getDimSize(1), inner = type.getDimSize(2);
  auto line_type = RankedTensorType::get({n}, type.getElementType());
  // Built without a body builder, so that the op makes its own terminator (an empty in_parallel).
  auto forall = b.create<scf::ForallOp>(l, ArrayRef<OpFoldResult>{b.getIndexAttr(outer), b.getIndexAttr(inner)},
                                        ValueRange{init}, /*mapping=*/std::nullopt);
  OpBuilder nb = OpBuilder::atBlockTerminator(forall.getBody());
  Value o = forall.getInductionVar(0), k = forall.getInductionVar(1), out = forall.getRegionIterArgs()[0];
  const SmallVector<OpFoldResult> offsets{o, nb.getIndexAttr(0), k};
  const SmallVector<OpFoldResult> sizes{nb.getIndexAttr(1), nb.getIndexAttr(n), nb.getIndexAttr(1)};
  const SmallVector<OpFoldResult> strides(3, nb.getIndexAttr(1));
  Value line = nb.create<tensor::ExtractSliceOp>(l, line_type, out, offsets, sizes, strides);
  Value done = body(nb, l, o, k, line);
  OpBuilder tb = OpBuilder::atBlockBegin(forall.getTerminator().getBody());
  tb.create<tensor::ParallelInsertSliceOp>(l, done, out, offsets, sizes, strides);
  return forall.getResult(0);
}

}  // namespace fluxion::lowering
