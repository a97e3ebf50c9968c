// The GPU pipeline's own passes (pipeline_cuda.cpp), run on bufferized host functions:
//
//   fx-gpu-copies    memref.copy -> linalg.copy, so that convert-linalg-to-parallel-loops makes
//                    the copy a parallel loop (one thread per element) like every other op.
//   fx-gpu-parallel  every top-level op that touches memory outside an scf.parallel (the scalar
//                    code of rank-0 results, the loops of full reductions) goes into a
//                    one-iteration scf.parallel, so that the whole function becomes launches and
//                    nothing runs on the host against device memory; then each scf.parallel is
//                    tiled 1 x ... x 1 x 256, so that its outer loop maps to blocks and the inner
//                    one to 256 threads along the innermost (contiguous) dimension.
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/SCF/Transforms/Transforms.h>
#include <mlir/Interfaces/SideEffectInterfaces.h>
#include <mlir/Pass/Pass.h>

#include "lowering/passes.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

constexpr int64_t kThreadsPerBlock = 256;

struct GpuCopiesPass : public PassWrapper<GpuCopiesPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuCopiesPass)
  StringRef getArgument() const final { return "fx-gpu-copies"; }
  StringRef getDescription() const final { return "memref.copy -> linalg.copy (parallel loops on the GPU)"; }
  void getDependentDialects(DialectRegistry& r) const override { r.insert<linalg::LinalgDialect>(); }
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp op) { copies.push_back(op); });
    for (memref::CopyOp op : copies) {
      OpBuilder b(op);
      b.create<linalg::CopyOp>(op.getLoc(), op.getSource(), op.getTarget());
      op.erase();
    }
  }
};

// What may stay in the host function: ops ordering device memory (parallel loops, which become
// launches; allocations, which the runtime makes) and the pure values they use.
bool stays_on_host(Operation* op) {
  return isa<scf::ParallelOp, memref::AllocOp, memref::DeallocOp, func::ReturnOp>(op);
}

struct GpuParallelPass : public PassWrapper<GpuParallelPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuParallelPass)
  StringRef getArgument() const final { return "fx-gpu-parallel"; }
  StringRef getDescription() const final { return "serial host code -> one-thread parallel loops; tile 1x..x256"; }
  void getDependentDialects(DialectRegistry& r) const override { r.insert<scf::SCFDialect, arith::ArithDialect>(); }

  void runOnOperation() override {
    for (Block& block : getOperation().getBody()) wrap_serial_runs(block);
    if (failed(check_no_escapes())) return signalPassFailure();
    SmallVector<scf::ParallelOp> loops;
    for (Operation& op : getOperation().getBody().front())
      if (auto loop = dyn_cast<scf::ParallelOp>(op)) loops.push_back(loop);
    for (scf::ParallelOp loop : loops) {
      SmallVector<int64_t> tiles(loop.getNumLoops(), 1);
      tiles.back() = kThreadsPerBlock;
      scf::tileParallelLoop(loop, tiles, /*noMinMaxBounds=*/true);
    }
  }

  // A run: consecutive ops that touch memory (or have regions, or use a value the run defines),
  // ended by an op that stays on the host. Pure ops in between that do not depend on the run stay
  // where they are; the run's loop goes where its last op was, after them.
  void wrap_serial_runs(Block& block) {
    SmallVector<Operation*> run;
    llvm::SmallPtrSet<Operation*, 16> in_run;
    auto flush = [&] {
      if (run.empty()) return;
      OpBuilder b(run.back());
      b.setInsertionPointAfter(run.back());
      const Location loc = run.front()->getLoc();
      Value zero = b.create<arith::ConstantIndexOp>(loc, 0), one = b.create<arith::ConstantIndexOp>(loc, 1);
      auto loop = b.create<scf::ParallelOp>(loc, ValueRange{zero}, ValueRange{one}, ValueRange{one});
      Operation* terminator = loop.getBody()->getTerminator();
      for (Operation* op : run) op->moveBefore(terminator);
      // The index constants must dominate the loop: keep them before it.
      zero.getDefiningOp()->moveBefore(loop);
      one.getDefiningOp()->moveBefore(loop);
      run.clear();
      in_run.clear();
    };
    for (Operation& op : llvm::make_early_inc_range(block)) {
      if (stays_on_host(&op)) {
        flush();
        continue;
      }
      const bool uses_run = llvm::any_of(op.getOperands(), [&](Value v) {
        Operation* def = v.getDefiningOp();
        return def && in_run.contains(def);
      });
      if (isPure(&op) && op.getNumRegions() == 0 && !uses_run) continue;
      run.push_back(&op);
      in_run.insert(&op);
    }
    flush();
  }

  // A value computed inside a wrapped run and used after it cannot cross to the host.
  LogicalResult check_no_escapes() {
    LogicalResult result = success();
    getOperation().walk([&](scf::ParallelOp loop) {
      loop.getBody()->walk([&](Operation* inner) {
        for (Value v : inner->getResults())
          for (Operation* user : v.getUsers())
            if (!loop->isAncestor(user)) {
              inner->emitError("the GPU pipeline cannot pass this value from a device loop to the host");
              result = failure();
            }
      });
    });
    return result;
  }
};

}  // namespace

void register_gpu_passes() {
  PassRegistration<GpuCopiesPass>();
  PassRegistration<GpuParallelPass>();
}

}  // namespace fluxion::lowering
