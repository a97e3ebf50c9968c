#include "interpreters/fold_transposed_products.h"

#include "interpreters/inline.h"

namespace fluxion {

Program fold_transposed_products(Program in) {
  const std::vector<int> uses = in.use_counts(), producer = in.producers();
  Program p = std::move(in);
  for (Eqn& e : p.eqns)  // bodies of scans and branches too (an RNN's gradient is one)
    rewrite_subprograms(e, [](const Program& q) { return std::optional<Program>(fold_transposed_products(q)); });
  std::vector<bool> dropped(p.eqns.size(), false);
  bool any = false;
  for (size_t k = 0; k < p.eqns.size(); ++k) {
    Eqn& t = p.eqns[k];
    if (t.prim != Prim::transpose || t.inputs[0].is_literal() || t.params.get_ints("permutation") != IntList{1, 0}) continue;
    const int32_t v = t.inputs[0].var;
    const int d = producer[size_t(v)];
    if (d < 0 || uses[size_t(v)] != 1 || p.eqns[size_t(d)].prim != Prim::dot_general) continue;
    Eqn& dot = p.eqns[size_t(d)];
    const IntList &lc = dot.params.get_ints("lhs_contracting"), &rc = dot.params.get_ints("rhs_contracting");
    if (!dot.params.get_ints("lhs_batch").empty() || !dot.params.get_ints("rhs_batch").empty()) continue;
    if (dot.inputs[0].is_literal() || dot.inputs[1].is_literal()) continue;
    if (p.aval(dot.inputs[0]).ndim() - int(lc.size()) != 1 || p.aval(dot.inputs[1]).ndim() - int(rc.size()) != 1) continue;
    Params swapped;
    for (const auto& [key, value] : dot.params.entries()) swapped.set(key, value);
    swapped.set("lhs_contracting", rc);
    swapped.set("rhs_contracting", lc);
    dot.params = swapped;
    std::swap(dot.inputs[0], dot.inputs[1]);
    dot.outputs = t.outputs;
    dropped[k] = true;
    any = true;
  }
  if (!any) return p;
  std::vector<Eqn> kept;
  for (size_t k = 0; k < p.eqns.size(); ++k)
    if (!dropped[k]) kept.push_back(std::move(p.eqns[k]));
  p.eqns = std::move(kept);
  return p;
}

}  // namespace fluxion
