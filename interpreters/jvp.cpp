#include "interpreters/jvp.h"

#include <algorithm>
#include <array>

#include "ir/profiler.h"
#include "ir/trace.h"
#include "lax/lax.h"

namespace fluxion {

namespace {
std::array<JvpRules, kNumPrims>& jvp_table() {
  static std::array<JvpRules, kNumPrims> t{};
  return t;
}
}  // namespace

const JvpRules& jvp_rules(Prim p) { return jvp_table()[size_t(p)]; }
void register_jvp_rules(Prim p, const JvpRules& rules) { jvp_table()[size_t(p)] = rules; }

Array zeros_for(const AbstractArray& aval, SourceLoc loc) { return lax::zeros(aval, loc); }

std::vector<Array> linear_jvp(Prim p, std::span<const Array> primals, std::span<const Array> tangents,
                              const Params& params, SourceLoc loc) {
  std::vector<Array> ts;
  for (size_t i = 0; i < primals.size(); ++i) ts.push_back(is_zero(tangents[i]) ? lax::zeros_like(primals[i], loc) : tangents[i]);
  return {bind1(p, ts, params, loc)};
}

Array add_tangents(const Array& a, const Array& b, SourceLoc loc) {
  if (is_zero(a)) return b;
  if (is_zero(b)) return a;
  return bind1(Prim::add_any, {a, b}, {}, loc);
}

void jvp_eval(const Program& p, std::span<const Array> primals, std::span<const Array> tangents,
              std::vector<Array>& outs, std::vector<Array>& out_tangents) {
  std::vector<Array> primal(p.types.size()), tangent(p.types.size());
  for (size_t i = 0; i < p.invars.size(); ++i) {
    primal[size_t(p.invars[i])] = primals[i];
    if (!is_zero(tangents[i]) && has_tangent_space(p.type(p.invars[i]).dtype)) tangent[size_t(p.invars[i])] = tangents[i];
  }
  for (size_t i = 0; i < p.constvars.size(); ++i) primal[size_t(p.constvars[i])] = p.consts[i];
  auto read = [&](const Atom& a) { return a.is_literal() ? literal_array(a.lit) : primal[size_t(a.var)]; };
  auto read_t = [&](const Atom& a) { return a.is_literal() ? Array() : tangent[size_t(a.var)]; };

  std::vector<Array> ins, tins;
  for (const Eqn& e : p.eqns) {
    ins.clear();
    tins.clear();
    bool any = false;
    for (const Atom& a : e.inputs) {
      ins.push_back(read(a));
      tins.push_back(read_t(a));
      any = any || !is_zero(tins.back());
    }
    const JvpRules& r = jvp_rules(e.prim);
    std::vector<Array> o, t;
    if (any && r.rule && r.computes_primal) {
      // The rule returns the outputs, then their tangents (see JvpRules::computes_primal).
      LocationScope at(e.loc);
      t = r.rule(ins, tins, {}, e.params, e.loc);
      o.assign(t.begin(), t.begin() + long(e.outputs.size()));
      t.erase(t.begin(), t.begin() + long(e.outputs.size()));
      for (size_t j = 0; j < o.size(); ++j) primal[size_t(e.outputs[j])] = o[j];
    } else {
      o = bind(e.prim, ins, e.params, e.loc);
      for (size_t j = 0; j < o.size(); ++j) primal[size_t(e.outputs[j])] = o[j];
      if (!any) continue;
      LocationScope at(e.loc);
      if (r.zero_derivative) continue;
      if (!r.rule)
        throw TypeError("TypeError: differentiation of " + std::string(prim_name(e.prim)) + " at " + e.loc.str() +
                        ": the primitive has no JVP rule");
      t = r.rule(ins, tins, o, e.params, e.loc);
    }
    for (size_t j = 0; j < o.size(); ++j)
      if (j < t.size() && !is_zero(t[j]) && has_tangent_space(o[j].dtype())) tangent[size_t(e.outputs[j])] = t[j];
  }
  outs.clear();
  out_tangents.clear();
  for (const Atom& a : p.outvars) {
    outs.push_back(read(a));
    out_tangents.push_back(read_t(a));
  }
}

Program jvp_program(const Program& p, const std::vector<bool>& nonzero, std::vector<bool>* out_nonzero,
                    size_t num_tangent_outputs) {
  profiler::Scope prof("transform", "jvp");
  TraceScope scope;
  std::vector<Array> primals, tangents(p.invars.size());
  for (int32_t v : p.invars) primals.push_back(scope.new_input(p.type(v)));
  for (size_t i = 0; i < p.invars.size(); ++i)
    if (nonzero[i]) tangents[i] = scope.new_input(p.type(p.invars[i]));
  std::vector<Array> outs, touts;
  jvp_eval(p, primals, tangents, outs, touts);
  if (out_nonzero) {
    out_nonzero->clear();
    for (const Array& t : touts) out_nonzero->push_back(!is_zero(t));
  }
  std::vector<Array> results = outs;
  touts.resize(std::min(touts.size(), num_tangent_outputs));
  for (size_t i = 0; i < touts.size(); ++i)
    results.push_back(is_zero(touts[i]) ? zeros_for(outs[i].aval(), {}) : touts[i]);
  return scope.finish(results);
}

}  // namespace fluxion
