// fx-group-elementwise: each run of consecutive elementwise linalg.generic ops over the same
// domain becomes one generic, in time linear in the run's length.
//
// MLIR's elementwise fusion (fx-fuse-elementwise, which runs next) merges one producer into one
// consumer at a time and clones both bodies into a new op each time, so a chain of n elementwise
// eqns costs time quadratic in n: an unrolled 1,800-eqn leapfrog spent 0.9 s there and a 7,200-eqn
// one 27 s. Here every body is cloned exactly once. A value used after the run becomes one more
// result of the grouped op (a generic may have several), so nothing is computed twice. Runs are
// consecutive in the block (only constants and tensor.empty between members), so no value leaves
// the group and comes back through another op: grouping cannot create a cycle. A group's body
// stays under kMaxGroupCost (op_cost.h: a transcendental counts as the code it becomes), which
// bounds the work of every later pass on one loop; 512 is about 20 f32 transcendentals, enough
// compute per element that going through memory once per group costs little.
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/Tensor/IR/Tensor.h>
#include <mlir/IR/IRMapping.h>
#include <mlir/IR/TypeUtilities.h>
#include <mlir/Pass/Pass.h>

#include <vector>

#include "lowering/op_cost.h"
#include "lowering/passes.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

constexpr int64_t kMaxGroupCost = 512;

// All loops parallel, one result written in loop order, every input read in loop order or as a
// single value (a rank-0 operand broadcast: a map with no results), a body without regions that
// reads no tensor of its own. A body that reads a tensor from outside (`tensor.extract` at computed
// indices: rev's n-1-i, gathers) is not elementwise: grouped, the tensor it
// reads could be a member of the run, replaced by a result of the grouped op it would then sit in
// ("operand #0 does not dominate this use" when the module was verified, issue 35).
bool is_elementwise(linalg::GenericOp g) {
  if (g.getNumDpsInits() != 1 || g->getNumResults() != 1) return false;
  for (utils::IteratorType t : g.getIteratorTypesArray())
    if (t != utils::IteratorType::parallel) return false;
  for (AffineMap m : g.getIndexingMapsArray())
    if (!m.isIdentity() && m.getNumResults() != 0) return false;
  if (!g.getIndexingMapsArray().back().isIdentity()) return false;
  for (Operation& op : g.getBody()->getOperations()) {
    if (op.getNumRegions() != 0) return false;
    for (Value v : op.getOperands())
      if (isa<ShapedType>(v.getType())) return false;
  }
  // The body may not read the value it overwrites: the grouped body maps only the inputs.
  return g.getMatchingBlockArgument(g.getDpsInitOperand(0)).use_empty();
}

// Ops that may sit between members of a run: they read nothing, so no member's value can reach a
// later member through them.
// A tensor of v's shape that outlives the run: down the members' own inits to one made outside it
// (dynamic sizes -- a polymorphic program -- are read from it).
Value lasting_like(Value v, const llvm::SmallPtrSetImpl<Operation*>& members) {
  while (Operation* def = v.getDefiningOp()) {
    auto dps = dyn_cast<DestinationStyleOpInterface>(def);
    if (!members.contains(def) || !dps || dps.getNumDpsInits() == 0) break;
    v = dps.getDpsInitOperand(0)->get();
  }
  return v;
}

bool transparent(Operation& op) { return isa<arith::ConstantOp, tensor::EmptyOp>(op) && op.getNumOperands() == 0; }

void group(std::vector<linalg::GenericOp>& run) {
  if (run.size() < 2) {
    run.clear();
    return;
  }
  llvm::SmallPtrSet<Operation*, 32> members;
  for (linalg::GenericOp g : run) members.insert(g);
  linalg::GenericOp last = run.back();
  const unsigned rank = last.getNumLoops();
  MLIRContext* ctx = last.getContext();

  // External inputs (deduplicated with their maps), and the results used outside the run.
  SmallVector<Value> inputs;
  SmallVector<AffineMap> in_maps;
  llvm::DenseMap<std::pair<Value, AffineMap>, unsigned> input_index;
  for (linalg::GenericOp g : run)
    for (OpOperand* in : g.getDpsInputOperands()) {
      if (members.contains(in->get().getDefiningOp())) continue;
      auto key = std::make_pair(in->get(), g.getMatchingIndexingMap(in));
      if (input_index.try_emplace(key, unsigned(inputs.size())).second) {
        inputs.push_back(key.first);
        in_maps.push_back(key.second);
      }
    }
  SmallVector<linalg::GenericOp> outputs;
  SmallVector<Value> inits;
  for (linalg::GenericOp g : run) {
    bool used_outside = false;
    for (Operation* user : g->getResult(0).getUsers()) used_outside = used_outside || !members.contains(user);
    if (!used_outside) continue;
    outputs.push_back(g);
    inits.push_back(g.getDpsInitOperand(0)->get());
  }
  // An init made by a member (a dot_general without contracting dims writes into a linalg.fill,
  // itself elementwise: issue 35's segfault) would be erased with it; its value is never read
  // (is_elementwise), so a new tensor.empty of its type takes its place.
  OpBuilder b(last);
  for (Value& init : inits) {
    if (!members.contains(init.getDefiningOp())) continue;
    init = b.create<tensor::EmptyOp>(last.getLoc(), tensor::getMixedSizes(b, last.getLoc(), lasting_like(init, members)),
                                     getElementTypeOrSelf(init.getType()));
  }
  if (outputs.empty()) {  // nothing reads the run: dead code, left to the canonicalizer
    run.clear();
    return;
  }

  SmallVector<AffineMap> maps(in_maps);
  maps.append(outputs.size(), AffineMap::getMultiDimIdentityMap(rank, ctx));
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  SmallVector<Location> locs;
  for (linalg::GenericOp g : run) locs.push_back(g.getLoc());
  SmallVector<Type> result_types;
  for (linalg::GenericOp g : outputs) result_types.push_back(g->getResult(0).getType());

  auto grouped = b.create<linalg::GenericOp>(
      FusedLoc::get(ctx, locs), result_types, inputs, inits, maps, iters, [&](OpBuilder& nb, Location, ValueRange args) {
        llvm::DenseMap<Operation*, Value> value_of;  // a member -> its scalar result in the new body
        for (linalg::GenericOp g : run) {
          IRMapping map;
          for (OpOperand* in : g.getDpsInputOperands()) {
            Value arg = g.getMatchingBlockArgument(in);
            Operation* def = in->get().getDefiningOp();
            map.map(arg, members.contains(def) ? value_of.lookup(def)
                                                : args[input_index.lookup({in->get(), g.getMatchingIndexingMap(in)})]);
          }
          for (Operation& op : g.getBody()->without_terminator()) nb.clone(op, map);
          value_of[g] = map.lookupOrDefault(g.getBody()->getTerminator()->getOperand(0));
        }
        SmallVector<Value> yields;
        for (linalg::GenericOp g : outputs) yields.push_back(value_of.lookup(g));
        nb.create<linalg::YieldOp>(last.getLoc(), yields);
      });
  for (size_t k = 0; k < outputs.size(); ++k) outputs[k]->getResult(0).replaceAllUsesWith(grouped->getResult(unsigned(k)));
  for (auto it = run.rbegin(); it != run.rend(); ++it) it->erase();
  run.clear();
}

// An elementwise value read only by a reduction (batch norm's (x - mean)^2, dy * xhat) stays out
// of the groups: alone it fuses into the reduction (fx-fuse-elementwise) and is never written;
// as one more result of a group it was written in full and read back by the reduction. So does
// one read only by such a value: in bfloat16 the reduction reads its operand through a widening
// (an elementwise extf to f32) and the square was grouped and written as before. One that calls
// out stays in: it would not fuse into a reduction.
bool feeds_only_a_reduction(linalg::GenericOp g) {
  if (!g->getResult(0).hasOneUse()) return false;
  bool calls = false;
  g.getBody()->walk([&](func::CallOp) { calls = true; });
  if (calls) return false;
  OpOperand& use = *g->getResult(0).use_begin();
  auto user = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!user || !user.isDpsInput(&use)) return false;
  if (user.getNumReductionLoops() > 0) return true;
  return is_elementwise(user) && user.getStaticLoopRanges() == g.getStaticLoopRanges() && feeds_only_a_reduction(user);
}

struct GroupElementwisePass : public PassWrapper<GroupElementwisePass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GroupElementwisePass)
  StringRef getArgument() const final { return "fx-group-elementwise"; }
  StringRef getDescription() const final { return "runs of elementwise linalg.generic ops -> one generic each"; }
  void getDependentDialects(DialectRegistry& r) const override { r.insert<linalg::LinalgDialect>(); }
  void runOnOperation() override {
    std::vector<Block*> blocks;
    getOperation()->walk([&](Block* block) { blocks.push_back(block); });
    for (Block* block : blocks) {
      std::vector<linalg::GenericOp> run;
      // Values left out of the run (feeds_only_a_reduction) that sit between its members: they
      // may read members, so they move after the grouped op (their reduction comes after the run).
      std::vector<Operation*> left_out;
      SmallVector<int64_t> domain;
      int64_t cost = 0;
      auto flush = [&] {
        if (run.empty()) return;
        Operation* last = run.back();
        Operation* after = last->getNextNode();
        std::vector<Operation*> to_move;  // those after the last member stay where they are
        for (Operation* op : left_out)
          if (op->isBeforeInBlock(last)) to_move.push_back(op);
        group(run);
        for (Operation* op : to_move) op->moveBefore(after);
        left_out.clear();
      };
      for (Operation& op : llvm::make_early_inc_range(*block)) {
        if (transparent(op)) continue;
        auto g = dyn_cast<linalg::GenericOp>(op);
        if (!g || !is_elementwise(g)) {
          flush();
          continue;
        }
        if (feeds_only_a_reduction(g)) {
          if (!run.empty()) left_out.push_back(g);
          continue;
        }
        SmallVector<int64_t> ranges = g.getStaticLoopRanges();
        const int64_t c = body_cost(*g.getBody());
        if (!run.empty() && (ranges != domain || cost + c > kMaxGroupCost)) flush();
        if (run.empty()) domain = ranges, cost = 0;
        run.push_back(g);
        cost += c;
      }
      flush();
    }
  }
};

}  // namespace

void register_group_elementwise_pass() { PassRegistration<GroupElementwisePass>(); }

}  // namespace fluxion::lowering
