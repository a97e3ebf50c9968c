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
  return table()[size_t(e.prim)].effect || any_sub_program(e, [](const Program& q) { return has_effect(q); });
}

void register_eval_rules(Prim p, const EvalRules& rules) { table()[size_t(p)] = rules; }

}  // namespace fluxion
