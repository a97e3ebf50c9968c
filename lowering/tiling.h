// Internal to lowering/: the tiling plan of a fused kernel, written as a transform-dialect script.
#pragma once
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/IR/BuiltinOps.h>

#include <optional>
#include <vector>

#include <string>

namespace fluxion::lowering {

/// A unit attribute the tiling scripts put on the module when some generic got a contraction's
/// register tile (vector<8x32x1>: a unit reduction dim, which reaches LLVM as one-lane multiplies).
/// Code generation (codegen_cpu.cpp) runs SLP vectorization and loop rotation for such kernels only.
inline constexpr const char* kGeneratedContraction = "fx.generated_contraction";

/// Collapses the trailing loops of every generic whose loops are all parallel and whose innermost
/// extent is below the widest vector tile (64 elements) into one loop, as many as every operand
/// reads contiguously in loop order or not at all (collapse_dims.cpp): a same-shape elementwise
/// op over a conv weight's [O, I, 3, 3] becomes one loop over its elements, batch norm's
/// normalization over [N, C, 4, 4] with per-channel [C] operands one over [N, C, 16], so that
/// they vectorize by whole vectors instead of 3- or 4-lane pieces. Optimizer updates over ResNet's
/// weights ran at 0.74x of the memory bound 4-D, at 1.05x flattened (docs/training.md).
void collapse_short_elementwise_loops(mlir::ModuleOp module);

/// Inputs of `g` read at 0 along unit dims ((0, d1, 0, 0): per-channel values kept as
/// [1, C, 1, 1]) are read through a collapse_shape without those dims: collapseOpIterationDims
/// turns such constant results into dims (LLVM 19: `(d0, d1, d2) -> (d0, d1, d0, d0)`).
void drop_unit_dims_of_inputs(mlir::linalg::GenericOp g, mlir::OpBuilder& b);

/// Gives every use of a tensor.empty an empty of its own, each marked `fx.empty = N` so that CSE
/// keeps them apart (untie_empties.cpp: one empty shared by several outs or shared_outs made
/// bufferization copy whole tensors). Returns how many empties it added.
int64_t untie_empty_tensors(mlir::ModuleOp module);

/// The module's generics, when nothing but generics (and the function's plumbing) computes.
std::optional<std::vector<mlir::linalg::GenericOp>> only_generics(mlir::ModuleOp module);

/// Tags every linalg.generic of `module` (attribute fx_tag) and returns the transform script that
/// tiles and vectorizes each one (empty when there is nothing to do). See tiling.cpp for the plan.
std::string tile_and_vectorize_script(mlir::ModuleOp module, int num_threads);

/// Row tile-and-fuse (softmax, layernorm): when the kernel is only generics that all run over the
/// same rows (loop 0 parallel, one extent), and some result has several users (which elementwise
/// fusion leaves as a full-size temporary), the script tiles the last generic by blocks of 8 rows
/// in an scf.forall, fuses every other generic into it, then tiles each by its own plan and
/// vectorizes: the temporaries shrink to 8 rows. Tags the generics as tile_and_vectorize_script
/// does; empty when the kernel does not qualify. The caller falls back to the plain script if
/// the transform fails.
std::string row_fusion_script(mlir::ModuleOp module, int num_threads);

}  // namespace fluxion::lowering
