// fx-gpu-rows: reductions over the innermost dimensions as one block per row (pipeline_cuda.cpp
// runs it on the bufferized host function, before the generic mapping of gpu_passes.cpp).
//
// A linalg op whose loops are (rows..., reduced...) with the reduced loops innermost -- a row sum,
// a row max, the statistics of a layer norm, with their fused elementwise producers -- is an
// *anchor*. The generic mapping gives each row one thread running a serial loop over the row,
// uncoalesced: 4-5% of the copy bandwidth on an H200 (docs/gpu.md). Here each row is one block
// instead: its threads stride over the row (consecutive threads, consecutive elements), each
// folding the op's producer body into a private partial; `gpu.all_reduce` (warp shuffles and
// shared memory, as convert-gpu-to-nvvm lowers it) combines the partials, and thread 0 folds the
// total into the output element with the op's own combiner.
//
// Row fusion: the ops next to an anchor that work on the same rows -- fills of the row's outputs,
// elementwise ops over (rows..., k...), other anchors -- join its kernel, each in program order
// with a barrier where one reads what an earlier one wrote, so that softmax and layer norm are one
// kernel per row (max, sum, normalise) reading the row from L1/L2 after the first pass. A
// temporary that an elementwise member writes and only later members read at the same element is
// never stored: each reader recomputes it (softmax's exp(x - max), read by the sum and the
// division). A member must keep every buffer the kernel both writes and reads row-local -- each
// access to row r touches only row r of it -- since the rows run in any order.
//
// argmax/argmin along the row (a value-index pair per element, no single combiner) are anchors
// too: each thread runs the op's own body over its elements, then two all-reduces (the best value,
// then the least index holding it: reduce_arg).
//
// What stays with the generic mapping: reductions whose combiner is not one associative op on the
// accumulator (complex sums, a complex argmax), reductions over short rows (fewer than kMinRow
// elements: a thread per row is no worse), and reductions over outer dimensions (a thread per
// output element reads coalesced already).
#include <mlir/Dialect/Affine/IR/AffineOps.h>
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/GPU/IR/GPUDialect.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/IR/IRMapping.h>
#include <mlir/Interfaces/ViewLikeInterface.h>
#include <mlir/Pass/Pass.h>

#include <limits>
#include <map>
#include <optional>
#include <set>

#include "lowering/gpu_row_members.h"
#include "lowering/passes.h"

namespace fluxion::lowering {

using namespace mlir;
using namespace gpu_rows;

namespace {

constexpr int64_t kMaxThreads = 256;  // threads of a row's block
constexpr int64_t kMinRow = 32;       // an anchor's reduced elements per row, at least
constexpr int64_t kBlocksWanted = 1024;  // blocks that keep every SM of an H100/H200 busy, several each
constexpr int64_t kPerThread = 16;    // elements per thread, at least, in a split reduction

// Builds a row kernel's body (one block per row).
class KernelBuilder {
 public:
  // `row`: the linear index of the row this block works on.
  KernelBuilder(OpBuilder& b, Location loc, RowKernel& k, Value row, Value thread, int64_t threads)
      : b_(b), loc_(loc), k_(k), thread_(thread), threads_(threads), row_(row) {
    rows_ = delinearize(row, k.rows);
    for (const Member& m : k.members)
      if (m.virtual_) producer_[root_of(m.op.getDpsInitOperand(0)->get()).getAsOpaquePointer()] = &m;
  }

  // Members in program order; a barrier before one that reads what an earlier one wrote, or
  // writes what an earlier one read or wrote, since the last barrier (threads run apart until one).
  void build() {
    std::set<void*> written, read;  // roots, since the last barrier
    for (const Member& m : k_.members) {
      if (m.virtual_) continue;
      std::set<void*> reads, writes;
      accessed_roots(m, reads, writes);
      const bool raw = llvm::any_of(reads, [&](void* r) { return written.count(r); });
      const bool war = llvm::any_of(writes, [&](void* r) { return written.count(r) || read.count(r); });
      if (raw || war) {
        b_.create<gpu::BarrierOp>(loc_);
        written.clear();
        read.clear();
      }
      if (&m == k_.split) fold_partials(m, k_.parts, k_.partials);
      else if (m.reduction) reduce(m);
      else elementwise(m);
      written.insert(writes.begin(), writes.end());
      read.insert(reads.begin(), reads.end());
    }
  }

 private:
  Value index(int64_t v) { return b_.create<arith::ConstantIndexOp>(loc_, v); }

  SmallVector<Value> delinearize(Value i, ArrayRef<int64_t> dims) { return gpu_rows::delinearize(b_, loc_, i, dims); }

  // The roots a member reads and writes, reading through the virtual temporaries it recomputes.
  void accessed_roots(const Member& m, std::set<void*>& reads, std::set<void*>& writes) {
    for (OpOperand& o : m.op->getOpOperands()) {
      if (!isa<MemRefType>(o.get().getType())) continue;
      void* r = root_of(o.get()).getAsOpaquePointer();
      if (m.op.isDpsInit(&o)) {
        writes.insert(r);
        if (m.reduction || !m.op.getMatchingBlockArgument(&o).use_empty()) reads.insert(r);
      } else if (auto it = producer_.find(r); it != producer_.end()) {
        std::set<void*> ignored;
        accessed_roots(*it->second, reads, ignored);
      } else {
        reads.insert(r);
      }
    }
  }

  SmallVector<Value> apply(AffineMap map, ArrayRef<Value> loops) {
    SmallVector<Value> out;
    for (AffineExpr e : map.getResults()) {
      if (auto d = dyn_cast<AffineDimExpr>(e)) out.push_back(loops[d.getPosition()]);
      else if (auto c = dyn_cast<AffineConstantExpr>(e)) out.push_back(index(c.getValue()));
      else out.push_back(b_.create<affine::AffineApplyOp>(loc_, AffineMap::get(map.getNumDims(), 0, e), loops));
    }
    return out;
  }

  // The value of operand o of member m at loop coordinates `loops`: a load, a scalar, or a
  // virtual temporary's producer recomputed there.
  Value read(const Member& m, OpOperand& o, ArrayRef<Value> loops) {
    if (!isa<MemRefType>(o.get().getType())) return o.get();
    SmallVector<Value> at = apply(m.op.getMatchingIndexingMap(&o), loops);
    if (auto it = producer_.find(root_of(o.get()).getAsOpaquePointer()); it != producer_.end())
      return compute(*it->second, at, /*skip=*/{})[0];
    return b_.create<memref::LoadOp>(loc_, o.get(), at);
  }

  // The member's body at `loops`: its yielded values. The ops in `skip` (a reduction's combiners)
  // are not cloned; `mapping` then holds what their operands became.
  // `accs`, when given, are the outputs' block arguments (an arg member's running best and index).
  SmallVector<Value> compute(const Member& m, ArrayRef<Value> loops, ArrayRef<Operation*> skip, IRMapping* out_map = nullptr,
                             ValueRange accs = {}) {
    IRMapping map;
    Block* body = m.op.getBlock();
    for (OpOperand* o : m.op.getDpsInputOperands()) map.map(m.op.getMatchingBlockArgument(o), read(m, *o, loops));
    for (auto [i, o] : llvm::enumerate(m.op.getDpsInitsMutable())) {
      BlockArgument arg = m.op.getMatchingBlockArgument(&o);
      if (!accs.empty()) map.map(arg, accs[i]);
      else if (!arg.use_empty() && !m.reduction) map.map(arg, read(m, o, loops));
    }
    for (Operation& op : body->without_terminator()) {
      if (llvm::is_contained(skip, &op)) continue;
      if (auto i = dyn_cast<linalg::IndexOp>(op)) {
        map.map(i.getResult(), loops[i.getDim()]);
        continue;
      }
      b_.clone(op, map);
    }
    SmallVector<Value> yielded;
    for (Value v : body->getTerminator()->getOperands()) yielded.push_back(map.lookupOrDefault(v));
    if (out_map) *out_map = map;
    return yielded;
  }

  void store(const Member& m, ArrayRef<Value> values, ArrayRef<Value> loops) {
    for (auto [o, v] : llvm::zip(m.op.getDpsInitsMutable(), values))
      b_.create<memref::StoreOp>(loc_, v, o.get(), apply(m.op.getMatchingIndexingMap(&o), loops));
  }

  // An elementwise member: threads stride over its inner elements (a row-only member: thread 0).
  void elementwise(const Member& m) {
    OpBuilder::InsertionGuard g(b_);
    SmallVector<Value> loops(rows_);
    if (m.inner.empty()) {
      b_.setInsertionPoint(thread_zero().thenBlock()->getTerminator());
    } else {
      auto loop = b_.create<scf::ForOp>(loc_, thread_, index(product(m.inner)), index(threads_));
      b_.setInsertionPoint(loop.getBody()->getTerminator());
      loops.append(delinearize(loop.getInductionVar(), m.inner));
    }
    store(m, compute(m, loops, {}), loops);
  }

  // A reduction member: private partials, the block's all-reduce, thread 0 folds into out[row].
  void reduce(const Member& m) {
    if (m.arg) return reduce_arg(m);
    fold_into_outputs(m, totals(m, thread_, index(threads_)));
  }

  // argmax/argmin: each thread runs the op's own body over its elements t, t + T, ... (in order,
  // so a tie keeps its first index and a NaN its first) from the outputs' placeholders (the fills';
  // a thread whose elements never beat them keeps index 0, which is right: then every element is
  // the placeholder and the answer is 0). The block's best value is an all-reduce of the threads'
  // bests (max/min propagating NaN, as the body prefers a NaN); the index, the least index of a
  // thread whose best is that value (a NaN for a NaN), a second all-reduce.
  void reduce_arg(const Member& m) {
    SmallVector<Value> init;
    for (OpOperand& o : m.op.getDpsInitsMutable())
      init.push_back(b_.create<memref::LoadOp>(loc_, o.get(), apply(m.op.getMatchingIndexingMap(&o), rows_)));
    auto loop = b_.create<scf::ForOp>(loc_, thread_, index(product(m.inner)), index(threads_), init);
    {
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> loops(rows_);
      loops.push_back(loop.getInductionVar());
      b_.create<scf::YieldOp>(loc_, compute(m, loops, {}, nullptr, loop.getRegionIterArgs()));
    }
    Value best = loop.getResult(0), at = loop.getResult(1);
    Value total = all_reduce(Combiner{nullptr, 0, *m.arg}, best);
    Value mine;
    if (isa<FloatType>(best.getType())) {
      auto cmp = [&](arith::CmpFPredicate p, Value x, Value y) { return b_.create<arith::CmpFOp>(loc_, p, x, y); };
      Value both_nan = b_.create<arith::AndIOp>(loc_, cmp(arith::CmpFPredicate::UNO, best, best),
                                               cmp(arith::CmpFPredicate::UNO, total, total));
      mine = b_.create<arith::OrIOp>(loc_, cmp(arith::CmpFPredicate::OEQ, best, total), both_nan);
    } else {
      mine = b_.create<arith::CmpIOp>(loc_, arith::CmpIPredicate::eq, best, total);
    }
    Value at32 = b_.create<arith::TruncIOp>(loc_, b_.getI32Type(), at);
    Value none = b_.create<arith::ConstantOp>(loc_, b_.getI32IntegerAttr(std::numeric_limits<int32_t>::max()));
    Value first = all_reduce(Combiner{nullptr, 0, gpu::AllReduceOperation::MINSI},
                             b_.create<arith::SelectOp>(loc_, mine, at32, none));
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPoint(thread_zero().thenBlock()->getTerminator());
    Value results[2] = {total, b_.create<arith::ExtSIOp>(loc_, b_.getI64Type(), first)};
    for (auto [o, v] : llvm::zip(m.op.getDpsInitsMutable(), results))
      b_.create<memref::StoreOp>(loc_, v, o.get(), apply(m.op.getMatchingIndexingMap(&o), rows_));
  }

 public:
  // A split reduction's first launch: this block is part `part` of its row's `parts`; its threads
  // fold the elements part * T + t, then every parts * T on, and thread 0 stores the block's
  // totals at partials[i][row * parts + part].
  void partial_totals(const Member& m, Value part, int64_t parts, ArrayRef<Value> partials) {
    Value start = b_.create<arith::AddIOp>(loc_, b_.create<arith::MulIOp>(loc_, part, index(threads_)), thread_);
    SmallVector<Value> t = totals(m, start, index(parts * threads_));
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPoint(thread_zero().thenBlock()->getTerminator());
    Value at = b_.create<arith::AddIOp>(loc_, b_.create<arith::MulIOp>(loc_, row_, index(parts)), part);
    for (auto [p, v] : llvm::zip(partials, t)) b_.create<memref::StoreOp>(loc_, v, p, ValueRange{at});
  }

  // Its second launch, one block per row: the row's `parts` partial totals folded into out[row].
  void fold_partials(const Member& m, int64_t parts, ArrayRef<Value> partials) {
    SmallVector<Value> init;
    for (const Combiner& c : m.combiners) init.push_back(identity(b_, loc_, c.kind, c.op->getResult(0).getType()));
    auto loop = b_.create<scf::ForOp>(loc_, thread_, index(parts), index(threads_), init);
    {
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(loop.getBody());
      Value at = b_.create<arith::AddIOp>(loc_, b_.create<arith::MulIOp>(loc_, row_, index(parts)), loop.getInductionVar());
      SmallVector<Value> next;
      for (auto [i, c] : llvm::enumerate(m.combiners))
        next.push_back(combine(c, loop.getRegionIterArgs()[i], b_.create<memref::LoadOp>(loc_, partials[i], ValueRange{at})));
      b_.create<scf::YieldOp>(loc_, next);
    }
    SmallVector<Value> t;
    for (auto [i, c] : llvm::enumerate(m.combiners)) t.push_back(all_reduce(c, loop.getResult(unsigned(i))));
    fold_into_outputs(m, t);
  }

 private:
  scf::IfOp thread_zero() {
    Value first = b_.create<arith::CmpIOp>(loc_, arith::CmpIPredicate::eq, thread_, index(0));
    return b_.create<scf::IfOp>(loc_, first, /*withElseRegion=*/false);
  }

  // The block's totals of a reduction member over its inner elements start, start + step, ...
  SmallVector<Value> totals(const Member& m, Value start, Value step) {
    SmallVector<Operation*> combiners;
    SmallVector<Value> init;
    for (const Combiner& c : m.combiners) {
      combiners.push_back(c.op);
      init.push_back(identity(b_, loc_, c.kind, c.op->getResult(0).getType()));
    }
    auto loop = b_.create<scf::ForOp>(loc_, start, index(product(m.inner)), step, init);
    {
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> loops(rows_);
      loops.append(delinearize(loop.getInductionVar(), m.inner));
      IRMapping map;
      compute(m, loops, combiners, &map);
      SmallVector<Value> next;
      for (auto [i, c] : llvm::enumerate(m.combiners)) {
        Value v = map.lookupOrDefault(c.op->getOperand(1 - c.acc_operand));
        next.push_back(combine(c, loop.getRegionIterArgs()[i], v));
      }
      b_.create<scf::YieldOp>(loc_, next);
    }
    SmallVector<Value> out;
    for (auto [i, c] : llvm::enumerate(m.combiners)) out.push_back(all_reduce(c, loop.getResult(unsigned(i))));
    return out;
  }

  // Thread 0: out[row] = C(out[row], total) for each output.
  void fold_into_outputs(const Member& m, ArrayRef<Value> totals) {
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPoint(thread_zero().thenBlock()->getTerminator());
    for (auto [o, c, total] : llvm::zip(m.op.getDpsInitsMutable(), m.combiners, totals)) {
      SmallVector<Value> at = apply(m.op.getMatchingIndexingMap(&o), rows_);
      Value acc = b_.create<memref::LoadOp>(loc_, o.get(), at);
      b_.create<memref::StoreOp>(loc_, combine(c, acc, total), o.get(), at);
    }
  }

  // c's op on (acc, v), in the original operand order.
  Value combine(const Combiner& c, Value acc, Value v) {
    Operation* op = b_.clone(*c.op);
    op->setOperand(c.acc_operand, acc);
    op->setOperand(1 - c.acc_operand, v);
    return op->getResult(0);
  }

  // gpu.all_reduce of a partial; integers narrower than 32 bits are widened for the shuffles
  // (signed ones by sign for the signed max/min) and narrowed after.
  Value all_reduce(const Combiner& c, Value partial) {
    Type t = partial.getType();
    using K = gpu::AllReduceOperation;
    Value v = partial;
    const bool narrow_int = isa<IntegerType>(t) && t.getIntOrFloatBitWidth() < 32;
    const bool narrow_float = isa<FloatType>(t) && t.getIntOrFloatBitWidth() < 32;
    if (narrow_int) {
      const bool sign = c.kind == K::MAXSI || c.kind == K::MINSI;
      v = sign ? Value(b_.create<arith::ExtSIOp>(loc_, b_.getI32Type(), v)) : Value(b_.create<arith::ExtUIOp>(loc_, b_.getI32Type(), v));
    } else if (narrow_float) {
      v = b_.create<arith::ExtFOp>(loc_, b_.getF32Type(), v);
    }
    Value r = b_.create<gpu::AllReduceOp>(loc_, v, gpu::AllReduceOperationAttr::get(b_.getContext(), c.kind),
                                         /*uniform=*/b_.getUnitAttr());
    if (narrow_int) r = b_.create<arith::TruncIOp>(loc_, t, r);
    if (narrow_float) r = b_.create<arith::TruncFOp>(loc_, t, r);
    return r;
  }

  OpBuilder& b_;
  Location loc_;
  RowKernel& k_;
  Value thread_;
  int64_t threads_;
  Value row_;
  SmallVector<Value> rows_;
  std::map<void*, const Member*> producer_;  // virtual temporaries by root
};

struct GpuRowsPass : public PassWrapper<GpuRowsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuRowsPass)
  StringRef getArgument() const final { return "fx-gpu-rows"; }
  StringRef getDescription() const final { return "inner reductions and their row neighbours -> one block per row"; }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<gpu::GPUDialect, scf::SCFDialect, memref::MemRefDialect, affine::AffineDialect, arith::ArithDialect>();
  }

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal() || fn.isPrivate()) return;  // a declaration, a library call's wrapper
    Block& block = fn.getBody().front();
    std::set<Operation*> taken;
    SmallVector<Operation*> ops;
    for (Operation& op : block) ops.push_back(&op);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (taken.count(ops[i])) continue;
      auto anchor = as_anchor(ops[i]);
      if (!anchor) continue;
      const int64_t parts = split_parts(*anchor);
      RowKernel k = grow(ops, i, *anchor, taken, parts > 1);
      for (const Member& m : k.members) taken.insert(m.op);
      if (parts > 1) split_anchor(k, *anchor, parts);
      emit(k);
    }
  }

  static std::optional<Member> as_anchor(Operation* op) {
    auto l = dyn_cast<linalg::LinalgOp>(op);
    if (!l) return std::nullopt;
    auto loops = loops_of(l);
    if (!loops) return std::nullopt;
    auto it = l.getIteratorTypesArray();
    const size_t reduced = size_t(llvm::count(it, utils::IteratorType::reduction));
    if (reduced == 0) return std::nullopt;
    auto m = member_over(l, ArrayRef<int64_t>(*loops).drop_back(reduced));
    if (!m || product(m->inner) < kMinRow || product(ArrayRef<int64_t>(*loops).drop_back(reduced)) >= (int64_t(1) << 31))
      return std::nullopt;
    return m;
  }

  // The anchor and its neighbours over the same rows: backwards, then forwards, over passive ops.
  // A split anchor's totals are made by a launch before the kernel: no member before it may then
  // write what it reads.
  RowKernel grow(ArrayRef<Operation*> ops, size_t at, const Member& anchor, const std::set<Operation*>& taken,
                 bool split) {
    std::set<void*> anchor_reads;
    for (OpOperand* in : anchor.op.getDpsInputOperands())
      if (isa<MemRefType>(in->get().getType())) anchor_reads.insert(root_of(in->get()).getAsOpaquePointer());
    RowKernel k;
    auto loops = *loops_of(anchor.op);
    k.rows.assign(loops.begin(), loops.end() - int64_t(anchor.inner.size()));
    SmallVector<Member> before, after;
    auto try_add = [&](Operation* op, bool front) {
      auto l = dyn_cast<linalg::LinalgOp>(op);
      if (!l) return false;
      auto m = member_over(l, k.rows);
      if (!m) return false;
      if (front && split && llvm::any_of(l.getDpsInitsMutable(), [&](OpOperand& o) {
            return anchor_reads.count(root_of(o.get()).getAsOpaquePointer()) != 0;
          }))
        return false;
      SmallVector<Member> trial;
      if (front) trial.push_back(*m);
      trial.append(before.rbegin(), before.rend());
      trial.push_back(anchor);
      trial.append(after.begin(), after.end());
      if (!front) trial.push_back(*m);
      if (!row_local(trial, k.rows)) return false;
      (front ? before : after).push_back(*m);
      return true;
    };
    // (ops already taken by a kernel were erased: the walk stops at them)
    for (size_t i = at; i-- > 0 && !taken.count(ops[i]);)
      if (!passive(ops[i]) && !try_add(ops[i], true)) break;
    for (size_t i = at + 1; i < ops.size() && !taken.count(ops[i]); ++i)
      if (!passive(ops[i]) && !try_add(ops[i], false)) break;
    k.members.append(before.rbegin(), before.rend());
    k.members.push_back(anchor);
    k.members.append(after.begin(), after.end());
    mark_virtual(k);
    return k;
  }

  // An elementwise member writing a temporary that only later members read, each at the element
  // its producer wrote, from inputs no member writes: recomputed where it is read.
  static void mark_virtual(RowKernel& k) {
    auto writes = [&](size_t j, void* root) {
      return llvm::any_of(k.members[j].op.getDpsInitsMutable(),
                          [&](OpOperand& o) { return root_of(o.get()).getAsOpaquePointer() == root; });
    };
    for (size_t i = 0; i < k.members.size(); ++i) {
      Member& p = k.members[i];
      if (p.reduction || p.op.getNumDpsInits() != 1 || p.inner.empty()) continue;
      OpOperand* out = p.op.getDpsInitOperand(0);
      auto alloc = out->get().getDefiningOp<memref::AllocOp>();
      if (!alloc || !p.op.getMatchingIndexingMap(out).isIdentity() || !p.op.getMatchingBlockArgument(out).use_empty())
        continue;
      // Every other use: a later member reading it as an input at its own loops.
      size_t last = i;
      bool ok = true;
      for (OpOperand& use : alloc->getUses()) {
        if (use.getOwner() == p.op.getOperation()) continue;
        auto reader = llvm::find_if(k.members, [&](const Member& m) { return m.op.getOperation() == use.getOwner(); });
        const size_t j = size_t(reader - k.members.begin());
        if (reader == k.members.end() || j <= i || !reader->op.isDpsInput(&use) ||
            reader->op.getMatchingIndexingMap(&use) != p.op.getMatchingIndexingMap(out) ||
            reader->op.getNumLoops() != p.op.getNumLoops()) {
          ok = false;
          break;
        }
        last = std::max(last, j);
      }
      // Its inputs hold the same values up to the last reader.
      for (OpOperand* in : p.op.getDpsInputOperands())
        for (size_t j = i + 1; ok && j <= last && isa<MemRefType>(in->get().getType()); ++j)
          if (writes(j, root_of(in->get()).getAsOpaquePointer())) ok = false;
      if (ok) p.virtual_ = true;
    }
  }

  // Into how many blocks each row of a reduction is split: few long rows would leave most of the
  // GPU idle with a block per row (a full reduction: one block); each block should still have at
  // least kPerThread elements per thread.
  static int64_t split_parts(const Member& m) {
    if (m.arg) return 1;  // (its partials would be pairs: not split yet)
    const int64_t rows = product(ArrayRef<int64_t>(*loops_of(m.op)).drop_back(int64_t(m.inner.size())));
    const int64_t n = product(m.inner);
    return std::min((n + kMaxThreads * kPerThread - 1) / (kMaxThreads * kPerThread), std::max<int64_t>(1, kBlocksWanted / rows));
  }

  // A split reduction: a launch where `parts` blocks per row each store their totals in a
  // temporary, placed where the anchor was; the row kernel then folds them (KernelBuilder::build).
  void split_anchor(RowKernel& k, const Member& anchor, int64_t parts) {
    const Member* m = &*llvm::find_if(k.members, [&](const Member& x) { return x.op == anchor.op; });
    k.split = m;
    k.parts = parts;
    OpBuilder b(m->op);
    const Location loc = m->op.getLoc();
    const int64_t rows = product(k.rows);
    for (const Combiner& c : m->combiners)
      k.partials.push_back(b.create<memref::AllocOp>(loc, MemRefType::get({rows * parts}, c.op->getResult(0).getType())));
    auto c = [&](int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v).getResult(); };
    auto launch = b.create<gpu::LaunchOp>(loc, c(rows * parts), c(1), c(1), c(kMaxThreads), c(1), c(1));
    OpBuilder kb = OpBuilder::atBlockEnd(&launch.getBody().front());
    Value bx = launch.getBlockIds().x;
    Value row = kb.create<arith::DivUIOp>(loc, bx, kb.create<arith::ConstantIndexOp>(loc, parts));
    Value part = kb.create<arith::RemUIOp>(loc, bx, kb.create<arith::ConstantIndexOp>(loc, parts));
    KernelBuilder(kb, loc, k, row, launch.getThreadIds().x, kMaxThreads).partial_totals(*m, part, parts, k.partials);
    kb.create<gpu::TerminatorOp>(loc);
  }

  void emit(RowKernel& k) {
    Operation* last = k.members.back().op;
    OpBuilder b(last);
    const Location loc = k.members.front().op.getLoc();
    int64_t widest = 1;
    for (const Member& m : k.members) widest = std::max(widest, &m == k.split ? k.parts : product(m.inner));
    const int64_t threads = std::min(kMaxThreads, (widest + 31) / 32 * 32);
    Value one = b.create<arith::ConstantIndexOp>(loc, 1);
    Value grid = b.create<arith::ConstantIndexOp>(loc, product(k.rows));
    Value block = b.create<arith::ConstantIndexOp>(loc, threads);
    auto launch = b.create<gpu::LaunchOp>(loc, grid, one, one, block, one, one);
    Block& body = launch.getBody().front();
    OpBuilder kb = OpBuilder::atBlockEnd(&body);
    KernelBuilder(kb, loc, k, launch.getBlockIds().x, launch.getThreadIds().x, threads).build();
    kb.create<gpu::TerminatorOp>(loc);
    for (const Member& m : k.members) m.op->erase();
  }
};

}  // namespace

void register_gpu_rows_pass() { PassRegistration<GpuRowsPass>(); }

}  // namespace fluxion::lowering
