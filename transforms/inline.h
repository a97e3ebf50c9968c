// Program surgery shared by the transforms: splicing one program into another, and inlining the
// primitives that only wrap a sub-program (custom_jvp_call, custom_vjp_call, checkpoint) once no
// transformation needs them any more -- before lowering, which compiles their bodies in place.
#pragma once
#include <vector>

#include "ir/program.h"

namespace fluxion {

/// Appends callee's eqns to caller with callee's invars bound to `args` (atoms of caller) and its
/// constvars added to caller's; returns callee's outvars as atoms of caller. No shape rule runs and
/// no Array is made.
std::vector<Atom> append_program(Program& caller, const Program& callee, const std::vector<Atom>& args);

/// Replaces every custom_jvp_call / custom_vjp_call / checkpoint eqn (recursively) by its body.
Program inline_calls(Program p);

}  // namespace fluxion
