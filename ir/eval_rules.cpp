#include "ir/eval_rules.h"

#include <array>

namespace fluxion {

namespace {
// Filled as the library loads (before any bind can run), read-only afterwards.
std::array<EvalRules, kNumPrims>& table() {
  static std::array<EvalRules, kNumPrims> t{};
  return t;
}
}  // namespace

const EvalRules& eval_rules(Prim p) { return table()[size_t(p)]; }
bool has_effect(const Program& p) {
  for (const Eqn& e : p.eqns)
    if (has_effect(e)) return true;
  return false;
}

bool has_effect(const Eqn& e) {
  if (table()[size_t(e.prim)].effect) return true;
  for (const auto& [key, v] : e.params.entries()) {
    if (const ProgramRef* prog = std::get_if<ProgramRef>(&v); prog && *prog && has_effect(**prog)) return true;
    if (const ProgramList* list = std::get_if<ProgramList>(&v))
      for (const ProgramRef& q : *list)
        if (q && has_effect(*q)) return true;
  }
  return false;
}

void register_eval_rules(Prim p, const EvalRules& rules) { table()[size_t(p)] = rules; }

}  // namespace fluxion
