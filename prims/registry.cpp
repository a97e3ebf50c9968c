#include "prims/registry.h"

namespace fluxion {

namespace {
RuleTable build_table() {
  RuleTable t(kNumPrims);
  register_unary_prims(t);
  register_binary_prims(t);
  register_compare_prims(t);
  register_convert_prims(t);
  register_shape_prims(t);
  register_indexing_prims(t);
  register_reduce_prims(t);
  register_sort_prims(t);
  register_dot_general_prims(t);
  register_random_prims(t);
  register_custom_prims(t);
  register_control_prims(t);
  register_control_batching(t);
  return t;
}
}  // namespace

const PrimitiveRules& rules(Prim p) {
  static const RuleTable table = build_table();
  return table[size_t(p)];
}

}  // namespace fluxion
