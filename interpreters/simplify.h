// Simplification passes over programs. Derived programs (jvp, linearize, transpose) are what users
// read in make_ir output and what jit compiles, so they must stay small:
//   fold      -- eqns whose operands are all literals and whose result is a scalar become literals;
//   identity  -- x+0, x*1, x/1, neg(neg x), same-type convert/reshape/broadcast/transpose,
//                transpose(transpose x), select(p, x, x), reduce over no axes -> x;
//   compose   -- transpose(transpose x), reshape(reshape x), broadcast(broadcast x) -> one eqn;
//   cse       -- an eqn identical to an earlier one (primitive, params, operands) reuses its result;
//   dce       -- eqns whose results are unused and unused constvars are dropped;
// then variables are renumbered densely.
#pragma once
#include "ir/program.h"

namespace fluxion {

/// All passes. The program's interface (invars, outvars) is unchanged. `cse = false` keeps
/// recomputations apart (checkpointed backward passes must not be merged with the forward pass).
Program simplify(Program p, bool cse = true);

/// Only dead-code elimination (and renumbering).
Program dce(Program p);

/// p without its effects (debug callbacks), also inside sub-programs: for a derived program that
/// recomputes what another eqn already did, printing, once (a cond's JVP branches).
Program drop_effects(Program p);

}  // namespace fluxion
