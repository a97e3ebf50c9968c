// fx-fuse-elementwise: producer -> consumer fusion of linalg.generic ops (MLIR's elementwise fusion
// patterns, elementwise producers fused into reductions too), with rules of ours (below).
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/Linalg/Transforms/Transforms.h>
#include <mlir/Dialect/Tensor/IR/Tensor.h>
#include <mlir/IR/IRMapping.h>
#include <mlir/IR/TypeUtilities.h>
#include <mlir/Pass/Pass.h>
#include <mlir/Transforms/GreedyPatternRewriteDriver.h>


#include <optional>

#include "lowering/op_cost.h"
#include "lowering/passes.h"
#include "lowering/tiling.h"

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

// A generic that only broadcasts its one input (every loop parallel, the body `yield %in`, the
// input's map drops dims of the loops). One used by several generics is cloned per user
// first, so that each copy fuses into its user: fusion takes single-use producers only, and a
// broadcast of per-channel batch-norm scales to [N, C, H, W] used by the forward and the backward
// pass was written out in full (40 such tensors, 0.6 GB per ResNet-18 step) and read back.
bool is_broadcast_copy(linalg::GenericOp g) {
  if (g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 || g->getNumResults() != 1) return false;
  for (utils::IteratorType t : g.getIteratorTypesArray())
    if (t != utils::IteratorType::parallel) return false;
  // Dims dropped, none reordered: a transposed copy stays materialized (its users would read it
  // across rows; reductions of transposed inputs have their own loop order, docs/jit.md). Unit dims
  // of the input read at 0 ((0, d1, 0, 0): per-channel values kept as [1, C, 1, 1]) count as
  // dropped; those broadcasts were 0.67 GB of the ResNet-18 f32 step's writes before this.
  AffineMap in = g.getIndexingMapsArray()[0];
  int64_t prev = -1, dims = 0;
  for (AffineExpr e : in.getResults()) {
    if (auto c = dyn_cast<AffineConstantExpr>(e)) {
      if (c.getValue() != 0) return false;
      continue;
    }
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || int64_t(d.getPosition()) <= prev) return false;
    prev = d.getPosition();
    ++dims;
  }
  if (dims >= int64_t(in.getNumDims())) return false;
  Block& body = g.getRegion().front();
  auto yield = dyn_cast<linalg::YieldOp>(body.front());
  return yield && yield.getNumOperands() == 1 && yield.getOperand(0) == body.getArgument(0);
}

// A cheap elementwise value (a few arith ops) that reads at most one operand at full size (batch
// norm's x - mean): recomputed by each user it costs no more reads than reading it back, and it is
// not written at all. Cloned per user like the broadcasts (a broadcast it reads fuses into it and
// does not count); x - mean was written in full and read back by the variance's reduction and the
// normalization.
constexpr int64_t kMaxRecomputedCost = 8;
bool is_cheap_to_recompute(linalg::GenericOp g) {
  if (g.getNumDpsInits() != 1 || g->getNumResults() != 1 || g.getNumReductionLoops() > 0) return false;
  if (!g.getIndexingMapsArray().back().isIdentity()) return false;
  if (cost_of(g) > kMaxRecomputedCost || calls_out(g)) return false;
  if (g.getNumDpsInputs() == 0) return false;  // fills and iotas
  for (OpOperand& use : g->getResult(0).getUses()) {  // read by generics, not accumulated into
    auto user = dyn_cast<linalg::GenericOp>(use.getOwner());
    if (!user || !user.isDpsInput(&use)) return false;
  }
  int full = 0;
  for (OpOperand* in : g.getDpsInputOperands()) {
    auto def = in->get().getDefiningOp<linalg::GenericOp>();
    if (def && is_broadcast_copy(def)) continue;  // fuses in: read at its own size
    AffineMap m = g.getMatchingIndexingMap(in);
    if (m.getNumResults() != g.getNumLoops()) continue;
    if (!m.isIdentity()) return false;  // a transposed copy stays shared (above)
    ++full;
  }
  return full <= 1;
}

// A result of a multi-result elementwise generic that is a cheap function of another of its results
// alone (batch norm's 2 (x - mean) next to x - mean, grouped by fx-group-elementwise because both
// are computed together in the forward pass and read in the backward): its own generic reading
// that result, which is cheap to recompute and is cloned into each user like the values above,
// instead of a second full-size tensor written in the forward pass and read back. Only when every
// user is a generic (it fuses there; a library call would read it from memory anyway).
constexpr int64_t kMaxSplitCost = 8;
std::optional<unsigned> source_result(linalg::GenericOp g, unsigned k, SmallVector<Operation*>& slice) {
  Block& body = g.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Value v = yield.getOperand(k);
  Operation* def = v.getDefiningOp();
  if (!def || def->getBlock() != &body) return std::nullopt;
  std::optional<unsigned> source;
  SmallVector<Operation*> work{def};
  llvm::SmallPtrSet<Operation*, 16> seen;
  while (!work.empty()) {
    Operation* op = work.pop_back_val();
    if (!seen.insert(op).second) continue;
    if (op->getNumRegions() != 0 || isa<func::CallOp>(op)) return std::nullopt;
    slice.push_back(op);
    for (Value in : op->getOperands()) {
      for (unsigned j = 0; j < yield.getNumOperands(); ++j)
        if (j != k && in == yield.getOperand(j) && (!source || *source == j)) source = j;
      if (source && in == yield.getOperand(*source)) continue;
      if (isa<BlockArgument>(in)) return std::nullopt;  // reads an input of g
      Operation* d = in.getDefiningOp();
      if (d && d->getBlock() == &body) work.push_back(d);  // constants from outside are fine
    }
  }
  if (!source || int64_t(slice.size()) + 1 > kMaxSplitCost) return std::nullopt;
  llvm::sort(slice, [](Operation* a, Operation* b) { return a->isBeforeInBlock(b); });
  return source;
}

void split_recomputable_results(Operation* root) {
  SmallVector<linalg::GenericOp> multi;
  root->walk([&](linalg::GenericOp g) {
    if (g.hasPureTensorSemantics() && g->getNumResults() > 1 && g.getNumReductionLoops() == 0) multi.push_back(g);
  });
  for (linalg::GenericOp g : multi) {
    SmallVector<AffineMap> maps = g.getIndexingMapsArray();
    for (unsigned k = 0; k < g->getNumResults(); ++k) {
      Value r = g->getResult(k);
      if (r.use_empty() || !maps[g.getNumDpsInputs() + k].isIdentity()) continue;
      bool generic_users = true;
      for (OpOperand& use : r.getUses()) {
        auto user = dyn_cast<linalg::GenericOp>(use.getOwner());
        generic_users = generic_users && user && user.isDpsInput(&use);
      }
      SmallVector<Operation*> slice;
      std::optional<unsigned> j = generic_users ? source_result(g, k, slice) : std::nullopt;
      if (!j || !maps[g.getNumDpsInputs() + *j].isIdentity()) continue;
      OpBuilder b(g->getContext());
      b.setInsertionPointAfter(g);
      Block& body = g.getRegion().front();
      Value from = body.getTerminator()->getOperand(*j), to = body.getTerminator()->getOperand(k);
      Value init = b.create<tensor::EmptyOp>(g.getLoc(), tensor::getMixedSizes(b, g.getLoc(), r),
                                             getElementTypeOrSelf(r.getType()));
      AffineMap id = maps[g.getNumDpsInputs() + k];
      auto split = b.create<linalg::GenericOp>(
          g.getLoc(), TypeRange{r.getType()}, ValueRange{g->getResult(*j)}, ValueRange{init}, ArrayRef<AffineMap>{id, id},
          g.getIteratorTypesArray(), [&](OpBuilder& nb, Location l, ValueRange args) {
            IRMapping map;
            map.map(from, args[0]);
            for (Operation* op : slice) nb.clone(*op, map);
            nb.create<linalg::YieldOp>(l, map.lookupOrDefault(to));
          });
      r.replaceAllUsesWith(split->getResult(0));
    }
  }
}

// Users first: a clone of a recomputed value adds users to the values it reads, which are cloned
// for them in turn (and broadcasts, after all of them).
void clone_per_user(Operation* root, bool (*pred)(linalg::GenericOp)) {
  SmallVector<linalg::GenericOp> shared;
  root->walk([&](linalg::GenericOp g) { shared.push_back(g); });
  for (linalg::GenericOp g : llvm::reverse(shared)) {
    if (!pred(g) || g->getResult(0).hasOneUse()) continue;
    OpBuilder b(g->getContext());
    b.setInsertionPointAfter(g);
    SmallVector<OpOperand*> users;
    bool others = false;  // a user that is not a generic keeps the original; else the first generic does
    for (OpOperand& use : g->getResult(0).getUses()) {
      if (isa<linalg::GenericOp>(use.getOwner())) users.push_back(&use);
      else others = true;
    }
    for (size_t i = others ? 0 : 1; i < users.size(); ++i) users[i]->set(b.clone(*g)->getResult(0));
  }
}

// A reduction whose innermost loops are several reduced dims read in order by every operand (the
// first stage of a two-stage reduction, lower_reduce.cpp, built on the operand's own dims so that
// its producers fuse into it) runs them as one row: as nested loops it ran 20x slower. Reductions
// of everything keep their dims (they have their own fused form).
void merge_inner_reduced_dims(Operation* root) {
  SmallVector<linalg::GenericOp> candidates;
  root->walk([&](linalg::GenericOp g) { candidates.push_back(g); });
  IRRewriter rewriter(root->getContext());
  for (linalg::GenericOp g : candidates) {
    SmallVector<utils::IteratorType> it = g.getIteratorTypesArray();
    ReassociationIndices run;
    for (int64_t d = int64_t(it.size()) - 1; d >= 0 && it[size_t(d)] == utils::IteratorType::reduction; --d)
      run.insert(run.begin(), d);
    if (run.size() < 2 || run.size() == it.size()) continue;
    // No operand to read in order (a GPU window reads by computed index: gpu_windows.h), and
    // MLIR's collapse crashes on such a generic.
    if (g.getNumDpsInputs() == 0) continue;
    SmallVector<ReassociationIndices> folded{run};
    rewriter.setInsertionPoint(g);
    drop_unit_dims_of_inputs(g, rewriter);
    if (!linalg::areDimSequencesPreserved(g.getIndexingMapsArray(), folded)) continue;
    rewriter.setInsertionPoint(g);
    FailureOr<linalg::CollapseResult> r = linalg::collapseOpIterationDims(g, folded, rewriter);
    if (succeeded(r)) rewriter.replaceOp(g, r->results);
  }
}

// A producer read by its consumer through a broadcast (the map drops loops of the consumer: per-channel
// values over [N, C, H, W]) is recomputed by the fused loop for every element it is broadcast to.
// One that divides or calls math (batch norm's rsqrt(var / n + eps), its mean) stays a loop over its
// own few elements: fused, the ResNet-18 bf16 step's normalizations ran a divide, a square root and
// another divide (and, in bfloat16, four roundings) per element, and its forward batch norm took
// longer than in f32 with half the bytes. Cheap ones (a subtract, a multiply) still fuse.
constexpr int64_t kMaxBroadcastRecomputedCost = 8;
bool costly_to_broadcast(Operation* producer, OpOperand* fused) {
  auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
  if (!consumer) return false;
  AffineMap m = consumer.getMatchingIndexingMap(fused);
  if (m.getNumResults() == consumer.getNumLoops() && m.isPermutation()) return false;
  if (cost_of(producer) > kMaxBroadcastRecomputedCost) return true;
  bool heavy = false;
  producer->walk([&](Operation* op) {
    heavy = heavy || isa<arith::DivFOp, arith::RemFOp, arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp>(op) ||
            (op->getDialect() && op->getDialect()->getNamespace() == "math");
  });
  return heavy;
}

// A generic whose results depend on neither its operands nor its position: it yields constants
// (integer_pow(x, 0) is 1 everywhere). Fused into a reduction, it leaves a body that accumulates a
// loop invariant, which MLIR's vectorizer turns into one accumulation for the whole loop:
// sum(integer_pow(x, 0)) over 4 elements gave 1 (issue 35). It stays a loop of its own.
bool yields_invariant(Operation* producer) {
  auto g = dyn_cast<linalg::GenericOp>(producer);
  if (!g) return false;
  Block& body = g.getRegion().front();
  SmallVector<Value> work(body.getTerminator()->getOperands());
  llvm::SmallPtrSet<Operation*, 16> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() == &body) return false;
      continue;
    }
    Operation* def = v.getDefiningOp();
    if (!def || def->getBlock() != &body || !seen.insert(def).second) continue;
    if (isa<linalg::IndexOp>(def) || def->getNumRegions() != 0) return false;
    for (Value in : def->getOperands()) work.push_back(in);
  }
  return true;
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
      if (consumer && consumer.getNumReductionLoops() > 0 && (calls_out(producer) || yields_invariant(producer))) return false;
      return !costly_to_broadcast(producer, fused);
    };
    split_recomputable_results(getOperation());
    clone_per_user(getOperation(), &is_cheap_to_recompute);
    clone_per_user(getOperation(), &is_broadcast_copy);
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
    merge_inner_reduced_dims(getOperation());
  }
};

}  // namespace

void register_fuse_elementwise_pass() { PassRegistration<FuseElementwisePass>(); }

}  // namespace fluxion::lowering
