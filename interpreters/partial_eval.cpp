#include "interpreters/partial_eval.h"

#include <unordered_map>

#include "ir/profiler.h"
#include "ir/array.h"

namespace fluxion {

PartialEval partial_eval(Program p, const std::vector<bool>& unknown_in, const std::vector<bool>& instantiate) {
  profiler::Scope prof("transform", "partial_eval");
  std::vector<char> unknown(p.types.size(), 0);
  for (size_t i = 0; i < p.invars.size(); ++i) unknown[size_t(p.invars[i])] = unknown_in[i];
  std::vector<char> eqn_unknown(p.eqns.size(), 0);
  for (size_t k = 0; k < p.eqns.size(); ++k) {
    for (const Atom& a : p.eqns[k].inputs)
      if (!a.is_literal() && unknown[size_t(a.var)]) eqn_unknown[k] = 1;
    if (eqn_unknown[k])
      for (int32_t v : p.eqns[k].outputs) unknown[size_t(v)] = 1;
  }

  PartialEval r;
  // Residuals: known, non-constant vars that the unknown side reads (in order of first need).
  std::vector<char> is_const(p.types.size(), 0);
  for (int32_t v : p.constvars) is_const[size_t(v)] = 1;
  std::vector<int32_t> residuals;
  std::vector<char> is_residual(p.types.size(), 0);
  auto need = [&](const Atom& a) {
    if (a.is_literal() || unknown[size_t(a.var)] || is_const[size_t(a.var)] || is_residual[size_t(a.var)]) return;
    is_residual[size_t(a.var)] = 1;
    residuals.push_back(a.var);
  };
  for (size_t k = 0; k < p.eqns.size(); ++k)
    if (eqn_unknown[k])
      for (const Atom& a : p.eqns[k].inputs) need(a);
  for (size_t i = 0; i < p.outvars.size(); ++i) {
    const Atom& a = p.outvars[i];
    bool u = !a.is_literal() && unknown[size_t(a.var)];
    r.out_unknown.push_back(u || instantiate[i]);
    if (!u && instantiate[i]) need(a);
  }
  r.num_residuals = residuals.size();

  // Both halves share p's var numbering and constants (dce drops what each does not use).
  Program& k = r.known;
  k.types = p.types;
  k.constvars = p.constvars;
  k.consts = p.consts;
  for (size_t i = 0; i < p.invars.size(); ++i)
    if (!unknown_in[i]) k.invars.push_back(p.invars[i]);
  for (size_t e = 0; e < p.eqns.size(); ++e)
    if (!eqn_unknown[e]) k.eqns.push_back(std::move(p.eqns[e]));
  for (size_t i = 0; i < p.outvars.size(); ++i)
    if (!r.out_unknown[i]) k.outvars.push_back(p.outvars[i]);
  for (int32_t v : residuals) k.outvars.push_back(Atom(v));

  Program& u = r.unknown;
  u.types = std::move(p.types);
  u.constvars = std::move(p.constvars);
  u.consts = std::move(p.consts);
  u.invars = residuals;
  for (size_t i = 0; i < p.invars.size(); ++i)
    if (unknown_in[i]) u.invars.push_back(p.invars[i]);
  for (size_t e = 0; e < p.eqns.size(); ++e)
    if (eqn_unknown[e]) u.eqns.push_back(std::move(p.eqns[e]));
  for (size_t i = 0; i < p.outvars.size(); ++i)
    if (r.out_unknown[i]) u.outvars.push_back(p.outvars[i]);
  return r;
}

}  // namespace fluxion
