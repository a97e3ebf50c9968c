#include "interpreters/partition.h"

#include <array>
#include <stdexcept>

#include "interpreters/inline.h"

namespace fluxion {

namespace {
std::array<ShardRule, kNumPrims>& table() {
  static std::array<ShardRule, kNumPrims> t{};
  return t;
}
}  // namespace

ShardRule shard_rule(Prim p) { return table()[size_t(p)]; }
void register_shard_rule(Prim p, ShardRule rule) { table()[size_t(p)] = rule; }

Program drop_sharding_constraints(Program p) {
  std::vector<Atom> sub(p.types.size());
  for (size_t i = 0; i < sub.size(); ++i) sub[i] = Atom(int32_t(i));
  auto resolve = [&](const Atom& a) { return a.is_literal() ? a : sub[size_t(a.var)]; };
  std::vector<Eqn> eqns = std::move(p.eqns);
  p.eqns.clear();
  for (Eqn& e : eqns) {
    for (Atom& a : e.inputs) a = resolve(a);
    if (e.prim == Prim::sharding_constraint) {
      sub[size_t(e.outputs[0])] = e.inputs[0];
      continue;
    }
    rewrite_subprograms(e, [](const Program& q) { return std::optional<Program>(drop_sharding_constraints(q)); });
    p.eqns.push_back(std::move(e));
  }
  for (Atom& a : p.outvars) a = resolve(a);
  return p;
}

Partitioned partition_program(const Program&, const Mesh&, const std::vector<PartitionSpec>&,
                              const std::vector<std::optional<PartitionSpec>>&) {
  throw std::logic_error("partition_program: not written yet");
}

}  // namespace fluxion
