// The tiling plan. After fusion each linalg.generic is one loop nest; its plan, from its loop
// ranges and iterator kinds:
//   * threads (num_threads > 1, enough work, outermost loop parallel): scf.forall over chunks of
//     the outermost loop, a divisor of its extent so the chunks keep static shapes;
//   * vector tile: every loop tiled by 1 except the innermost parallel loop, tiled by its extent or
//     its largest divisor <= 4 registers' worth of elements (VectorShape below: 64 f32 on
//     AVX-512), so tiles are static and vectorize;
//   * row reductions (one innermost reduction loop that every operand reads contiguously, or not
//     at all: a per-row value): rows in blocks of 8 when the rows are at least 16 long, the
//     reduction in steps of up to 4 registers (a vector<8x64> multi_reduction per step in f32 on
//     AVX-512, accumulators hoisted into registers). Short rows go one at a time: 8x10 blocks of a
//     [256, 10] softmax compiled to thousands of lane shuffles and cost a fifth of the MLP step's
//     compile time;
//   * column reductions (x^T W: a parallel loop over columns, a reduction over rows, each operand
//     contiguous along the columns or constant along them): loops interchanged, one row per step,
//     a vector multiply-add of a whole row into the accumulator;
//   * contractions: the parallel loop before the innermost parallel one in blocks of 8 (4 below
//     512-bit vectors), the innermost in 2 registers (an 8x32 register tile of broadcast FMAs in
//     f32 on AVX-512), and for large matmul-like ones cache tiles around it;
//   * full reductions (every loop a reduction, every operand contiguous): vectors along the
//     innermost loop;
//   * several results (argmax): scalar tiles.
// Then the whole function is vectorized (vectorize_children_and_apply_patterns), and the vector ops
// that the LLVM conversion would scalarize are lowered first (kVectorizeFunction). Ops the
// vectorizer cannot handle (libm calls, non-permutation maps) stay as scalar loops -- correct,
// only slower.
#include "lowering/tiling.h"

#include "lowering/op_cost.h"
#include "lowering/target.h"

#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/Linalg/Transforms/Transforms.h>

#include <algorithm>
#include <optional>
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

// Vector shapes sized to the target's registers (lowering/target.h): `lanes` elements of the
// generic's widest type fill one register. Elementwise and reduction tiles hold 4 registers (at
// most 64 elements), a row-reduction block 8 rows of those (32 registers), a contraction's register
// tile 8 rows x 2 registers on 512-bit targets (32 registers) and 4 x 2 on narrower ones (16). For
// f32 on AVX-512 these are exactly the shapes the benchmarks were tuned with (64, 8x64, 8x32);
// fixed at those sizes, f64 code for AVX2 held vector<8x64xf64> values -- 128 registers each --
// and a 20 KB kernel became 9.5 MB of LLVM IR and 12 s of code generation.
//
// A long body shrinks the tile: one tile step is (registers per value) x (the body's cost, op_cost.h)
// vector instructions after unrolling, kept under kTileBudget, by fewer registers per value and, for
// row reductions, one row at a time instead of 8. vmap over 64 keys of mean(exp(normal(k, 4096,
// f64))) fuses threefry, erf_inv and exp into its row reduction (about 150 ops): as 8 rows x 32
// lanes it was 1.4 MB of LLVM IR and a second of code generation.
constexpr int64_t kTileBudget = 2048;

struct VectorShape {
  int64_t vec;       // innermost tile of elementwise ops and reductions
  int64_t mr, nr;    // a contraction's register tile
  int64_t row_block;  // rows per step of a row reduction (8, or 1 for a long body)
  int64_t lanes;      // elements of the widest type per register
};

unsigned widest_bits(linalg::GenericOp g) {
  unsigned bits = 8;
  auto note = [&](Type t) {
    t = getElementTypeOrSelf(t);
    if (t.isIntOrFloat()) bits = std::max(bits, t.getIntOrFloatBitWidth());
  };
  for (Value v : g->getOperands()) note(v.getType());
  for (Operation& op : g.getBody()->getOperations())
    for (Value r : op.getResults()) note(r.getType());
  return bits;
}

VectorShape vector_shape(linalg::GenericOp g) {
  const CpuTarget& t = cpu_target();
  const int64_t lanes = std::max<int64_t>(1, t.vector_bits / int64_t(widest_bits(g)));
  const int64_t body = std::max<int64_t>(1, body_cost(*g.getBody()));
  int64_t regs = 4;
  while (regs > 1 && regs * body > kTileBudget) regs /= 2;
  const int64_t vec = std::min<int64_t>(regs * lanes, 64);
  const int64_t row_block = 8 * ((vec + lanes - 1) / lanes) * body <= kTileBudget ? 8 : 1;
  return {vec, t.vector_bits >= 512 ? 8 : 4, std::min<int64_t>(2 * lanes, 32), row_block, lanes};
}

// Rows per step and the reduction tile of a row reduction over rows of `row` elements. A row of
// at most 64 elements that is longer than one tile is reduced whole, with fewer rows per step so
// that the block holds as many registers: each row then ends in one horizontal reduction instead
// of one per tile, with no partial sum carried through memory (the 64x64 matrix-vector product of
// an RNN step ran at 0.56-0.60 us in 8x32 tiles on AVX2, against 0.34 us in AVX-512's 8x64).
std::pair<int64_t, int64_t> row_reduction_tile(const VectorShape& vs, int64_t row) {
  if (row > vs.vec && row <= 64 && row % vs.lanes == 0 && vs.row_block > 1)
    return {std::max<int64_t>(1, vs.row_block * vs.vec / row), row};
  return {vs.row_block, vs.vec};
}

struct Plan {
  int64_t forall_chunk = 0;    // tile of loop 0 for scf.forall (0: no threads)
  std::vector<int64_t> cache;  // cache tiles of a contraction (empty: none), before `tile`
  std::vector<int64_t> tile;   // scf.for tile sizes (all 0: none), in the loop order after `swap`
  bool swap = false;          // interchange the two loops first (column reductions)
  bool contraction = false;   // a register tile of broadcast multiply-adds (tiling.h: kGeneratedContraction)
};

// A large matmul-like contraction (M, N, then one reduction K innermost) also gets cache tiles: up
// to 64 x 256 x 128, multiples of the register tile (the notes' td_mm schedule). Without them the
// generated 1024^3 matmul ran at 0.30x of Eigen. `m` and `nl` are the loops of M and N.
void add_cache_tiles(Plan& plan, size_t m, size_t nl, int64_t M, int64_t N, int64_t K, const VectorShape& vs,
                     int num_threads) {
  auto cache_tile = [](int64_t extent, int64_t cap, int64_t unit) {
    for (int64_t t = cap; t >= unit; t -= unit)
      if (extent % t == 0) return t;
    return unit;
  };
  plan.cache.assign(plan.tile.size(), 0);
  // Mc small enough that threads still get a chunk each when M is the threaded loop (64 x 1024 x
  // 4096 lost its threads to Mc = 64).
  int64_t mc = cache_tile(M, 64, vs.mr);
  if (m == 0 && num_threads > 1)
    while (mc > vs.mr && M / mc < num_threads) mc = cache_tile(M, mc - vs.mr, vs.mr);
  plan.cache[m] = mc;
  plan.cache[nl] = cache_tile(N, 256, vs.nr);
  // K untiled when it has no divisor of a useful size (a prime K gave K tiles of 1: the C tile
  // loaded and stored once per k; fluxion_bench_jit matmul times 512 x 521 x 512).
  const int64_t kc = largest_divisor_at_most(K, 128);
  plan.cache.back() = kc >= 32 ? kc : 0;
}

// Threads: chunks of the outermost loop (of `extent`), for ops big enough to pay for a fork and
// join -- 1M elements of work (the caller checks). At 64K, kernels made of many mid-size ops (the
// MLP training step: a dozen 128K-400K-element loops) ran 2-3x slower with 2 threads than with one
// on a shared VM, where each join waits for a descheduled thread (docs/jit.md). 0: no chunking.
int64_t thread_chunk(const Plan& plan, int64_t extent, int num_threads) {
  const int64_t unit = !plan.cache.empty() && plan.cache[0] ? plan.cache[0] : plan.tile[0];
  const int64_t units = extent / unit;
  for (int64_t k = int64_t(num_threads); k <= std::min<int64_t>(units, int64_t(num_threads) * 16); ++k)
    if (units % k == 0) return (units / k) * unit;
  return 0;
}

// Whether every input of a (parallel, reduction) generic is contiguous along the parallel loop.
bool columns_contiguous(linalg::GenericOp g) {
  for (OpOperand* in : g.getDpsInputOperands()) {
    AffineMap m = g.getMatchingIndexingMap(in);
    if (m.getNumResults() == 0 || !m.isFunctionOfDim(0)) continue;  // one value per row of the reduction
    auto last = dyn_cast<AffineDimExpr>(m.getResult(m.getNumResults() - 1));
    if (!last || last.getPosition() != 0) return false;
  }
  return true;
}

// The loop extents a plan is made for. A polymorphic program's op whose dynamic loops are all
// parallel and outside every static loop but static parallel ones ([b, 784], or [8, t, 256] of a
// transformer over a symbolic length t) is planned with one step of each dynamic loop, so its
// tiles take one row at a time and keep static shapes that vectorize; no threads (its work is
// unknown at compile time).
SmallVector<int64_t> planning_ranges(linalg::GenericOp g) {
  SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  const auto iters = g.getIteratorTypesArray();
  int last_dynamic = -1;
  for (size_t i = 0; i < ranges.size(); ++i)
    if (ranges[i] == ShapedType::kDynamic) last_dynamic = int(i);
  if (last_dynamic < 0 || size_t(last_dynamic) + 1 >= ranges.size()) return ranges;  // an innermost dynamic loop: as is
  for (int i = 0; i <= last_dynamic; ++i)
    if (iters[size_t(i)] != utils::IteratorType::parallel) return ranges;
  for (size_t i = size_t(last_dynamic) + 1; i < ranges.size(); ++i)
    if (ranges[i] <= 0) return ranges;
  for (int i = 0; i <= last_dynamic; ++i)
    if (ranges[size_t(i)] == ShapedType::kDynamic) ranges[size_t(i)] = 1;
  return ranges;
}

Plan plan_for(linalg::GenericOp g, int num_threads) {
  Plan plan;
  SmallVector<int64_t> ranges = planning_ranges(g);
  auto iters = g.getIteratorTypesArray();
  const size_t n = ranges.size();
  if (n == 0) return plan;
  int64_t work = 1;
  for (int64_t r : ranges) {
    if (r <= 0) return plan;  // dynamic or empty: leave as is
    work *= r;
  }
  plan.tile.assign(n, 1);
  const VectorShape vs = vector_shape(g);
  auto is_par = [&](size_t i) { return iters[i] == utils::IteratorType::parallel; };
  // Several results: vector tiles when every loop is parallel (a group of elementwise ops,
  // fx-group-elementwise), scalar tiles otherwise (argmax's value and index).
  if (g.getNumDpsInits() != 1) {
    bool all_parallel = true;
    for (size_t i = 0; i < n; ++i) all_parallel = all_parallel && is_par(i);
    if (!all_parallel) return plan;
  }

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
    // An operand that does not vary along the reduction (one value per row: (d0) or (d0, 0)) reads
    // like a scalar per row.
    if (!m.isFunctionOfDim(unsigned(n - 1))) continue;
    auto last = dyn_cast<AffineDimExpr>(m.getResult(m.getNumResults() - 1));
    if (!last || last.getPosition() != n - 1) contiguous = false;
  }
  // A column reduction (one parallel loop, then one reduction loop over rows, every input
  // contiguous along the parallel loop): interchange the loops so that the rows are the outer
  // loop and each step adds one contiguous vector of columns to the accumulator. Tiled as is, it
  // vectorized across rows into vector<32x1> pieces (thousands of 1-lane ops to compile, slow).
  if (n == 2 && is_par(0) && !is_par(1)) {
    if (columns_contiguous(g) && !contiguous) {
      plan.swap = true;
      plan.tile = {1, largest_divisor_at_most(ranges[0], vs.vec)};
      return plan;
    }
  }
  if (innermost_reduction && num_red == 1 && contiguous) {
    // row reduction
    const auto [rb, vec] = row_reduction_tile(vs, ranges[n - 1]);
    if (last_par >= 0) plan.tile[size_t(last_par)] = ranges[size_t(last_par)] % rb == 0 && ranges[n - 1] >= 16 ? rb : 1;
    plan.tile[n - 1] = largest_divisor_at_most(ranges[n - 1], vec);
  } else if (last_par < 0 && contiguous) {
    // a full reduction of contiguous data: vectors along the innermost loop
    plan.tile[n - 1] = largest_divisor_at_most(ranges[n - 1], vs.vec);
  } else if (last_par >= 0) {
    const bool contraction = innermost_reduction;
    plan.contraction = contraction;
    plan.tile[size_t(last_par)] = largest_divisor_at_most(ranges[size_t(last_par)], contraction ? vs.nr : vs.vec);
    if (contraction) {
      int m = -1;
      for (int i = last_par - 1; i >= 0; --i)
        if (is_par(size_t(i))) {
          if (ranges[size_t(i)] % vs.mr == 0) plan.tile[size_t(i)] = vs.mr, m = i;
          break;
        }
      const int64_t M = m >= 0 ? ranges[size_t(m)] : 0, N = ranges[size_t(last_par)], K = ranges[n - 1];
      if (m >= 0 && num_red == 1 && plan.tile[size_t(last_par)] == vs.nr && M * N * K >= (int64_t(1) << 21))
        add_cache_tiles(plan, size_t(m), size_t(last_par), M, N, K, vs, num_threads);
    }
  }
  if (num_threads > 1 && is_par(0) && work >= (int64_t(1) << 20)) plan.forall_chunk = thread_chunk(plan, ranges[0], num_threads);
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

// The end of every script: vectorize the whole function without folding multiply + reduce into
// vector.contract (which the LLVM conversion unrolls into one-lane multiplies and lane shuffles:
// generated matmul ran at 0.03x of Eigen, the RNN gradient's x^T W at one lane), canonicalize so
// that reductions over a unit dim (a column reduction's tile) become plain vector adds, then lower
// the remaining multi-reductions with the reduction innermost.
const char* kVectorizeFunction =
    "  %f = transform.structured.match ops{[\"func.func\"]} in %root : (!transform.any_op) -> !transform.any_op\n"
    "  %v = transform.structured.vectorize_children_and_apply_patterns %f {disable_multi_reduction_to_contract_patterns} : (!transform.any_op) -> !transform.any_op\n"
    "  transform.apply_patterns to %v {\n"
    "    transform.apply_patterns.canonicalization\n"
    "  } : !transform.any_op\n"
    "  transform.apply_patterns to %v {\n"
    "    transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = \"innerreduction\"\n"
    "  } : !transform.any_op\n"
    "  transform.yield\n"
    "}\n"
    "}\n";

// Tells code generation that a register tile is left for LLVM to pack (tiling.h).
void note_contraction(ModuleOp module, const Plan& plan) {
  if (plan.contraction) module->setAttr(kGeneratedContraction, UnitAttr::get(module.getContext()));
}

}  // namespace

// The module's generics, when nothing but generics (and the function's plumbing) computes.
std::optional<std::vector<linalg::GenericOp>> only_generics(ModuleOp module) {
  std::vector<linalg::GenericOp> generics;
  bool only = true;
  module.walk<WalkOrder::PreOrder>([&](Operation* op) {
    if (auto g = dyn_cast<linalg::GenericOp>(op)) {
      generics.push_back(g);
      return WalkResult::skip();
    }
    const llvm::StringRef name = op->getName().getStringRef();
    if (!(isa<ModuleOp>(op) || name == "func.func" || name == "func.return" || name == "tensor.empty" ||
          name == "arith.constant" || name == "bufferization.to_tensor" || name == "bufferization.materialize_in_destination"))
      only = false;
    return WalkResult::advance();
  });
  if (!only) return std::nullopt;
  return generics;
}

std::string row_fusion_script(ModuleOp module, int num_threads) {
  std::optional<std::vector<linalg::GenericOp>> found = only_generics(module);
  if (!found || found->size() < 3) return {};
  std::vector<linalg::GenericOp>& generics = *found;  // MLIR's op handles are used non-const
  int64_t rows = -1, work = 0;
  bool multi_use = false;
  for (linalg::GenericOp g : generics) {
    SmallVector<int64_t> ranges = g.getStaticLoopRanges();
    auto iters = g.getIteratorTypesArray();
    if (ranges.empty() || iters[0] != utils::IteratorType::parallel || g.getNumDpsInits() != 1) return {};
    if (rows < 0) rows = ranges[0];
    if (ranges[0] != rows) return {};
    AffineMap out_map = g.getMatchingIndexingMap(g.getDpsInitOperand(0));
    if (out_map.getNumResults() == 0) return {};
    auto d0 = dyn_cast<AffineDimExpr>(out_map.getResult(0));
    if (!d0 || d0.getPosition() != 0) return {};
    int64_t w = 1;
    for (int64_t r : ranges) w *= r;
    work = std::max(work, w);
    int users = 0;
    for (Operation* u : g->getResult(0).getUsers()) users += isa<linalg::GenericOp>(u) ? 1 : 0;
    multi_use = multi_use || users > 1;
  }
  const int64_t block = 8;
  if (!multi_use || rows % block != 0 || rows < block * 2 || work < (int64_t(1) << 16)) return {};

  std::ostringstream s;
  s << "module attributes {transform.with_named_sequence} {\n"
       "transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n";
  const size_t last = generics.size() - 1;
  std::vector<Plan> plans;
  for (size_t k = 0; k < generics.size(); ++k) {
    generics[k]->setAttr("fx_tag", IntegerAttr::get(IntegerType::get(module.getContext(), 64), int64_t(k)));
    plans.push_back(plan_for(generics[k], 1));
    note_contraction(module, plans.back());
    if (plans.back().swap) return {};  // a column reduction does not run over row blocks
  }
  auto match = [&](size_t k, const std::string& in) {
    return "transform.structured.match ops{[\"linalg.generic\"]} attributes {fx_tag = " + std::to_string(k) + " : i64} in " +
           in + " : (!transform.any_op) -> !transform.any_op\n";
  };
  std::vector<int64_t> chunk(size_t(generics[last].getNumLoops()), 0);
  chunk[0] = block;
  s << "  %last = " << match(last, "%root");
  s << "  %tl, %c" << last << " = transform.structured.tile_using_forall %last tile_sizes " << sizes(chunk) << " : "
    << handle_types(2) << "\n";
  std::string loop = "%c" + std::to_string(last);
  for (size_t k = last; k-- > 0;) {
    s << "  %g" << k << " = " << match(k, "%root");
    s << "  %f" << k << ", %c" << k << " = transform.structured.fuse_into_containing_op %g" << k << " into " << loop
      << " : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)\n";
    loop = "%c" + std::to_string(k);
  }
  for (size_t k = 0; k < generics.size(); ++k) {
    std::vector<int64_t> tile = plans[k].tile;
    if (tile.empty()) continue;
    tile[0] = std::min<int64_t>(tile[0], block);
    bool any = false;
    for (int64_t x : tile) any = any || x > 1;
    if (!any) continue;
    s << "  %i" << k << " = " << match(k, loop);
    size_t loops = 0;
    for (int64_t x : tile) loops += x != 0;
    s << "  %t" << k;
    for (size_t i = 0; i < loops; ++i) s << ", %l" << k << "_" << i;
    s << " = transform.structured.tile_using_for %i" << k << " tile_sizes " << sizes(tile) << " : " << handle_types(1 + loops)
      << "\n";
  }
  s << kVectorizeFunction;
  (void)num_threads;  // the forall becomes OpenMP chunks or a plain loop in the lowering passes
  return s.str();
}

std::string tile_and_vectorize_script(ModuleOp module, int num_threads) {
  std::vector<linalg::GenericOp> generics;
  module.walk([&](linalg::GenericOp g) { generics.push_back(g); });
  if (generics.empty()) return {};
  std::ostringstream s;
  s << "module attributes {transform.with_named_sequence} {\n"
       "transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n";
  // One match and a split into one handle per generic, in the order of the walk above (a match per
  // generic walked the whole module each time: quadratic in a kernel with thousands of them).
  s << "  %all = transform.structured.match ops{[\"linalg.generic\"]} in %root : (!transform.any_op) -> !transform.any_op\n";
  s << "  ";
  for (size_t i = 0; i < generics.size(); ++i) s << (i ? ", " : "") << "%g" << i;
  s << " = transform.split_handle %all : " << handle_types(generics.size()) << "\n";
  int64_t tag = 0;
  for (linalg::GenericOp g : generics) {
    Plan plan = plan_for(g, num_threads);
    note_contraction(module, plan);
    g->setAttr("fx_tag", IntegerAttr::get(IntegerType::get(module.getContext(), 64), tag));
    const std::string t = std::to_string(tag++);
    bool any = false;
    for (int64_t x : plan.tile) any = any || x != 0;
    if (!any) continue;
    std::string op = "%g" + t;
    if (plan.swap) {
      s << "  %x" << t << " = transform.structured.interchange " << op
        << " iterator_interchange = [1, 0] : (!transform.any_op) -> !transform.any_op\n";
      op = "%x" + t;
    }
    if (plan.forall_chunk > 0) {
      std::vector<int64_t> chunk(plan.tile.size(), 0);
      chunk[0] = plan.forall_chunk;
      s << "  %p" << t << ", %pl" << t << " = transform.structured.tile_using_forall " << op << " tile_sizes "
        << sizes(chunk) << " : " << handle_types(2) << "\n";
      op = "%p" + t;
    }
    if (!plan.cache.empty()) {
      size_t cache_loops = 0;
      for (int64_t x : plan.cache) cache_loops += x != 0;
      s << "  %c" << t;
      for (size_t i = 0; i < cache_loops; ++i) s << ", %cl" << t << "_" << i;
      s << " = transform.structured.tile_using_for " << op << " tile_sizes " << sizes(plan.cache) << " : "
        << handle_types(1 + cache_loops) << "\n";
      op = "%c" + t;
    }
    size_t loops = 0;
    for (int64_t x : plan.tile) loops += x != 0;
    s << "  %t" << t;
    for (size_t i = 0; i < loops; ++i) s << ", %l" << t << "_" << i;
    s << " = transform.structured.tile_using_for " << op << " tile_sizes " << sizes(plan.tile) << " : "
      << handle_types(1 + loops) << "\n";
  }
  s << kVectorizeFunction;
  return s.str();
}

}  // namespace fluxion::lowering
