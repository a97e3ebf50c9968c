// Internal to lowering/: the tiling plan of a fused kernel, written as a transform-dialect script.
#pragma once
#include <mlir/IR/BuiltinOps.h>

#include <string>

namespace fluxion::lowering {

/// Tags every linalg.generic of `module` (attribute fx_tag) and returns the transform script that
/// tiles and vectorizes each one (empty when there is nothing to do). See tiling.cpp for the plan.
std::string tile_and_vectorize_script(mlir::ModuleOp module, int num_threads);

}  // namespace fluxion::lowering
