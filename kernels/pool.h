// The jit's fast kernels for the reduce_window family and the max-pool derivatives
// (prims/reduce_window.cpp): fluxion_rt_pool and fluxion_rt_pool_f32 (kernels/conv.h) run them
// instead of the reference kernels. Same results, bit for bit: the same window order (so the same first maximum)
// and the same accumulation order and types.
#pragma once
#include <cstdint>
#include <span>

#include "ir/eval_rules.h"
#include "ir/primitive.h"

namespace fluxion::runtime {

/// Runs reduce_window_{sum,max,min}, select_and_gather_add or select_and_scatter_add of any dtype on `threads`
/// of the kernel's threads; false when the reference kernel must (a rank-0 operand, no elements,
/// a dtype without an order).
bool fast_window(Prim p, std::span<const View> in, std::span<const View> out, const Params& params, int threads);

/// How many windowed reductions and selections the fast kernels ran in this process (tests check
/// that compiled code takes them).
uint64_t fast_window_runs();

}  // namespace fluxion::runtime
