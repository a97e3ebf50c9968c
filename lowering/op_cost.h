// How much code one scalar op of a linalg body becomes, for the budgets that keep kernels cheap to
// compile (fx-group-elementwise's group size, the tiling plan's vector tile). A transcendental
// turns into a polynomial of a few dozen ops (fx-math-approx) or a vector-libm call with its
// argument shuffling (fx-accurate-math); counted as one op, a chain of 400 f32 exp/tanh on
// f32[8, 8192] produced 8 MB of LLVM IR and two seconds of code generation.
#pragma once
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/Math/IR/Math.h>
#include <mlir/IR/Block.h>

#include <cstdint>

namespace fluxion::lowering {

inline int64_t op_cost(mlir::Operation& op) {
  if (mlir::isa<mlir::math::AbsFOp, mlir::math::AbsIOp, mlir::math::FloorOp, mlir::math::CeilOp, mlir::math::SqrtOp,
                mlir::math::RoundOp, mlir::math::RoundEvenOp, mlir::math::CopySignOp, mlir::math::FmaOp>(op))
    return 1;
  if (op.getDialect() && op.getDialect()->getNamespace() == "math") return 24;
  if (mlir::isa<mlir::func::CallOp>(op)) return 24;
  return 1;
}

inline int64_t body_cost(mlir::Block& body) {
  int64_t cost = 0;
  for (mlir::Operation& op : body) cost += op_cost(op);
  return cost;
}

}  // namespace fluxion::lowering
