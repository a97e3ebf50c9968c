// Simplification passes over programs. Derived programs (jvp, linearize, transpose) are what users
// read in make_ir output and what jit compiles, so they must stay small:
//   fold      -- eqns whose operands are all literals and whose result is a scalar become literals;
//   identity  -- x+0, x*1, x/1, neg(neg x), same-type convert/reshape/broadcast/transpose,
//                transpose(transpose x), select(p, x, x), reduce over no axes -> x;
//   cse       -- an eqn identical to an earlier one (primitive, params, operands) reuses its result;
//   dce       -- eqns whose results are unused and unused constvars are dropped;
// then variables are renumbered densely.
#pragma once
#include "ir/program.h"

namespace fluxion {

/// All passes, to a fixed point of dce. The program's interface (invars, outvars) is unchanged.
Program simplify(Program p);

/// Only dead-code elimination (and renumbering).
Program dce(Program p);

}  // namespace fluxion
