// Eager ops on the CPU that run compiled: transcendental elementwise primitives (exp, tanh, sin,
// pow, ...) on large float arrays run as a one-op program through the CPU pipeline -- vectorized
// math, the kernels' threads -- instead of the reference kernel's scalar libm loop, 10-50x slower
// per element. JAX compiles every eager op; Fluxion does it only where it pays (docs/performance.md,
// "Eager ops on large arrays"):
//   - arrays of 1M elements or more: at the first call (the compile, about 10 ms, or a disk-cache
//     hit, is less than the reference kernel's time on it);
//   - 16K elements or more: from the third call with the same operand types (a loop over them);
//   - smaller arrays and every other primitive: the reference kernel, as before;
//   - inside fx::eval (ir/trace.cpp's eval_program, the reference interpreter): never.
// FLUXION_EAGER_COMPILE=off turns it off (the reference kernel always), =always compiles every such
// op at any size (the A/B of the benchmarks, and the tests' way to drive it).
#pragma once

#include <cstdint>
#include <optional>

namespace fluxion::runtime {

enum class EagerCompile { auto_, always, off };

/// Overrides FLUXION_EAGER_COMPILE for this process (tests); std::nullopt goes back to the setting.
void override_eager_compile(std::optional<EagerCompile> mode);

/// Eager ops run compiled so far in this process (tests, benchmarks).
int64_t eager_compiled_runs();

}  // namespace fluxion::runtime
