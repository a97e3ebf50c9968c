// The GPU forms of the windowed primitives -- conv_general_dilated, reduce_window_{sum,max,min},
// select_and_gather_add, select_and_scatter_add -- whose CPU lowering (lower_conv.cpp) is a library
// call into host code (im2col + GEMM, pooling loops) that a GPU cannot run.
//
// Each is a linalg.generic whose parallel loops are the output elements and whose reduction loops
// are the window (and, for a convolution, the input features of its group): one thread per output
// element, its window a serial loop. The operand is read by computed index (tensor.extract), so
// padding, both dilations, feature and batch groups and any dimension order are index arithmetic,
// never a padded or transposed copy. Orders, accumulator types and the selection of the max-pool
// family (the first best element, NaN winning and staying) are the reference kernels'
// (prims/conv.cpp, prims/reduce_window.cpp): integers match bit for bit, floats up to rounding.
// select_and_scatter_add is two kernels: each window's selected element, then per operand element
// the sum over the windows that selected it (a gather, so no atomics and the reference's order).
//
// Speed is not yet the point: tensor cores or cuDNN for convolutions are issue 30's (docs/gpu.md).
#pragma once

#include <span>
#include <vector>

#include "lowering/lower.h"

namespace fluxion::lowering {

/// The GPU lowering of a windowed primitive (any of the six above).
std::vector<mlir::Value> gpu_windowed(LowerCtx& c, const Eqn& e, std::span<const Operand> in,
                                      std::span<const AbstractArray> out);

}  // namespace fluxion::lowering
