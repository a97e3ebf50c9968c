#include "interpreters/inline.h"

#include "ir/array.h"

namespace fluxion {

std::vector<Atom> append_program(Program& caller, const Program& callee, const std::vector<Atom>& args) {
  std::vector<Atom> map(callee.types.size());
  for (size_t i = 0; i < callee.invars.size(); ++i) map[size_t(callee.invars[i])] = args[i];
  for (size_t i = 0; i < callee.constvars.size(); ++i) {
    int32_t v = caller.new_var(callee.type(callee.constvars[i]));
    caller.constvars.push_back(v);
    caller.consts.push_back(callee.consts[i]);
    map[size_t(callee.constvars[i])] = Atom(v);
  }
  caller.eqns.reserve(caller.eqns.size() + callee.eqns.size());
  for (const Eqn& e : callee.eqns) {
    Eqn n = e;
    for (Atom& a : n.inputs)
      if (!a.is_literal()) a = map[size_t(a.var)];
    for (int32_t& v : n.outputs) {
      int32_t fresh = caller.new_var(callee.type(v));
      map[size_t(v)] = Atom(fresh);
      v = fresh;
    }
    caller.eqns.push_back(std::move(n));
  }
  std::vector<Atom> outs;
  for (const Atom& a : callee.outvars) outs.push_back(a.is_literal() ? a : map[size_t(a.var)]);
  return outs;
}

Program inline_calls(Program p) {
  std::vector<Atom> sub(p.types.size());
  for (size_t i = 0; i < sub.size(); ++i) sub[i] = Atom(int32_t(i));
  auto resolve = [&](const Atom& a) { return a.is_literal() || size_t(a.var) >= sub.size() ? a : sub[size_t(a.var)]; };
  std::vector<Eqn> eqns = std::move(p.eqns);
  p.eqns.clear();
  for (Eqn& e : eqns) {
    for (Atom& a : e.inputs) a = resolve(a);
    const Program* body = nullptr;
    std::vector<Atom> args = e.inputs;
    size_t keep = e.outputs.size();
    switch (e.prim) {
      case Prim::custom_jvp_call: {
        body = e.params.get<ProgramRef>("call").get();
        size_t nc = size_t(e.params.get_int("num_consts")), nj = size_t(e.params.get_int("num_jvp_consts"));
        args.erase(args.begin() + long(nc), args.begin() + long(nc + nj));  // drop the JVP rule's consts
        break;
      }
      case Prim::custom_vjp_call: {
        body = e.params.get<ProgramRef>("fwd").get();
        size_t nf = size_t(e.params.get_int("num_consts")), nb = size_t(e.params.get_int("num_bwd_consts"));
        args.erase(args.begin() + long(nf), args.begin() + long(nf + nb));  // drop bwd's consts
        break;
      }
      case Prim::checkpoint: body = e.params.get<ProgramRef>("program").get(); break;
      default: break;
    }
    if (!body) {
      rewrite_subprograms(e, [](const Program& q) { return std::optional<Program>(inline_calls(q)); });
      p.eqns.push_back(std::move(e));
      continue;
    }
    Program inlined = inline_calls(*body);
    std::vector<Atom> outs = append_program(p, inlined, args);
    for (size_t j = 0; j < keep; ++j) sub[size_t(e.outputs[j])] = outs[j];
  }
  for (Atom& a : p.outvars) a = resolve(a);
  return p;
}

bool rewrite_subprograms(Eqn& e, const std::function<std::optional<Program>(const Program&)>& rewrite) {
  std::vector<std::pair<std::string, ParamValue>> updates;
  for (const auto& [key, value] : e.params.entries()) {
    if (const auto* ref = std::get_if<ProgramRef>(&value)) {
      if (std::optional<Program> q = rewrite(**ref)) updates.emplace_back(key, std::make_shared<const Program>(std::move(*q)));
    } else if (const auto* list = std::get_if<ProgramList>(&value)) {
      ProgramList rewritten;
      bool any = false;
      for (const ProgramRef& q : *list) {
        std::optional<Program> r = rewrite(*q);
        any = any || r.has_value();
        rewritten.push_back(r ? std::make_shared<const Program>(std::move(*r)) : q);
      }
      if (any) updates.emplace_back(key, std::move(rewritten));
    }
  }
  for (auto& [key, value] : updates) e.params.set(key, std::move(value));
  return !updates.empty();
}

}  // namespace fluxion
