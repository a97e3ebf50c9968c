#include "prims/registry.h"

#include <array>

namespace fluxion {

namespace {
struct Records {
  std::array<PrimitiveRules, kNumPrims> rules{};
  std::array<int, kNumPrims> count{};
};
// Filled as the library loads, read-only afterwards.
Records& records() {
  static Records r;
  return r;
}
}  // namespace

Registration::Registration(const PrimitiveRules& r) {
  Records& all = records();
  all.rules[size_t(r.prim)] = r;
  ++all.count[size_t(r.prim)];
  register_eval_rules(r.prim, EvalRules{r.shape, r.kernel, r.impl, r.kernel_params, r.effect});
  register_jvp_rules(r.prim, JvpRules{r.jvp, r.zero_derivative, r.jvp_computes_primal});
  register_transpose_rule(r.prim, r.transpose);
  register_batch_rule(r.prim, r.batch);
  register_shard_rule(r.prim, r.shard);
  donation::register_reads(r.prim, r.reads);
}

const PrimitiveRules& rules(Prim p) { return records().rules[size_t(p)]; }
int registrations(Prim p) { return records().count[size_t(p)]; }

}  // namespace fluxion
