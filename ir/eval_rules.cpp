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
void register_eval_rules(Prim p, const EvalRules& rules) { table()[size_t(p)] = rules; }

}  // namespace fluxion
