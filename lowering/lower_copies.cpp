// fx-lower-copies: every memref.copy left after bufferization becomes loops in the kernel.
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/Vector/IR/VectorOps.h>
#include <mlir/Pass/Pass.h>

#include "lowering/passes.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

// memref.copy (a yielded carry, insert_slice, concatenate, pad) would become a call into
// libmlir_c_runner_utils. Lowered here instead, after vectorization has run: a loop nest over the
// outer dims moving whole vectors along the innermost one when both sides are contiguous along it
// and the element is at least a byte; otherwise linalg.copy, which becomes scalar loops. (As scalar
// loops, the copy of an RNN's carry cost a tenth of each step.)
int64_t copy_vector_length(int64_t n) {
  if (n <= 64) return n;
  for (int64_t d = 64; d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

bool unit_inner_stride(MemRefType t) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(getStridesAndOffset(t, strides, offset)) && !strides.empty() && strides.back() == 1;
}

struct LowerCopiesPass : public PassWrapper<LowerCopiesPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerCopiesPass)
  StringRef getArgument() const final { return "fx-lower-copies"; }
  StringRef getDescription() const final { return "memref.copy -> vector loops (or linalg.copy)"; }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<linalg::LinalgDialect, scf::SCFDialect, vector::VectorDialect, arith::ArithDialect>();
  }
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp op) { copies.push_back(op); });
    for (memref::CopyOp op : copies) {
      OpBuilder b(op);
      auto src = cast<MemRefType>(op.getSource().getType()), dst = cast<MemRefType>(op.getTarget().getType());
      const Type elem = src.getElementType();
      const int64_t vl = src.hasStaticShape() && src.getRank() > 0 ? copy_vector_length(src.getShape().back()) : 1;
      if (vl < 4 || !elem.isIntOrFloat() || elem.getIntOrFloatBitWidth() < 8 || !unit_inner_stride(src) ||
          !unit_inner_stride(dst)) {
        b.create<linalg::CopyOp>(op.getLoc(), op.getSource(), op.getTarget());
        op.erase();
        continue;
      }
      const Location loc = op.getLoc();
      const ArrayRef<int64_t> shape = src.getShape();
      const int64_t rank = src.getRank();
      auto index = [&](int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v).getResult(); };
      SmallVector<Value> ivs;
      for (int64_t d = 0; d < rank; ++d) {
        auto loop = b.create<scf::ForOp>(loc, index(0), index(shape[size_t(d)]), index(d + 1 == rank ? vl : 1));
        ivs.push_back(loop.getInductionVar());
        b.setInsertionPoint(loop.getBody()->getTerminator());
      }
      auto vt = VectorType::get({vl}, elem);
      SmallVector<bool> in_bounds{true};
      Value pad = b.create<arith::ConstantOp>(loc, elem, b.getZeroAttr(elem));
      Value v = b.create<vector::TransferReadOp>(loc, vt, op.getSource(), ivs, pad, in_bounds);
      b.create<vector::TransferWriteOp>(loc, v, op.getTarget(), ivs, in_bounds);
      op.erase();
    }
  }
};

}  // namespace

void register_lower_copies_pass() { PassRegistration<LowerCopiesPass>(); }

}  // namespace fluxion::lowering
