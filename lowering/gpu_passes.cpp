// The GPU pipeline's own passes (pipeline_cuda.cpp), run on bufferized host functions:
//
//   fx-gpu-copies    memref.copy -> linalg.copy, so that convert-linalg-to-parallel-loops makes
//                    the copy a parallel loop (one thread per element) like every other op.
//   fx-gpu-constants splat tensor constants -> linalg.fill, before bufferization (no host globals).
//   fx-gpu-parallel  every top-level op that touches memory outside an scf.parallel (the scalar
//                    code of rank-0 results, the loops of full reductions) goes into a
//                    one-iteration scf.parallel, so that the whole function becomes launches and
//                    nothing runs on the host against device memory; then each scf.parallel's
//                    dimensions are collapsed into one (row-major: consecutive threads take
//                    consecutive elements of the innermost dimension) and tiled by 256 (or the
//                    whole loop when it is shorter), so that the launch is grid (ceil(n/256), 1, 1)
//                    x block (256, 1, 1) whatever the rank: no block or grid dimension but x is
//                    used, so no limit but grid x's 2^31-1 blocks can be reached. (Mapping loop
//                    dimension d to block dimension d, as before, gave rank-3 kernels a block
//                    depth of 256 -- CUDA allows 64 -- and left a 3-wide innermost dimension 253
//                    idle threads of 256.)
//   fx-gpu-math      the math ops convert-gpu-to-nvvm (MLIR 19) has no libdevice call for, in
//                    terms of ones it has: sinh, cosh, asinh, acosh, atanh, round, roundeven by
//                    MLIR's own expansions; asin, acos through atan2 and sqrt; integer abs;
//                    calls of C math functions -> libdevice's (__nv_fmodf, ...).
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/GPU/IR/GPUDialect.h>
#include <mlir/Dialect/GPU/Transforms/Utils.h>
#include <mlir/Dialect/Math/IR/Math.h>
#include <mlir/Dialect/Math/Transforms/Passes.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/SCF/Transforms/Transforms.h>
#include <mlir/Dialect/SCF/Utils/Utils.h>
#include <mlir/Dialect/Utils/StaticValueUtils.h>
#include <mlir/IR/PatternMatch.h>
#include <mlir/Dialect/Tensor/IR/Tensor.h>
#include <mlir/Interfaces/SideEffectInterfaces.h>
#include <mlir/Interfaces/ViewLikeInterface.h>
#include <mlir/Pass/Pass.h>
#include <mlir/Transforms/GreedyPatternRewriteDriver.h>

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

// A splat tensor constant (the initial value of a max reduction, ...) would bufferize to a global
// in host memory, which no kernel can read: it becomes a fill of an empty tensor instead.
struct GpuConstantsPass : public PassWrapper<GpuConstantsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuConstantsPass)
  StringRef getArgument() const final { return "fx-gpu-constants"; }
  StringRef getDescription() const final { return "splat tensor constants -> linalg.fill (no host globals)"; }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<linalg::LinalgDialect, tensor::TensorDialect>();
  }
  void runOnOperation() override {
    SmallVector<arith::ConstantOp> splats;
    getOperation().walk([&](arith::ConstantOp op) {
      auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
      if (dense && dense.isSplat() && isa<RankedTensorType>(op.getType())) splats.push_back(op);
    });
    for (arith::ConstantOp op : splats) {
      OpBuilder b(op);
      auto type = cast<RankedTensorType>(op.getType());
      auto dense = cast<DenseElementsAttr>(op.getValue());
      Value scalar = b.create<arith::ConstantOp>(op.getLoc(), type.getElementType(), dense.getSplatValue<TypedAttr>());
      Value empty = b.create<tensor::EmptyOp>(op.getLoc(), type.getShape(), type.getElementType());
      op.replaceAllUsesWith(b.create<linalg::FillOp>(op.getLoc(), scalar, empty).getResult(0));
      op.erase();
    }
  }
};

// What may stay in the host function: ops ordering device memory (parallel loops, which become
// launches; allocations, which the runtime makes) and the pure values they use.
bool stays_on_host(Operation* op) {
  // A library call's wrapper (lower_library.cpp) stays too: the plan makes it a library step.
  if (auto call = dyn_cast<func::CallOp>(op)) return call.getCallee().starts_with("fx_libcall_");
  return isa<scf::ParallelOp, gpu::LaunchOp, memref::AllocOp, memref::DeallocOp, func::ReturnOp>(op);
}

struct GpuParallelPass : public PassWrapper<GpuParallelPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuParallelPass)
  StringRef getArgument() const final { return "fx-gpu-parallel"; }
  StringRef getDescription() const final { return "serial host code -> one-thread parallel loops; tile 1x..x256"; }
  void getDependentDialects(DialectRegistry& r) const override { r.insert<scf::SCFDialect, arith::ArithDialect>(); }

  void runOnOperation() override {
    if (getOperation().isExternal()) return;  // a declaration (libm's fmod, ...): no body
    // A library call's wrapper (lower_library.cpp): read by the plan, never run on the device.
    if (getOperation().isPrivate()) return;
    for (Block& block : getOperation().getBody()) {
      sink_into_loops(block);
      wrap_serial_runs(block);
    }
    if (failed(spill_escapes())) return signalPassFailure();
    IRRewriter rewriter(&getContext());
    std::vector<int64_t> trips;  // per top-level loop, its iterations (0: not known)
    for (scf::ParallelOp loop : top_level_loops()) {
      trips.push_back(trip_count(loop));
      if (loop.getNumLoops() > 1 && loop.getInitVals().empty()) {
        std::vector<unsigned> all(loop.getNumLoops());
        for (unsigned d = 0; d < all.size(); ++d) all[d] = d;
        rewriter.setInsertionPoint(loop);
        collapseParallelLoops(rewriter, loop, {all});
      }
    }
    size_t i = 0;
    for (scf::ParallelOp loop : top_level_loops()) {
      const int64_t n = i < trips.size() ? trips[i++] : 0;
      SmallVector<int64_t> tiles(loop.getNumLoops(), 1);
      tiles.back() = n > 0 ? std::min(n, kThreadsPerBlock) : kThreadsPerBlock;
      scf::tileParallelLoop(loop, tiles, /*noMinMaxBounds=*/true);
    }
  }

  SmallVector<scf::ParallelOp> top_level_loops() {
    SmallVector<scf::ParallelOp> loops;
    for (Operation& op : getOperation().getBody().front())
      if (auto loop = dyn_cast<scf::ParallelOp>(op)) loops.push_back(loop);
    return loops;
  }

  // The iterations of all the loop's dimensions together, when its bounds are constants; else 0.
  static int64_t trip_count(scf::ParallelOp loop) {
    int64_t n = 1;
    for (unsigned d = 0; d < loop.getNumLoops(); ++d) {
      auto lo = getConstantIntValue(loop.getLowerBound()[d]), hi = getConstantIntValue(loop.getUpperBound()[d]),
           step = getConstantIntValue(loop.getStep()[d]);
      if (!lo || !hi || !step || *step <= 0) return 0;
      n *= std::max<int64_t>(0, (*hi - *lo + *step - 1) / *step);
    }
    return n;
  }

  // A scalar read on the host and used only inside later loops (the padding value of pad, a
  // rank-0 operand broadcast into an elementwise op) is read inside them instead: each use gets a
  // copy of the op right before its user. Pure ops and loads from the function's arguments (inputs,
  // which nothing writes) qualify; walking backwards moves whole chains (load, extf, ...).
  void sink_into_loops(Block& block) {
    SmallVector<Operation*> ops;
    for (Operation& op : block) ops.push_back(&op);
    for (Operation* op : llvm::reverse(ops)) {
      // (Views stay: a kernel receives the viewed buffer, not a view made inside it.)
      const bool movable = (isPure(op) && op->getNumRegions() == 0 && !isa<ViewLikeOpInterface>(op)) ||
                           (isa<memref::LoadOp>(op) && isa<BlockArgument>(cast<memref::LoadOp>(op).getMemRef()));
      if (!movable || op->getNumResults() == 0 || op->use_empty()) continue;
      if (!llvm::all_of(op->getUsers(), [&](Operation* u) { return u->getBlock() != &block; })) continue;
      SmallVector<OpOperand*> uses;
      for (Value r : op->getResults())
        for (OpOperand& u : r.getUses()) uses.push_back(&u);
      for (OpOperand* u : uses) {
        OpBuilder b(u->getOwner());
        Operation* copy = b.clone(*op);
        u->set(copy->getResult(cast<OpResult>(u->get()).getResultNumber()));
      }
      op->erase();
    }
  }

  // A run: consecutive ops that touch memory (or have regions, or use a value a run defines),
  // ended by an op that stays on the host. Pure ops in between that do not depend on a run stay
  // where they are; the run's loop goes where its last op was, after them. (A value of an
  // earlier run reaches a later one through memory: spill_escapes.)
  void wrap_serial_runs(Block& block) {
    // Allocations (static shapes: no operands) first, so that none splits a run whose values
    // flow into a store to the allocated buffer.
    for (Operation& op : llvm::make_early_inc_range(block))
      if (isa<memref::AllocOp>(op) && op.getNumOperands() == 0) op.moveBefore(&block, block.begin());
    SmallVector<Operation*> run;
    llvm::SmallPtrSet<Operation*, 16> wrapped;  // the ops of every run so far
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
    };
    for (Operation& op : llvm::make_early_inc_range(block)) {
      if (stays_on_host(&op)) {
        flush();
        continue;
      }
      const bool uses_run = llvm::any_of(op.getOperands(), [&](Value v) {
        Operation* def = v.getDefiningOp();
        return def && wrapped.contains(def);
      });
      if (isPure(&op) && op.getNumRegions() == 0 && !uses_run) continue;
      run.push_back(&op);
      wrapped.insert(&op);
    }
    flush();
  }

  // A scalar computed in one device loop and used in a later one (a full reduction's result that
  // a serial run turns into the next reduction's operand and also into the output) goes through a
  // one-element temporary: stored where it is made, loaded where it is used. A value the host
  // itself would need cannot cross.
  LogicalResult spill_escapes() {
    LogicalResult result = success();
    func::FuncOp fn = getOperation();
    Block& top = fn.getBody().front();
    SmallVector<std::pair<Operation*, Value>> escaping;  // (the loop, the value)
    for (Operation& op : top)
      if (auto loop = dyn_cast<scf::ParallelOp>(op))
        loop.getBody()->walk([&](Operation* inner) {
          for (Value v : inner->getResults())
            if (llvm::any_of(v.getUsers(), [&](Operation* u) { return !loop->isAncestor(u); }))
              escaping.push_back({loop, v});
        });
    for (auto [loop, v] : escaping) {
      Type t = v.getType();
      const bool index = t.isIndex();
      if (!index && !t.isIntOrFloat()) {
        v.getDefiningOp()->emitError("the GPU pipeline cannot pass this value from a device loop to the host");
        result = failure();
        continue;
      }
      Type stored = index ? IntegerType::get(&getContext(), 64) : t;
      OpBuilder b(&top, top.begin());
      const Location loc = v.getLoc();
      Value slot = b.create<memref::AllocOp>(loc, MemRefType::get({}, stored));
      b.setInsertionPointAfterValue(v);
      Value s = index ? Value(b.create<arith::IndexCastOp>(loc, stored, v)) : v;
      b.create<memref::StoreOp>(loc, s, slot);
      for (OpOperand& use : llvm::make_early_inc_range(v.getUses())) {
        Operation* user = use.getOwner();
        if (loop->isAncestor(user)) continue;
        if (user->getBlock() == &top) {
          user->emitError("the GPU pipeline cannot pass a value from a device loop to this host operation");
          result = failure();
          continue;
        }
        OpBuilder ub(user);
        Value r = ub.create<memref::LoadOp>(loc, slot);
        if (index) r = ub.create<arith::IndexCastOp>(loc, t, r);
        use.set(r);
      }
    }
    return result;
  }
};

// asin(x) = atan2(x, sqrt((1-x)(1+x))), acos(x) = atan2(sqrt((1-x)(1+x)), x): the factored
// form keeps 1-x^2 accurate near |x| = 1; |x| > 1 gives sqrt(negative) = NaN, as asin does.
template <class Op, bool kAcos>
struct InverseTrigViaAtan2 : public OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter& b) const override {
    const Location loc = op.getLoc();
    Value x = op.getOperand();
    Value one = b.create<arith::ConstantOp>(loc, b.getFloatAttr(x.getType(), 1.0));
    Value c = b.create<math::SqrtOp>(loc, b.create<arith::MulFOp>(loc, b.create<arith::SubFOp>(loc, one, x),
                                                                 b.create<arith::AddFOp>(loc, one, x)));
    b.replaceOpWithNewOp<math::Atan2Op>(op, kAcos ? c : x, kAcos ? x : c);
    return success();
  }
};

// |x| = max(x, 0 - x) (the most negative value stays itself, as in C).
struct AbsIViaMax : public OpRewritePattern<math::AbsIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::AbsIOp op, PatternRewriter& b) const override {
    const Location loc = op.getLoc();
    Value x = op.getOperand();
    Value zero = b.create<arith::ConstantOp>(loc, b.getIntegerAttr(x.getType(), 0));
    b.replaceOpWithNewOp<arith::MaxSIOp>(op, x, b.create<arith::SubIOp>(loc, zero, x));
    return success();
  }
};

}  // namespace

void populate_gpu_math_patterns(RewritePatternSet& patterns) {
  populateExpandSinhPattern(patterns);
  populateExpandCoshPattern(patterns);
  populateExpandAsinhPattern(patterns);
  populateExpandAcoshPattern(patterns);
  populateExpandAtanhPattern(patterns);
  populateExpandRoundEvenPattern(patterns);
  populateExpandRoundFPattern(patterns);
  patterns.add<InverseTrigViaAtan2<math::AsinOp, false>, InverseTrigViaAtan2<math::AcosOp, true>, AbsIViaMax>(
      patterns.getContext());
}

namespace {

struct GpuMathPass : public PassWrapper<GpuMathPass, OperationPass<gpu::GPUModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuMathPass)
  StringRef getArgument() const final { return "fx-gpu-math"; }
  StringRef getDescription() const final { return "math ops without a libdevice lowering -> ones with"; }
  void getDependentDialects(DialectRegistry& r) const override { r.insert<math::MathDialect, arith::ArithDialect>(); }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populate_gpu_math_patterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns)))) return signalPassFailure();
    // The C math functions the lowering calls (fmodf, ...) are libdevice's __nv_fmodf, ...:
    // gpu-module-to-binary links libdevice, and ptxas names any that it lacks.
    for (auto fn : llvm::make_early_inc_range(getOperation().getOps<func::FuncOp>())) {
      if (!fn.isExternal() || fn.getName().starts_with("__nv_")) continue;
      const std::string renamed = "__nv_" + fn.getName().str();
      if (failed(SymbolTable::replaceAllSymbolUses(fn, StringAttr::get(&getContext(), renamed), getOperation())))
        return signalPassFailure();
      SymbolTable::setSymbolName(fn, renamed);
    }
  }
};

// MLIR's gpu-launch-sink-index-computations, for every pure scalar computation: a value a launch
// uses that the host computed from constants (a percentile's interpolation weight rounded to
// float16: arith.truncf of an inexact constant does not fold) is computed in the kernel instead,
// since the launch plan passes buffers only. What MLIR's pass sinks (constants, index
// arithmetic) is included.
struct GpuSinkScalarsPass : public PassWrapper<GpuSinkScalarsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuSinkScalarsPass)
  StringRef getArgument() const final { return "fx-gpu-sink-scalars"; }
  StringRef getDescription() const final { return "pure scalar computations a launch uses -> into the launch"; }
  void runOnOperation() override {
    auto scalar = [](Operation* op) {
      if (op->getNumRegions() != 0 || !isPure(op)) return false;
      return llvm::all_of(op->getResultTypes(), [](Type t) { return t.isIntOrIndexOrFloat(); });
    };
    getOperation().walk([&](gpu::LaunchOp launch) {
      if (failed(sinkOperationsIntoLaunchOp(launch, scalar))) signalPassFailure();
    });
  }
};

}  // namespace

void register_gpu_passes() {
  PassRegistration<GpuSinkScalarsPass>();
  PassRegistration<GpuCopiesPass>();
  PassRegistration<GpuConstantsPass>();
  PassRegistration<GpuParallelPass>();
  PassRegistration<GpuMathPass>();
  register_gpu_rows_pass();
  register_gpu_columns_pass();
}

}  // namespace fluxion::lowering
