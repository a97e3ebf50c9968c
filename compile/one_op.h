// One application of a primitive as a program of one eqn: what eager ops compile when they run
// compiled (on a GPU always, compile/eager_device.cpp; on the CPU for large transcendental ops,
// compile/eager_cpu.cpp).
#pragma once

#include <span>

#include "ir/program.h"

namespace fluxion::runtime {

Program one_op_program(Prim p, std::span<const AbstractArray> in_avals, const Params& params, SourceLoc loc);

}  // namespace fluxion::runtime
