#include "interpreters/transpose.h"

#include <array>

#include "ir/profiler.h"
#include "ir/trace.h"
#include "interpreters/jvp.h"

namespace fluxion {

namespace {
std::array<TransposeRule, kNumPrims>& transpose_table() {
  static std::array<TransposeRule, kNumPrims> t{};
  return t;
}
}  // namespace

TransposeRule transpose_rule(Prim p) { return transpose_table()[size_t(p)]; }
void register_transpose_rule(Prim p, TransposeRule rule) { transpose_table()[size_t(p)] = rule; }

std::vector<Array> transpose_eval(const Program& p, const std::vector<bool>& linear, std::span<const Array> known,
                                  std::span<const Array> cts) {
  std::vector<Array> value(p.types.size());
  std::vector<char> is_linear(p.types.size(), 0);
  size_t k = 0;
  for (size_t i = 0; i < p.invars.size(); ++i) {
    if (linear[i])
      is_linear[size_t(p.invars[i])] = 1;
    else
      value[size_t(p.invars[i])] = known[k++];
  }
  for (size_t i = 0; i < p.constvars.size(); ++i) value[size_t(p.constvars[i])] = p.consts[i];
  auto read = [&](const Atom& a) { return a.is_literal() ? literal_array(a.lit) : value[size_t(a.var)]; };

  // Forward: everything that does not depend on a linear input is an ordinary computation.
  std::vector<char> eqn_linear(p.eqns.size(), 0);
  std::vector<Array> ins;
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    const Eqn& q = p.eqns[e];
    for (const Atom& a : q.inputs)
      if (!a.is_literal() && is_linear[size_t(a.var)]) eqn_linear[e] = 1;
    if (eqn_linear[e]) {
      for (int32_t v : q.outputs) is_linear[size_t(v)] = 1;
      continue;
    }
    ins.clear();
    for (const Atom& a : q.inputs) ins.push_back(read(a));
    std::vector<Array> o = bind(q.prim, ins, q.params, q.loc);
    for (size_t j = 0; j < o.size(); ++j) value[size_t(q.outputs[j])] = std::move(o[j]);
  }

  // Backward: accumulate cotangents of linear vars.
  std::vector<Array> ct(p.types.size());
  for (size_t i = 0; i < p.outvars.size(); ++i) {
    const Atom& a = p.outvars[i];
    if (a.is_literal() || !is_linear[size_t(a.var)]) continue;
    ct[size_t(a.var)] = add_tangents(ct[size_t(a.var)], cts[i], {});
  }
  std::vector<Array> cts_out;
  std::vector<LinearArg> args;
  for (size_t e = p.eqns.size(); e-- > 0;) {
    if (!eqn_linear[e]) continue;
    const Eqn& q = p.eqns[e];
    cts_out.clear();
    bool any = false;
    for (int32_t v : q.outputs) {
      cts_out.push_back(ct[size_t(v)]);
      any = any || !is_zero(ct[size_t(v)]);
      ct[size_t(v)] = Array();  // consumed
    }
    if (!any) continue;
    args.clear();
    for (const Atom& a : q.inputs) {
      LinearArg arg;
      arg.aval = p.aval(a);
      if (!a.is_literal() && is_linear[size_t(a.var)])
        arg.linear = true;
      else
        arg.value = read(a);
      args.push_back(std::move(arg));
    }
    const TransposeRule rule = transpose_rule(q.prim);
    if (!rule)
      throw TypeError("TypeError: reverse-mode differentiation at " + q.loc.str() + ": " +
                      std::string(prim_name(q.prim)) +
                      " appears in the linear (tangent) program but has no transpose rule");
    LocationScope at(q.loc);
    std::vector<Array> in_cts = rule(cts_out, args, q.params, q.loc);
    for (size_t i = 0; i < q.inputs.size(); ++i)
      if (args[i].linear && i < in_cts.size() && !is_zero(in_cts[i])) {
        int32_t v = q.inputs[i].var;
        ct[size_t(v)] = add_tangents(ct[size_t(v)], in_cts[i], q.loc);
      }
  }
  std::vector<Array> result;
  for (size_t i = 0; i < p.invars.size(); ++i)
    if (linear[i]) result.push_back(ct[size_t(p.invars[i])]);
  return result;
}

Program transpose_program(const Program& p, const std::vector<bool>& linear) {
  profiler::Scope prof("transform", "transpose");
  TraceScope scope;
  std::vector<Array> known, cts;
  for (size_t i = 0; i < p.invars.size(); ++i)
    if (!linear[i]) known.push_back(scope.new_input(p.type(p.invars[i])));
  for (const Atom& a : p.outvars) cts.push_back(scope.new_input(p.aval(a)));
  std::vector<Array> r = transpose_eval(p, linear, known, cts);
  size_t j = 0;
  for (size_t i = 0; i < p.invars.size(); ++i)
    if (linear[i]) {
      if (is_zero(r[j])) r[j] = zeros_for(p.type(p.invars[i]), {});
      ++j;
    }
  return scope.finish(r);
}

}  // namespace fluxion
