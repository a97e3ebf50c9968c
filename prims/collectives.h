// What the collectives' family (prims/collectives.cpp) offers the floors above it.
#pragma once
#include "ir/trace.h"

namespace fluxion {

/// Binds the one-operand collective p. Inside a trace, a concrete scalar operand would be recorded
/// as a literal, and the jit's constant folding would then run the collective while compiling,
/// outside any pmap: it is given a dimension of size 1 for the call instead.
Array bind_collective(Prim p, const Array& x, const Params& params, SourceLoc loc);

}  // namespace fluxion
