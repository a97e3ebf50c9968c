// fx-gpu-columns: reductions over outer (non-innermost) dimensions as two parallel launches
// (pipeline_cuda.cpp runs it after fx-gpu-rows, before the generic mapping of gpu_passes.cpp).
//
// A column sum of f32[B, N] -> [N] (a bias gradient), the GMM's sums over n points per component
// ([n, K] -> [K]): the generic mapping gives each output element one thread running a serial loop
// over the whole reduced extent. Coalesced, but with few outputs (N = 10..512) the GPU runs a
// handful of warps, each walking B elements one after the other: latency-bound, one SM busy. Here
// the reduced extent is split into `parts` interleaved slices:
//   launch 1, a thread per (part p, output element j), p-major: it folds the op's body (with its
//     fused elementwise producer) over reduced indices p, p + parts, p + 2 parts, ... into a
//     private partial and stores it at partials[p * n + j]. Consecutive threads take consecutive
//     output elements of the same part, so a warp reads consecutive addresses (x[b, j..j+31]; with
//     n < 32 outputs, several consecutive rows b, b + 1, ... at once: still one contiguous run).
//   launch 2, a thread per output element j: out[j] = C(out[j], partial 0, ..., partial parts-1),
//     with the op's own combiner (the parts in order: deterministic, like every Fluxion kernel).
// No shared memory, no barriers, no atomics. What stays with the generic mapping: reductions with
// enough output elements to fill the GPU (parts would be 1), short reduced extents, outputs not
// indexed by the kept loops in order, and combiners that are not one associative op on the
// accumulator (argmax's value-index pairs, complex sums), as for fx-gpu-rows (gpu_row_members.cpp).
#include <mlir/Dialect/Affine/IR/AffineOps.h>
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/GPU/IR/GPUDialect.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/IR/IRMapping.h>
#include <mlir/Pass/Pass.h>

#include "lowering/gpu_row_members.h"
#include "lowering/passes.h"

namespace fluxion::lowering {

using namespace mlir;
using namespace gpu_rows;

namespace {

constexpr int64_t kThreads = 256;              // threads of a block, both launches
constexpr int64_t kThreadsWanted = 64 * 1024;  // threads of launch 1 that keep an H100/H200's SMs busy
constexpr int64_t kPerThread = 16;             // reduced elements per thread of launch 1, at least
constexpr int64_t kMinReduced = 2 * kPerThread;

// A reduction the pass takes: its loops split into kept (parallel) and reduced ones.
struct Column {
  mutable linalg::LinalgOp op;  // (MLIR's op handles are not const-correct)
  SmallVector<unsigned> kept, reduced;  // loop positions
  SmallVector<int64_t> kept_ext, reduced_ext;
  SmallVector<Combiner> combiners;  // per output
  int64_t parts = 1;
};

std::optional<Column> as_column(Operation* o) {
  auto op = dyn_cast<linalg::LinalgOp>(o);
  if (!op || !op.hasPureBufferSemantics() || op->getNumRegions() != 1) return std::nullopt;
  auto loops = loops_of(op);
  if (!loops) return std::nullopt;
  Column c{op, {}, {}, {}, {}, {}, 1};
  auto it = op.getIteratorTypesArray();
  for (unsigned d = 0; d < it.size(); ++d) {
    const bool r = it[d] == utils::IteratorType::reduction;
    (r ? c.reduced : c.kept).push_back(d);
    (r ? c.reduced_ext : c.kept_ext).push_back((*loops)[d]);
  }
  if (c.reduced.empty()) return std::nullopt;
  for (unsigned o = 0; o < op.getNumDpsInits(); ++o) {
    // Each output indexed by the kept loops in order: launch 2's thread j owns out[j].
    AffineMap map = op.getIndexingMapsArray()[op.getNumDpsInputs() + o];
    if (map.getNumResults() != c.kept.size()) return std::nullopt;
    for (unsigned d = 0; d < c.kept.size(); ++d)
      if (map.getResult(d) != getAffineDimExpr(c.kept[d], map.getContext())) return std::nullopt;
    if (!cast<MemRefType>(op.getDpsInitOperand(o)->get().getType()).getLayout().isIdentity()) return std::nullopt;
    auto comb = combiner_of(op, o);
    if (!comb) return std::nullopt;
    c.combiners.push_back(*comb);
  }
  const int64_t n = product(c.kept_ext), r = product(c.reduced_ext);
  if (r < kMinReduced || n <= 0) return std::nullopt;
  c.parts = std::min((r + kPerThread - 1) / kPerThread, std::max<int64_t>(1, kThreadsWanted / n));
  if (c.parts < 2 || n * c.parts >= (int64_t(1) << 31)) return std::nullopt;
  return c;
}

// A fill that launch 2 absorbs: the op, and the constant it fills with.
struct Fill {
  Operation* op = nullptr;
  Operation* constant = nullptr;
};

class Builder {
 public:
  Builder(OpBuilder& b, Location loc, const Column& c) : b_(b), loc_(loc), c_(c) {}

  Value index(int64_t v) { return b_.create<arith::ConstantIndexOp>(loc_, v); }

  SmallVector<Value> delinearize(Value i, ArrayRef<int64_t> dims) { return gpu_rows::delinearize(b_, loc_, i, dims); }

  // A launch of ⌈count / kThreads⌉ blocks; the body runs for the global thread ids below count.
  template <typename F>
  void launch(Operation* before, int64_t count, F body) {
    b_.setInsertionPoint(before);
    Value one = index(1);
    auto l = b_.create<gpu::LaunchOp>(loc_, index((count + kThreads - 1) / kThreads), one, one, index(kThreads), one, one);
    b_.setInsertionPointToEnd(&l.getBody().front());
    Value t = b_.create<arith::AddIOp>(loc_, b_.create<arith::MulIOp>(loc_, l.getBlockIds().x, index(kThreads)),
                                       l.getThreadIds().x);
    Value live = b_.create<arith::CmpIOp>(loc_, arith::CmpIPredicate::ult, t, index(count));
    auto guard = b_.create<scf::IfOp>(loc_, live, /*withElseRegion=*/false);
    b_.create<gpu::TerminatorOp>(loc_);
    b_.setInsertionPoint(guard.thenBlock()->getTerminator());
    body(t);
  }

  // c's op on (acc, v), in the original operand order.
  Value combine(const Combiner& c, Value acc, Value v) {
    Operation* op = b_.clone(*c.op);
    op->setOperand(c.acc_operand, acc);
    op->setOperand(1 - c.acc_operand, v);
    return op->getResult(0);
  }

  // Launch 1's thread t: part p = t / n folds reduced indices p, p + parts, ... for output j = t % n.
  void partials(Value t, ArrayRef<Value> out) {
    const int64_t n = product(c_.kept_ext), r = product(c_.reduced_ext);
    Value p = b_.create<arith::DivUIOp>(loc_, t, index(n));
    SmallVector<Value> kept = delinearize(b_.create<arith::RemUIOp>(loc_, t, index(n)), c_.kept_ext);
    SmallVector<Value> init;
    SmallVector<Operation*> skip;
    for (const Combiner& c : c_.combiners) {
      init.push_back(identity(b_, loc_, c.kind, c.op->getResult(0).getType()));
      skip.push_back(c.op);
    }
    auto loop = b_.create<scf::ForOp>(loc_, p, index(r), index(c_.parts), init);
    {
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> reduced = delinearize(loop.getInductionVar(), c_.reduced_ext);
      SmallVector<Value> loops(c_.kept.size() + c_.reduced.size());
      for (auto [d, v] : llvm::zip(c_.kept, kept)) loops[d] = v;
      for (auto [d, v] : llvm::zip(c_.reduced, reduced)) loops[d] = v;
      IRMapping map = body_at(loops, skip);
      SmallVector<Value> next;
      for (auto [i, c] : llvm::enumerate(c_.combiners))
        next.push_back(combine(c, loop.getRegionIterArgs()[i], map.lookupOrDefault(c.op->getOperand(1 - c.acc_operand))));
      b_.create<scf::YieldOp>(loc_, next);
    }
    for (auto [i, buf] : llvm::enumerate(out)) b_.create<memref::StoreOp>(loc_, loop.getResult(unsigned(i)), buf, t);
  }

  // Launch 2's thread j: out[j] = C(out[j], partials of parts 0, 1, ...); out[j] is the constant
  // of the fill that `fills` absorbed for an output, where it holds one.
  void fold(Value j, ArrayRef<Value> partials, ArrayRef<Fill> fills) {
    const int64_t n = product(c_.kept_ext);
    SmallVector<Value> at = delinearize(j, c_.kept_ext), init;
    for (auto [o, fill] : llvm::zip(c_.op.getDpsInitsMutable(), fills))
      init.push_back(fill.op ? Value(b_.clone(*fill.constant)->getResult(0))
                             : Value(b_.create<memref::LoadOp>(loc_, o.get(), at)));
    auto loop = b_.create<scf::ForOp>(loc_, index(0), index(c_.parts), index(1), init);
    {
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(loop.getBody());
      Value k = b_.create<arith::AddIOp>(loc_, b_.create<arith::MulIOp>(loc_, loop.getInductionVar(), index(n)), j);
      SmallVector<Value> next;
      for (auto [i, c] : llvm::enumerate(c_.combiners))
        next.push_back(combine(c, loop.getRegionIterArgs()[i], b_.create<memref::LoadOp>(loc_, partials[i], ValueRange{k})));
      b_.create<scf::YieldOp>(loc_, next);
    }
    for (auto [i, o] : llvm::enumerate(c_.op.getDpsInitsMutable()))
      b_.create<memref::StoreOp>(loc_, loop.getResult(unsigned(i)), o.get(), at);
  }

 private:
  // The op's body at loop coordinates `loops`, without the ops in `skip` (the combiners).
  IRMapping body_at(ArrayRef<Value> loops, ArrayRef<Operation*> skip) {
    IRMapping map;
    for (OpOperand* o : c_.op.getDpsInputOperands()) {
      Value v = o->get();
      if (isa<MemRefType>(v.getType())) v = b_.create<memref::LoadOp>(loc_, v, apply(c_.op.getMatchingIndexingMap(o), loops));
      map.map(c_.op.getMatchingBlockArgument(o), v);
    }
    for (Operation& op : c_.op.getBlock()->without_terminator()) {
      if (llvm::is_contained(skip, &op)) continue;
      if (auto i = dyn_cast<linalg::IndexOp>(op)) {
        map.map(i.getResult(), loops[i.getDim()]);
        continue;
      }
      b_.clone(op, map);
    }
    return map;
  }

  SmallVector<Value> apply(AffineMap map, ArrayRef<Value> loops) {
    SmallVector<Value> out;
    for (AffineExpr e : map.getResults()) {
      if (auto d = dyn_cast<AffineDimExpr>(e)) out.push_back(loops[d.getPosition()]);
      else if (auto k = dyn_cast<AffineConstantExpr>(e)) out.push_back(index(k.getValue()));
      else out.push_back(b_.create<affine::AffineApplyOp>(loc_, AffineMap::get(map.getNumDims(), 0, e), loops));
    }
    return out;
  }

  OpBuilder& b_;
  Location loc_;
  const Column& c_;
};

// The fill of `out` by a constant that the reduction then accumulates into (a linalg.fill, or the
// all-parallel generic yielding a constant that fusion makes of one), with nothing between them
// touching `out`: launch 2 starts from the constant and the fill's launch goes. The walk back
// passes only ops known not to touch `out` (a launch made by fx-gpu-rows may, in its body).
Fill absorbed_fill(Operation* op, Value out) {
  void* root = root_of(out).getAsOpaquePointer();
  for (Operation* p = op->getPrevNode(); p; p = p->getPrevNode()) {
    if (passive(p)) continue;
    auto l = dyn_cast<linalg::LinalgOp>(p);
    if (!l) return {};
    if (l.getNumDpsInputs() == 0 && l.getNumDpsInits() == 1 && l.getDpsInitOperand(0)->get() == out &&
        l.getNumParallelLoops() == l.getNumLoops() && l.getMatchingIndexingMap(l.getDpsInitOperand(0)).isIdentity()) {
      Value v = isa<linalg::FillOp>(p) ? cast<linalg::FillOp>(p).getInputs()[0]
                                         : l.getBlock()->getTerminator()->getOperand(0);
      if (auto c = v.getDefiningOp<arith::ConstantOp>(); c && l.getBlock()->getOperations().size() <= 2) return {p, c};
      return {};
    }
    for (Value v : p->getOperands())
      if (isa<MemRefType>(v.getType()) && root_of(v).getAsOpaquePointer() == root) return {};
  }
  return {};
}

struct GpuColumnsPass : public PassWrapper<GpuColumnsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuColumnsPass)
  StringRef getArgument() const final { return "fx-gpu-columns"; }
  StringRef getDescription() const final { return "reductions over outer dims -> split partials, then a fold"; }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<gpu::GPUDialect, scf::SCFDialect, memref::MemRefDialect, affine::AffineDialect, arith::ArithDialect>();
  }

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal() || fn.isPrivate()) return;  // a declaration, a library call's wrapper
    SmallVector<Operation*> ops;
    for (Operation& op : fn.getBody().front()) ops.push_back(&op);
    for (Operation* op : ops) {
      auto c = as_column(op);
      if (!c) continue;
      OpBuilder b(op);
      const Location loc = op->getLoc();
      const int64_t n = product(c->kept_ext);
      SmallVector<Value> partials;
      for (const Combiner& k : c->combiners)
        partials.push_back(b.create<memref::AllocOp>(loc, MemRefType::get({n * c->parts}, k.op->getResult(0).getType())));
      SmallVector<Fill> fills;
      for (OpOperand& o : c->op.getDpsInitsMutable()) fills.push_back(absorbed_fill(op, o.get()));
      Builder kb(b, loc, *c);
      kb.launch(op, n * c->parts, [&](Value t) { kb.partials(t, partials); });
      kb.launch(op, n, [&](Value j) { kb.fold(j, partials, fills); });
      op->erase();
      for (const Fill& f : fills)
        if (f.op) f.op->erase();
    }
  }
};

}  // namespace

void register_gpu_columns_pass() { PassRegistration<GpuColumnsPass>(); }

}  // namespace fluxion::lowering
