#include "compile/one_op.h"

#include "ir/trace.h"

namespace fluxion::runtime {

Program one_op_program(Prim p, std::span<const AbstractArray> in_avals, const Params& params, SourceLoc loc) {
  Program program;
  Eqn e;
  e.prim = p;
  e.params = params;
  e.loc = loc;
  for (const AbstractArray& a : in_avals) {
    const int32_t v = program.new_var(a);
    program.invars.push_back(v);
    e.inputs.push_back(Atom(v));
  }
  for (AbstractArray& a : abstract_eval(p, in_avals, params, loc)) {
    const int32_t v = program.new_var(a);
    e.outputs.push_back(v);
    program.outvars.push_back(Atom(v));
  }
  program.eqns.push_back(std::move(e));
  return program;
}

}  // namespace fluxion::runtime
