#include "interpreters/vjp.h"

#include "ir/trace.h"
#include "interpreters/inline.h"
#include "interpreters/jvp.h"
#include "interpreters/partial_eval.h"
#include "interpreters/simplify.h"
#include "interpreters/transpose.h"

namespace fluxion {

LinearizedPrograms linearize_programs(const Program& p, const std::vector<bool>& wrt, size_t num_diff_outputs) {
  Program j = jvp_program(p, wrt, nullptr, num_diff_outputs);
  const size_t n_in = p.invars.size(), n_out = p.outvars.size();
  size_t n_wrt = 0;
  for (bool w : wrt) n_wrt += w;
  std::vector<bool> unknown(n_in + n_wrt, false), instantiate(n_out + num_diff_outputs, false);
  for (size_t i = n_in; i < unknown.size(); ++i) unknown[i] = true;
  for (size_t i = n_out; i < instantiate.size(); ++i) instantiate[i] = true;
  PartialEval pe = partial_eval(std::move(j), unknown, instantiate);
  LinearizedPrograms r;
  r.forward = simplify(std::move(pe.known));
  r.linear = simplify(std::move(pe.unknown));
  r.num_outputs = n_out;
  r.num_residuals = pe.num_residuals;
  return r;
}

VjpPrograms vjp_programs(const Program& p, const std::vector<bool>& wrt, size_t num_diff_outputs) {
  LinearizedPrograms lin = linearize_programs(p, wrt, num_diff_outputs);
  std::vector<bool> linear(lin.linear.invars.size(), false);
  for (size_t i = lin.num_residuals; i < linear.size(); ++i) linear[i] = true;
  VjpPrograms r;
  r.forward = std::move(lin.forward);
  r.backward = simplify(transpose_program(lin.linear, linear));
  r.num_outputs = lin.num_outputs;
  r.num_residuals = lin.num_residuals;
  return r;
}

Program grad_program(const Program& p, const std::vector<bool>& wrt, const std::vector<bool>& keep_outputs) {
  VjpPrograms v = vjp_programs(p, wrt, 1);
  Program g;
  std::vector<Atom> in;
  for (int32_t var : p.invars) {
    int32_t n = g.new_var(p.type(var));
    g.invars.push_back(n);
    in.push_back(Atom(n));
  }
  std::vector<Atom> fwd = append_program(g, v.forward, in);
  std::vector<Atom> back_in(fwd.begin() + long(v.num_outputs), fwd.end());
  const AbstractArray out = p.out_avals().at(0);
  back_in.push_back(Atom(Literal::of_double(1.0, out.dtype, out.weak_type)));  // the seed cotangent
  std::vector<Atom> grads = append_program(g, v.backward, back_in);
  for (size_t i = 0; i < v.num_outputs; ++i)
    if (keep_outputs[i]) g.outvars.push_back(fwd[i]);
  g.outvars.insert(g.outvars.end(), grads.begin(), grads.end());
  // No cse across the two passes: a checkpointed backward pass recomputes on purpose.
  return simplify(std::move(g), /*cse=*/false);
}

}  // namespace fluxion
