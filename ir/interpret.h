// The interpreter loop under fx::eval (eval_program, ir/trace.cpp), open to a hook: a caller that
// runs some equations its own way (int8 products in transforms/quant_program.cpp) and the rest
// through bind, with each intermediate freed after its last use.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "ir/program.h"

namespace fluxion {

/// Runs eqn k itself (its single output) or declines (std::nullopt: bind runs it).
using EqnHook = std::function<std::optional<Array>(size_t k, const Eqn& e, const std::vector<Array>& ins)>;

/// The program's outputs for `args` (its invars, unchecked: an empty Array is allowed where only
/// hooked equations read it). No hook: every equation through bind.
std::vector<Array> interpret(const Program& p, std::span<const Array> args, const EqnHook& hook = {});

}  // namespace fluxion
