// Fluxion's own MLIR passes that live in files of their own (pipeline.cpp registers them).
#pragma once

namespace fluxion::lowering {

/// fx-accurate-math (accurate_math.cpp): f32 sin/cos through libm(vec), log of subnormals.
void register_accurate_math_pass();

}  // namespace fluxion::lowering
