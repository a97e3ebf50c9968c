// fx-outline-parallel: every outermost omp.parallel region of an llvm.func moves into a function
// of its own (internal, called once where the region stood), just before translation to LLVM IR.
//
// Why: the translation outlines each parallel region for libomp with LLVM's CodeExtractor, which
// first builds an analysis cache over every instruction of the *enclosing* function -- once per
// region. A kernel with R regions in one function of size S costs R x S: the ResNet-18 training
// step (634 regions, one function: fusion needs it whole) spent about 5 s of its 15 s compile
// there. Alone in a small function, a region costs its own size. The wrapper adds one direct call
// per region, against a libomp fork that costs microseconds.
//
// Values the region reads from its function become the wrapper's arguments, except those made by
// an operand-free op without side effects (constants, global addresses): those are cloned into it,
// so the region keeps seeing constants (loop bounds, strides), as it did in place.
#include <mlir/Dialect/LLVMIR/LLVMDialect.h>
#include <mlir/Dialect/OpenMP/OpenMPDialect.h>
#include <mlir/IR/IRMapping.h>
#include <mlir/Interfaces/SideEffectInterfaces.h>
#include <mlir/Pass/Pass.h>
#include <mlir/Transforms/RegionUtils.h>

#include <string>

#include "lowering/passes.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

bool clonable(Value v) {
  Operation* def = v.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 && isMemoryEffectFree(def);
}

void outline(omp::ParallelOp region, LLVM::LLVMFuncOp parent, int index) {
  llvm::SetVector<Value> used;
  for (Value v : region->getOperands()) used.insert(v);
  getUsedValuesDefinedAbove(region->getRegions(), used);
  SmallVector<Value> args, cloned;
  for (Value v : used) (clonable(v) ? cloned : args).push_back(v);

  SmallVector<Type> arg_types;
  for (Value v : args) arg_types.push_back(v.getType());
  OpBuilder b(parent);
  b.setInsertionPointAfter(parent);
  const Location loc = region.getLoc();
  auto fn_type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()), arg_types);
  auto fn = b.create<LLVM::LLVMFuncOp>(loc, (parent.getName() + "_parallel_" + std::to_string(index)).str(), fn_type,
                                       LLVM::Linkage::Internal);
  Block* body = fn.addEntryBlock(b);
  IRMapping map;
  for (size_t i = 0; i < args.size(); ++i) map.map(args[i], body->getArgument(unsigned(i)));
  b.setInsertionPointToStart(body);
  for (Value v : cloned) map.map(v, b.clone(*v.getDefiningOp())->getResult(cast<OpResult>(v).getResultNumber()));
  b.clone(*region, map);
  b.create<LLVM::ReturnOp>(loc, ValueRange{});

  b.setInsertionPoint(region);
  b.create<LLVM::CallOp>(loc, fn, args);
  region.erase();
}

struct OutlineParallelPass : public PassWrapper<OutlineParallelPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(OutlineParallelPass)
  StringRef getArgument() const final { return "fx-outline-parallel"; }
  StringRef getDescription() const final { return "move each outermost omp.parallel region into a function of its own"; }
  void runOnOperation() override {
    SmallVector<std::pair<omp::ParallelOp, LLVM::LLVMFuncOp>> regions;
    getOperation().walk([&](omp::ParallelOp op) {
      if (op->getParentOfType<omp::ParallelOp>()) return;
      if (auto parent = op->getParentOfType<LLVM::LLVMFuncOp>()) regions.emplace_back(op, parent);
    });
    // One region per function gains nothing: its function is already as small as it gets.
    llvm::DenseMap<Operation*, int> per_function;
    for (auto& [op, parent] : regions) ++per_function[parent];
    llvm::DenseMap<Operation*, int> next;
    for (auto& [op, parent] : regions)
      if (per_function[parent] > 1) outline(op, parent, next[parent]++);
  }
};

}  // namespace

void register_outline_parallel_pass() { PassRegistration<OutlineParallelPass>(); }

}  // namespace fluxion::lowering
