// Internal to lowering/: what fx-gpu-rows (gpu_rows.cpp) fuses into a row kernel -- the linalg ops
// over the same rows, each a Member, and the conditions under which they may share one block per
// row (gpu_row_members.cpp).
#pragma once
#include <mlir/Dialect/GPU/IR/GPUDialect.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>

#include <optional>

namespace fluxion::lowering::gpu_rows {

/// The buffer a memref value views (an allocation or a function argument).
mlir::Value root_of(mlir::Value v);

int64_t product(llvm::ArrayRef<int64_t> v);

/// The combining op of a reduction's output: `yield C(acc, v)` (either order) where acc, the
/// output's block argument, is used by C alone and C is associative and commutative.
struct Combiner {
  mlir::Operation* op = nullptr;
  unsigned acc_operand = 0;  // which operand of op is the accumulator
  mlir::gpu::AllReduceOperation kind{};
};

/// The combiner of op's output `output`, if it has one (fx-gpu-columns uses it too).
std::optional<Combiner> combiner_of(mlir::linalg::LinalgOp op, unsigned output);

/// Coordinates of linear index i over dims (row-major), as index arithmetic at b's point.
llvm::SmallVector<mlir::Value> delinearize(mlir::OpBuilder& b, mlir::Location loc, mlir::Value i,
                                           llvm::ArrayRef<int64_t> dims);

/// The combiner's identity in type t.
mlir::Value identity(mlir::OpBuilder& b, mlir::Location loc, mlir::gpu::AllReduceOperation k, mlir::Type t);

/// One op of a row kernel: loops (rows..., inner...), the inner ones all parallel or all reductions.
struct Member {
  mutable mlir::linalg::LinalgOp op;  // (MLIR's op handles are not const-correct)
  llvm::SmallVector<int64_t> inner;   // the inner loops' extents
  bool reduction = false;
  llvm::SmallVector<Combiner> combiners;  // per output, for a reduction
  bool virtual_ = false;                  // its output is recomputed by its readers, never stored
  // argmax/argmin (outputs: best value, i64 index; arg_best_kind): the all-reduce of the best
  // values. Its combiners are then empty.
  std::optional<mlir::gpu::AllReduceOperation> arg;
};

/// Whether op is argmax/argmin's body as lower_reduce.cpp writes it -- outputs (best, index),
/// yielding select(beats, v, best) and select(beats, i, index) with i the one reduced loop's index
/// -- and if so the all-reduce that finds the best value (MAXIMUMF for a float argmax, MINSI for a
/// signed argmin, ...).
std::optional<mlir::gpu::AllReduceOperation> arg_best_kind(mlir::linalg::LinalgOp op);

/// The loops of op, if all are static.
std::optional<llvm::SmallVector<int64_t>> loops_of(mlir::linalg::LinalgOp op);

/// op as a member over `rows` (its leading loops), or nothing.
std::optional<Member> member_over(mlir::linalg::LinalgOp op, llvm::ArrayRef<int64_t> rows);

/// Whether every access of `group` to a buffer some member writes is row-local: through a
/// contiguous view of the whole buffer whose leading dims are the rows, at an index whose leading
/// coordinates are the row's.
bool row_local(llvm::ArrayRef<Member> group, llvm::ArrayRef<int64_t> rows);

/// The ops of the host function's block that touch no memory and may sit between members.
bool passive(mlir::Operation* op);

/// One kernel of fx-gpu-rows: a block per row (the rows: the members' common leading loops).
struct RowKernel {
  llvm::SmallVector<int64_t> rows;
  llvm::SmallVector<Member> members;
  // A split anchor (GpuRowsPass::split_anchor): the member whose totals an earlier launch left in `partials`,
  // `parts` per row, which this kernel folds instead of reading the row.
  const Member* split = nullptr;
  int64_t parts = 1;
  llvm::SmallVector<mlir::Value> partials;
};

}  // namespace fluxion::lowering::gpu_rows
