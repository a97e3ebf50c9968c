// Lines in parallel: the GPU form of the lowerings whose CPU form is a serial loop nest over
// [outer, n, inner] (the cumulative scans, scatter and scatter_add). On the CPU the nest is cheap
// and its order is the reference's; on a GPU the whole nest would be one thread (gpu_passes.cpp
// wraps serial code so). Here each line -- a fixed (outer, inner) pair, n elements apart by
// `inner` -- is one thread's serial loop, in the reference's order along the line, so the values
// are the CPU's bit for bit (no atomics, no reordered sums), and outer x inner threads run at once.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "lowering/lower.h"

namespace fluxion::lowering {

/// Whether the rules are lowering for the GPU pipeline (pipeline_cuda.cpp sends every float GEMM
/// to the GPU's library: the one option that differs).
inline bool lowering_for_gpu(const LowerCtx& c) { return c.matmul == MatmulPath::gpu_library; }

/// Builds one line: gets the builder (inside the line's loop nest), the line's (outer, inner)
/// indices and the line as a 1-D tensor<n> holding `init`'s values; returns the new line.
using LineBody = std::function<mlir::Value(mlir::OpBuilder&, mlir::Location, mlir::Value outer, mlir::Value inner,
                                           mlir::Value line)>;

/// `init` is a tensor of static shape [outer, n, inner]; the result has its shape, each line the
/// body's. An scf.forall over (outer, inner) on tensors: bufferized in place (the line is a view
/// of the result), then a parallel loop that the GPU mapping makes blocks and threads of
/// (scf-forall-to-parallel in pipeline_cuda.cpp's kMapToGpu).
mlir::Value lines_in_parallel(LowerCtx& c, mlir::Value init, const LineBody& body);

/// sort's GPU form (gpu_sort.cpp): a thread per line merge-sorts the line's positions, then every
/// operand is gathered by them.
std::vector<mlir::Value> gpu_sort(LowerCtx& c, const Eqn& e, std::span<const Operand> in,
                                  std::span<const AbstractArray> out);

}  // namespace fluxion::lowering
