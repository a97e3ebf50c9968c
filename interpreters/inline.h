// Program surgery shared by the transforms: splicing one program into another, and inlining the
// primitives that only wrap a sub-program (custom_jvp_call, custom_vjp_call, checkpoint) once no
// transformation needs them any more -- before lowering, which compiles their bodies in place.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "ir/program.h"

namespace fluxion {

/// Appends callee's eqns to caller with callee's invars bound to `args` (atoms of caller) and its
/// constvars added to caller's; returns callee's outvars as atoms of caller. No shape rule runs and
/// no Array is made.
std::vector<Atom> append_program(Program& caller, const Program& callee, const std::vector<Atom>& args);

/// Replaces every custom_jvp_call / custom_vjp_call / checkpoint eqn by its body, also inside the
/// sub-programs of other eqns (cond branches, loop bodies).
Program inline_calls(Program p);

/// Rewrites every sub-program e's params hold (cond branches, while and scan bodies, ...) with
/// `rewrite`, which returns nothing to leave a program as it is. Returns whether any changed.
bool rewrite_subprograms(Eqn& e, const std::function<std::optional<Program>(const Program&)>& rewrite);

}  // namespace fluxion
