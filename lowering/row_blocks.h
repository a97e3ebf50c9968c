// Internal to lowering/: one loop over blocks of rows for a whole row-local kernel.
#pragma once
#include <mlir/IR/BuiltinOps.h>

namespace fluxion::lowering {

/// Row blocking. When every value of the kernel that has the outputs' leading extent (the rows:
/// vmap's batch axis) is computed row by row -- each row of a result from the same row of its
/// operands, through generics, slices, inserts (concatenate, stack), reshapes that keep the rows
/// apart, and the kernel's inputs and outputs -- rewrites the kernel as one scf.forall over blocks
/// of rows running all of those ops on [block, ...] tensors, the rest (constants, values without
/// rows) computed once before it. The temporaries shrink from [rows, ...] to a block that stays in
/// cache, and the slices and inserts between generics cost no pass over memory. A last block of
/// the leftover rows follows the loop when the block does not divide the rows. Returns whether it
/// rewrote; leaves the module as it was otherwise (not row-local, or nothing to gain: fewer than
/// two generics over the rows, or a large array without rows read by every row, like a matmul's
/// weights). Runs on the fused module, before tiling; the per-op tiling plan then tiles each
/// generic of the block.
bool block_rows(mlir::ModuleOp module);

}  // namespace fluxion::lowering
