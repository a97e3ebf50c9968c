// Proves the MLIR 19 link: the jit issue replaces this with the Program -> MLIR lowering.
#pragma once
#include <string>

namespace fluxion::lowering {

/// Builds an empty MLIR module with the func dialect loaded and returns its text.
std::string mlir_probe();

}  // namespace fluxion::lowering
