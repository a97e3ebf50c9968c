// The tiling plan. After fusion each linalg.generic is one loop nest; its plan, from its loop
// ranges and iterator kinds:
//   * threads (num_threads > 1, enough work, outermost loop parallel): scf.forall over chunks of
//     the outermost loop, a divisor of its extent so the chunks keep static shapes;
//   * vector tile: every loop tiled by 1 except the innermost parallel loop, tiled by its extent or
//     the largest divisor <= 64 (32 under a contraction), so tiles are static and vectorize;
//   * row reductions (one innermost reduction loop that every operand reads contiguously): rows in
//     blocks of 8, the reduction in steps of up to 64 (a vector<8x64> multi_reduction per step,
//     accumulators hoisted into registers);
//   * contractions: the parallel loop before the innermost parallel one in blocks of 8 (an 8xN
//     register tile of outer-product FMAs);
//   * several results (argmax): scalar tiles.
// Then the whole function is vectorized (vectorize_children_and_apply_patterns). Ops the vectorizer
// cannot handle (libm calls, non-permutation maps) stay as scalar loops -- correct, only slower.
#include "lowering/tiling.h"

#include <mlir/Dialect/Linalg/IR/Linalg.h>

#include <sstream>

namespace fluxion::lowering {

using namespace mlir;

namespace {

int64_t largest_divisor_at_most(int64_t n, int64_t cap) {
  if (n <= cap) return n;
  for (int64_t d = cap; d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

struct Plan {
  int64_t forall_chunk = 0;   // tile of loop 0 for scf.forall (0: no threads)
  std::vector<int64_t> tile;  // scf.for tile sizes (all 0: none)
};

Plan plan_for(linalg::GenericOp g, int num_threads) {
  Plan plan;
  SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  auto iters = g.getIteratorTypesArray();
  const size_t n = ranges.size();
  if (n == 0) return plan;
  int64_t work = 1;
  for (int64_t r : ranges) {
    if (r <= 0) return plan;  // dynamic or empty: leave as is
    work *= r;
  }
  plan.tile.assign(n, 1);
  if (g.getNumDpsInits() != 1) return plan;  // scalar tiles

  auto is_par = [&](size_t i) { return iters[i] == utils::IteratorType::parallel; };
  int last_par = -1, num_red = 0;
  for (size_t i = 0; i < n; ++i) {
    if (is_par(i)) last_par = int(i);
    else ++num_red;
  }
  const bool innermost_reduction = !is_par(n - 1);
  bool contiguous = innermost_reduction;
  for (OpOperand* in : g.getDpsInputOperands()) {
    AffineMap m = g.getMatchingIndexingMap(in);
    if (m.getNumResults() == 0) continue;
    auto last = dyn_cast<AffineDimExpr>(m.getResult(m.getNumResults() - 1));
    if (!last || last.getPosition() != n - 1) contiguous = false;
  }
  if (innermost_reduction && num_red == 1 && contiguous) {
    // row reduction
    if (last_par >= 0) plan.tile[size_t(last_par)] = ranges[size_t(last_par)] % 8 == 0 ? 8 : 1;
    plan.tile[n - 1] = largest_divisor_at_most(ranges[n - 1], 64);
  } else if (last_par >= 0) {
    const bool contraction = innermost_reduction;
    plan.tile[size_t(last_par)] = largest_divisor_at_most(ranges[size_t(last_par)], contraction ? 32 : 64);
    if (contraction) {
      for (int i = last_par - 1; i >= 0; --i)
        if (is_par(size_t(i))) {
          if (ranges[size_t(i)] % 8 == 0) plan.tile[size_t(i)] = 8;
          break;
        }
    }
  }
  // Threads: chunks of the outermost loop when it is parallel and the op is big enough to pay
  // for a fork and join: 1M elements of work. At 64K, kernels made of many mid-size ops (the MLP
  // training step: a dozen 128K-400K-element loops) ran 2-3x slower with 2 threads than with one on
  // a shared VM, where each join waits for a descheduled thread (docs/jit.md).
  if (num_threads > 1 && is_par(0) && work >= (int64_t(1) << 20)) {
    const int64_t extent = ranges[0], unit = plan.tile[0];
    const int64_t units = extent / unit;
    for (int64_t k = int64_t(num_threads); k <= std::min<int64_t>(units, int64_t(num_threads) * 16); ++k)
      if (units % k == 0) {
        plan.forall_chunk = (units / k) * unit;
        break;
      }
  }
  return plan;
}

std::string sizes(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string handle_types(size_t results) {
  std::string s = "(!transform.any_op) -> (";
  for (size_t i = 0; i < results; ++i) s += std::string(i ? ", " : "") + "!transform.any_op";
  return s + ")";
}

}  // namespace

std::string tile_and_vectorize_script(ModuleOp module, int num_threads) {
  std::vector<linalg::GenericOp> generics;
  module.walk([&](linalg::GenericOp g) { generics.push_back(g); });
  if (generics.empty()) return {};
  std::ostringstream s;
  s << "module attributes {transform.with_named_sequence} {\n"
       "transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n";
  int64_t tag = 0;
  for (linalg::GenericOp g : generics) {
    Plan plan = plan_for(g, num_threads);
    g->setAttr("fx_tag", IntegerAttr::get(IntegerType::get(module.getContext(), 64), tag));
    const std::string t = std::to_string(tag++);
    bool any = false;
    for (int64_t x : plan.tile) any = any || x != 0;
    if (!any) continue;
    s << "  %g" << t << " = transform.structured.match ops{[\"linalg.generic\"]} attributes {fx_tag = " << t
      << " : i64} in %root : (!transform.any_op) -> !transform.any_op\n";
    std::string op = "%g" + t;
    if (plan.forall_chunk > 0) {
      std::vector<int64_t> chunk(plan.tile.size(), 0);
      chunk[0] = plan.forall_chunk;
      s << "  %p" << t << ", %pl" << t << " = transform.structured.tile_using_forall " << op << " tile_sizes "
        << sizes(chunk) << " : " << handle_types(2) << "\n";
      op = "%p" + t;
    }
    size_t loops = 0;
    for (int64_t x : plan.tile) loops += x != 0;
    s << "  %t" << t;
    for (size_t i = 0; i < loops; ++i) s << ", %l" << t << "_" << i;
    s << " = transform.structured.tile_using_for " << op << " tile_sizes " << sizes(plan.tile) << " : "
      << handle_types(1 + loops) << "\n";
  }
  s << "  %f = transform.structured.match ops{[\"func.func\"]} in %root : (!transform.any_op) -> !transform.any_op\n"
       "  %v = transform.structured.vectorize_children_and_apply_patterns %f : (!transform.any_op) -> !transform.any_op\n"
       "  transform.apply_patterns to %v {\n"
       "    transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = \"innerreduction\"\n"
       "  } : !transform.any_op\n"
       "  transform.yield\n"
       "}\n"
       "}\n";
  return s.str();
}

}  // namespace fluxion::lowering
