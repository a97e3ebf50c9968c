// Collapsing loop dims of all-parallel generics before tiling (tiling.h), so that short innermost
// loops vectorize by whole vectors.
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/Linalg/Transforms/Transforms.h>
#include <mlir/Dialect/Tensor/IR/Tensor.h>

#include <vector>

#include "lowering/tiling.h"

namespace fluxion::lowering {

using namespace mlir;

void drop_unit_dims_of_inputs(linalg::GenericOp g, OpBuilder& b) {
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  for (OpOperand* in : g.getDpsInputOperands()) {
    AffineMap m = g.getMatchingIndexingMap(in);
    auto t = dyn_cast<RankedTensorType>(in->get().getType());
    if (!t) continue;
    SmallVector<AffineExpr> kept;
    SmallVector<int64_t> shape;
    SmallVector<ReassociationIndices> groups;
    ReassociationIndices pending;
    bool unit = false, other_constant = false;
    for (unsigned i = 0; i < m.getNumResults(); ++i) {
      pending.push_back(int64_t(i));
      if (auto c = dyn_cast<AffineConstantExpr>(m.getResult(i))) {
        unit = true;
        other_constant = other_constant || c.getValue() != 0 || t.getDimSize(i) != 1;
        continue;
      }
      groups.push_back(pending);
      pending.clear();
      kept.push_back(m.getResult(i));
      shape.push_back(t.getDimSize(i));
    }
    if (!unit || other_constant) continue;
    if (!pending.empty() && !groups.empty()) groups.back().append(pending.begin(), pending.end());
    in->set(b.create<tensor::CollapseShapeOp>(g.getLoc(), RankedTensorType::get(shape, t.getElementType()), in->get(), groups));
    maps[in->getOperandNumber()] = AffineMap::get(m.getNumDims(), 0, kept, g.getContext());
  }
  g.setIndexingMapsAttr(b.getAffineMapArrayAttr(maps));
}

namespace {

// The widest vector tile of an elementwise loop (tiling.cpp's VectorShape): an innermost loop at
// least this long already vectorizes by whole tiles.
constexpr int64_t kShortLoop = 64;

// Every map reads the loops of `run` in order and adjacently, or none of them. A map with a
// constant result (a unit dim read at 0) takes drop_unit_dims_of_inputs first; anything but
// loop dims and such constants keeps its loops.
bool contiguous_in_every_map(linalg::GenericOp g, const ReassociationIndices& run) {
  for (AffineMap m : g.getIndexingMapsArray())
    for (AffineExpr e : m.getResults())
      if (!isa<AffineDimExpr>(e) && !isa<AffineConstantExpr>(e)) return false;
  return linalg::areDimSequencesPreserved(g.getIndexingMapsArray(), {run});
}

// The longest run of trailing loops (two or more) that collapses into one. Loop 0 joins only
// below kWholeBelow: the row tile-and-fuse (tiling.h) needs every generic of a softmax over
// [N, 32] to keep its N rows.
constexpr int64_t kWholeBelow = 8;
ReassociationIndices trailing_run(linalg::GenericOp g) {
  const int64_t n = g.getNumLoops();
  const int64_t lowest = g.getStaticLoopRanges().back() < kWholeBelow ? 0 : 1;
  ReassociationIndices best;
  for (int64_t first = n - 2; first >= lowest; --first) {
    ReassociationIndices run;
    for (int64_t d = first; d < n; ++d) run.push_back(d);
    if (!contiguous_in_every_map(g, run)) break;
    best = run;
  }
  return best;
}

}  // namespace

void collapse_short_elementwise_loops(ModuleOp module) {
  std::vector<linalg::GenericOp> candidates;
  module.walk([&](linalg::GenericOp g) {
    if (!g.hasPureTensorSemantics() || g.getNumReductionLoops() != 0 || g.getNumLoops() < 2) return;
    SmallVector<int64_t> ranges = g.getStaticLoopRanges();
    for (int64_t r : ranges)
      if (r <= 0) return;  // dynamic or empty
    if (ranges.back() >= kShortLoop) return;
    for (OpOperand& init : g.getDpsInitsMutable())
      if (!g.getMatchingIndexingMap(&init).isProjectedPermutation()) return;
    // A body that reads its loop indices (a gather: rev of a conv weight, [512, 512, 3, 3]) would
    // recover them from the collapsed index with a divide and a remainder per dim and element:
    // collapsed, the weight flips of the ResNet-18 bf16 step's input gradients ran at 1.7-1.9 GB/s.
    bool indexed = false;
    g.getBody()->walk([&](linalg::IndexOp) { indexed = true; });
    if (indexed) return;
    candidates.push_back(g);
  });
  IRRewriter rewriter(module.getContext());
  for (linalg::GenericOp g : candidates) {
    if (trailing_run(g).empty()) continue;
    rewriter.setInsertionPoint(g);
    drop_unit_dims_of_inputs(g, rewriter);
    ReassociationIndices run = trailing_run(g);
    bool constants = false;
    for (AffineMap m : g.getIndexingMapsArray())
      for (AffineExpr e : m.getResults()) constants = constants || isa<AffineConstantExpr>(e);
    if (run.empty() || constants) continue;
    rewriter.setInsertionPoint(g);
    FailureOr<linalg::CollapseResult> r = linalg::collapseOpIterationDims(g, {run}, rewriter);
    if (succeeded(r)) rewriter.replaceOp(g, r->results);
  }
}

}  // namespace fluxion::lowering
