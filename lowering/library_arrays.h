// The arrays of a library call (lower_library.cpp), shared by the calls whose argument arrays end in
// them (fluxion_rt_call_prim, fluxion_rt_windowed): one description per operand and output -- dtype,
// rank, dims, address -- as kernels/call_arrays.h reads them back.
#pragma once
#include <string>

#include "lowering/lower.h"

namespace fluxion::lowering {

/// Appends the descriptions of `in` and of fresh outputs of types `out` to `layout` and calls
/// `symbol` with it (library_call); returns the outputs as tensors. `private_operands`: each operand
/// is read from a copy of its own (calls with effects, lower_library.cpp).
std::vector<mlir::Value> call_on_arrays(LowerCtx& c, const std::string& symbol, std::vector<LibraryArg> layout,
                                        std::span<const Operand> in, std::span<const AbstractArray> out,
                                        bool private_operands = false);

}  // namespace fluxion::lowering
