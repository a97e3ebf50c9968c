// The seam through which the compile floor speeds up eager ops on the CPU: bind (trace.cpp) asks the
// registered runner first; the runner (compile/eager_cpu.cpp) either runs the op as a compiled
// one-op program or declines (std::nullopt), and bind then runs the reference kernel as always.
// The ir floor cannot call the compiler itself: the runner is registered from above.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "ir/array.h"
#include "ir/params.h"
#include "ir/primitive.h"

namespace fluxion {

using EagerCpuRunner = std::optional<std::vector<Array>> (*)(Prim p, std::span<const Array> inputs,
                                                             const Params& params,
                                                             std::span<const AbstractArray> out_avals,
                                                             const Device& on, bool committed, SourceLoc loc);
void set_eager_cpu_runner(EagerCpuRunner runner);

}  // namespace fluxion
