#include "interpreters/partition.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <unordered_map>

#include "ir/profiler.h"
#include "ir/trace.h"
#include "interpreters/inline.h"
#include "interpreters/reshard.h"

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

namespace {

// The specs and types of an eqn's operands as the partitioner holds them.
struct Operands {
  std::vector<PartitionSpec> specs;
  std::vector<AbstractArray> avals;
};

// No rule: every operand whole on every device, the eqn as it is.
ShardPlan replicated_plan(const Eqn& e, size_t nin, const std::vector<AbstractArray>& out_avals) {
  ShardPlan plan;
  plan.in.assign(nin, PartitionSpec{});
  for (size_t j = 0; j < out_avals.size(); ++j) plan.out.push_back(Layout{});
  plan.params = e.params;
  return plan;
}

std::string spec_of(const Layout& l) {
  std::string s = l.spec.str();
  if (!l.partial.empty()) {
    s += " partial over";
    for (const std::string& a : l.partial) s += " '" + a + "'";
  }
  return s;
}

class Partitioner {
 public:
  Partitioner(const Program& p, const Mesh& mesh)
      : p_(p), mesh_(mesh), local_(p.types.size()), layout_(p.types.size()), hint_(p.types.size()) {}

  Partitioned run(const std::vector<PartitionSpec>& in_specs, const std::vector<std::optional<PartitionSpec>>& out_specs) {
    TraceScope scope;
    Partitioned r;
    for (size_t i = 0; i < p_.invars.size(); ++i) {
      const int32_t v = p_.invars[i];
      AbstractArray block = p_.type(v);
      check_layout(mesh_, in_specs[i], block, "jit", SourceLoc{}, "input " + std::to_string(i) + ":");
      block.shape = block_shape(mesh_, in_specs[i], block.shape);
      local_[size_t(v)] = scope.new_input(block);
      layout_[size_t(v)] = Layout{in_specs[i], {}};
    }
    for (size_t i = 0; i < p_.constvars.size(); ++i) local_[size_t(p_.constvars[i])] = p_.consts[i];  // whole, everywhere
    hints(out_specs);
    for (const Eqn& e : p_.eqns) eqn(e);
    std::vector<Array> outs;
    for (size_t j = 0; j < p_.outvars.size(); ++j) {
      const Atom& a = p_.outvars[j];
      if (a.is_literal()) {
        outs.push_back(literal_array(a.lit));
        r.out_specs.push_back(PartitionSpec{});
        continue;
      }
      const PartitionSpec want = j < out_specs.size() && out_specs[j] ? *out_specs[j] : layout_[size_t(a.var)].spec;
      check_layout(mesh_, want, p_.type(a.var), "jit", SourceLoc{}, "output " + std::to_string(j) + ":");
      outs.push_back(operand(a.var, want, SourceLoc{}));
      r.out_specs.push_back(want);
    }
    r.body = scope.finish(outs);
    r.in_specs = in_specs;
    r.notes = std::move(log_.notes);
    r.collective_bytes = log_.bytes;
    return r;
  }

 private:
  // Value v laid out by `want`, resharded once per layout asked for.
  Array operand(int32_t v, const PartitionSpec& want, SourceLoc loc) {
    Layout& have = layout_[size_t(v)];
    if (have.partial.empty() && have.spec == want) return local_[size_t(v)];
    const std::string key = std::to_string(v) + "|" + want.str();
    if (auto it = moved_.find(key); it != moved_.end()) return it->second;
    Layout from = have;
    log_.notes.push_back("value " + p_.type(v).str() + " from " + spec_of(have) + " to " + want.str() + ":");
    Array moved = reshard(local_[size_t(v)], from, want, mesh_, p_.type(v), log_, loc);
    if (log_.notes.back().back() == ':') log_.notes.back() += " a local slice";
    return moved_[key] = moved;
  }

  void eqn(const Eqn& e) {
    Operands ops;
    for (const Atom& a : e.inputs) {
      ops.specs.push_back(a.is_literal() ? PartitionSpec{} : layout_[size_t(a.var)].spec);
      ops.avals.push_back(a.is_literal() ? literal_array(a.lit).aval() : p_.type(a.var));
    }
    std::vector<AbstractArray> out_avals;
    for (int32_t v : e.outputs) out_avals.push_back(p_.type(v));
    if (e.prim == Prim::shard_map) return inline_shard_map(e);
    if (e.prim == Prim::sharding_constraint) return constrain(e);
    const ShardRule rule = shard_rule(e.prim);
    std::optional<ShardPlan> plan = rule ? hinted_plan(e, ops, rule) : std::nullopt;
    if (rule && !plan) plan = rule(ops.specs, ops.avals, e.params, mesh_);
    if (!plan) {
      plan = replicated_plan(e, e.inputs.size(), out_avals);
      log_.notes.push_back(std::string(prim_name(e.prim)) + (e.loc.known() ? " at " + e.loc.str() : std::string()) +
                           ": computed replicated (" + (rule ? "its rule declined" : "no sharding rule") + ")");
    }
    const AxisList through = passing_partial(e, *plan);
    std::vector<Array> in;
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      const Atom& a = e.inputs[i];
      if (a.is_literal()) in.push_back(literal_array(a.lit));
      else if (!through.empty() && !layout_[size_t(a.var)].partial.empty()) in.push_back(local_[size_t(a.var)]);
      else in.push_back(operand(a.var, plan->in[i], e.loc));
    }
    std::vector<Array> out = bind(e.prim, in, plan->params, e.loc);
    for (size_t j = 0; j < out.size(); ++j) {
      const Shape want = block_shape(mesh_, plan->out[j].spec, out_avals[j].shape);
      if (!(out[j].shape() == want))
        throw std::logic_error(std::string("the sharding rule of ") + std::string(prim_name(e.prim)) + " gave a block of " +
                               out[j].aval().str() + " for " + out_avals[j].str() + " laid out by " +
                               plan->out[j].spec.str() + " (expected " + want.str() + ")");
      local_[size_t(e.outputs[j])] = out[j];
      layout_[size_t(e.outputs[j])] = plan->out[j];
      AxisList& partial = layout_[size_t(e.outputs[j])].partial;
      partial.insert(partial.end(), through.begin(), through.end());
    }
  }

  // Backward propagation: the layout every use of a value asks for, where they all agree -- a
  // sharding_constraint's spec, an out_sharding, or the hint H of the one result of an eqn whose
  // rule, given its operands of that result's shape in H (the others whole), computes it in H
  // without moving anything (hint_through). Any other use leaves the value without a hint, so
  // that a hint never splits a value that something else wants whole. Outputs without an
  // out_sharding have no opinion either way.
  void hints(const std::vector<std::optional<PartitionSpec>>& out_specs) {
    std::vector<std::optional<PartitionSpec>> asked(p_.types.size());
    std::vector<bool> blocked(p_.types.size(), false);
    auto ask = [&](const Atom& a, const std::optional<PartitionSpec>& h) {
      if (a.is_literal()) return;
      const size_t v = size_t(a.var);
      if (!h || (asked[v] && !(*asked[v] == *h))) blocked[v] = true;
      asked[v] = h;
    };
    auto settle = [&](int32_t v) { hint_[size_t(v)] = blocked[size_t(v)] ? std::nullopt : asked[size_t(v)]; };
    for (size_t j = 0; j < p_.outvars.size() && j < out_specs.size(); ++j)
      if (out_specs[j]) ask(p_.outvars[j], out_specs[j]);
    for (auto e = p_.eqns.rbegin(); e != p_.eqns.rend(); ++e) {
      for (int32_t o : e->outputs) settle(o);  // every use of o comes after e: all seen
      const std::vector<std::optional<PartitionSpec>> through = hint_through(*e);
      for (size_t i = 0; i < e->inputs.size(); ++i) ask(e->inputs[i], through[i]);
    }
    for (int32_t v : p_.invars) settle(v);
    for (int32_t v : p_.constvars) settle(v);
  }

  // What eqn e asks of each operand's layout: a constraint its spec; an eqn with one result hinted
  // H, H for the operands of the result's shape where its rule then computes the result in H
  // without moving them; otherwise nothing.
  std::vector<std::optional<PartitionSpec>> hint_through(const Eqn& e) const {
    std::vector<std::optional<PartitionSpec>> r(e.inputs.size());
    if (e.prim == Prim::sharding_constraint) {
      r[0] = parse_specs(e.params.get<std::string>("spec")).at(0);
      return r;
    }
    const ShardRule rule = shard_rule(e.prim);
    if (!rule || e.prim == Prim::shard_map || e.outputs.size() != 1) return r;
    const std::optional<PartitionSpec>& h = hint_[size_t(e.outputs[0])];
    if (!h || h->axes().empty()) return r;
    const Shape& shape = p_.type(e.outputs[0]).shape;
    std::vector<PartitionSpec> specs(e.inputs.size());
    std::vector<AbstractArray> avals;
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      const Atom& a = e.inputs[i];
      avals.push_back(a.is_literal() ? literal_array(a.lit).aval() : p_.type(a.var));
      if (!a.is_literal() && avals.back().shape == shape) specs[i] = *h;
    }
    const std::optional<ShardPlan> plan = rule(specs, avals, e.params, mesh_);
    if (!plan || !plan->out[0].partial.empty() || !(plan->out[0].spec == *h)) return r;
    for (size_t i = 0; i < specs.size(); ++i)
      if (!(plan->in[i] == specs[i])) return r;
    for (size_t i = 0; i < specs.size(); ++i)
      if (!specs[i].axes().empty()) r[i] = specs[i];
    return r;
  }

  // The plan with each whole operand presented in the layout its uses ask for (hint_), taken when
  // the rule then leaves every operand where it is or sliced locally (free: nothing moves), makes no
  // partial sums, and gives every result the layout its uses ask for -- the eqn then runs on blocks
  // instead of whole on every device with its result sliced afterwards.
  std::optional<ShardPlan> hinted_plan(const Eqn& e, const Operands& ops, ShardRule rule) const {
    std::vector<PartitionSpec> specs = ops.specs;
    bool any = false;
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      if (e.inputs[i].is_literal()) continue;
      const Layout& l = layout_[size_t(e.inputs[i].var)];
      if (!l.partial.empty()) return std::nullopt;
      const std::optional<PartitionSpec>& h = hint_[size_t(e.inputs[i].var)];
      if (h && l.spec.axes().empty() && !h->axes().empty()) {
        specs[i] = *h;
        any = true;
      }
    }
    if (!any) return std::nullopt;
    std::optional<ShardPlan> plan = rule(specs, ops.avals, e.params, mesh_);
    if (!plan) return std::nullopt;
    for (size_t i = 0; i < e.inputs.size(); ++i)
      if (!e.inputs[i].is_literal() && !(plan->in[i] == specs[i])) return std::nullopt;
    for (size_t j = 0; j < plan->out.size(); ++j) {
      const std::optional<PartitionSpec>& h = hint_[size_t(e.outputs[j])];
      if (!plan->out[j].partial.empty() || !h || !(plan->out[j].spec == *h)) return std::nullopt;
    }
    return plan;
  }

  // The axes of the partial sums that pass through e unsummed (ShardPlan::linear), or none.
  AxisList passing_partial(const Eqn& e, const ShardPlan& plan) const {
    AxisList axes;
    size_t count = 0;
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      const bool in_mask = i < 32 && ((plan.linear >> i) & 1u);
      const Layout* l = e.inputs[i].is_literal() ? nullptr : &layout_[size_t(e.inputs[i].var)];
      if (!l || l->partial.empty()) {
        if (in_mask && !plan.one_at_a_time) return {};  // jointly linear: every such operand partial
        continue;
      }
      if (!in_mask || !(l->spec == plan.in[i])) return {};
      if (count++ > 0 && (plan.one_at_a_time || l->partial != axes)) return {};
      axes = l->partial;
    }
    for (const Layout& o : plan.out)
      for (const std::string& a : o.spec.axes())
        if (std::find(axes.begin(), axes.end(), a) != axes.end()) return {};
    return axes;
  }

  // with_sharding_constraint: the operand moved to the spec, and nothing else (the primitive
  // itself is not part of the per-device program).
  void constrain(const Eqn& e) {
    const Mesh m = mesh_from_params(e.params.get<std::string>("mesh_axes"), e.params.get_ints("mesh_devices"),
                                    e.params.get<std::string>("mesh_platform"));
    if (!(m == mesh_))
      throw ValueError("ValueError: with_sharding_constraint" + (e.loc.known() ? " at " + e.loc.str() : std::string()) +
                       ": its sharding is over " + m.str() + ", the sharded jit's over " + mesh_.str());
    const PartitionSpec spec = parse_specs(e.params.get<std::string>("spec")).at(0);
    const Atom& a = e.inputs[0];
    local_[size_t(e.outputs[0])] = a.is_literal() ? literal_array(a.lit) : operand(a.var, spec, e.loc);
    layout_[size_t(e.outputs[0])] = Layout{a.is_literal() ? PartitionSpec{} : spec, {}};
  }

  // A shard_map inside sharded jit: its operands moved to its in_specs, its body spliced in.
  void inline_shard_map(const Eqn& e) {
    const ShardMapSpecsView s = specs_of(e.params);
    std::vector<Array> in;
    for (size_t i = 0; i < e.inputs.size(); ++i)
      in.push_back(e.inputs[i].is_literal() ? literal_array(e.inputs[i].lit) : operand(e.inputs[i].var, s.in[i], e.loc));
    std::vector<Array> out = eval_program(*e.params.get<ProgramRef>("body"), in);
    for (size_t j = 0; j < out.size(); ++j) {
      local_[size_t(e.outputs[j])] = out[j];
      layout_[size_t(e.outputs[j])] = Layout{s.out[j], {}};
    }
  }

  struct ShardMapSpecsView {
    std::vector<PartitionSpec> in, out;
  };
  ShardMapSpecsView specs_of(const Params& params) const {
    if (params.get<std::string>("mesh_axes") != mesh_axes_text(mesh_) ||
        params.get_ints("mesh_devices") != mesh_device_ids(mesh_))
      throw ValueError("ValueError: a shard_map inside sharded jit runs over another mesh than the jit's (" +
                       params.get<std::string>("mesh_axes") + " vs " + mesh_axes_text(mesh_) + ")");
    return {parse_specs(params.get<std::string>("in_specs")), parse_specs(params.get<std::string>("out_specs"))};
  }

  const Program& p_;
  const Mesh& mesh_;
  std::vector<Array> local_;
  std::vector<Layout> layout_;
  std::vector<std::optional<PartitionSpec>> hint_;  // the layout a value's uses ask for (hints())
  std::unordered_map<std::string, Array> moved_;
  ReshardLog log_;
};

}  // namespace

Partitioned partition_program(const Program& p, const Mesh& mesh, const std::vector<PartitionSpec>& in_specs,
                              const std::vector<std::optional<PartitionSpec>>& out_specs) {
  profiler::Scope prof("transform", "partition");
  return Partitioner(p, mesh).run(in_specs, out_specs);
}

// ---- shared rules ------------------------------------------------------------------------------------

std::optional<ShardPlan> shard_elementwise(std::span<const PartitionSpec> in, std::span<const AbstractArray> avals,
                                           const Params& params, const Mesh&) {
  // The most split operand of full rank decides; the others follow it, scalars stay whole.
  size_t rank = 0;
  for (const AbstractArray& a : avals) rank = std::max(rank, a.shape.size());
  PartitionSpec best;
  size_t most = 0;
  bool any = false;
  for (size_t i = 0; i < in.size(); ++i)
    if (avals[i].shape.size() == rank && (!any || in[i].axes().size() > most)) {
      best = in[i];
      most = in[i].axes().size();
      any = true;
    }
  ShardPlan plan;
  for (const AbstractArray& a : avals) plan.in.push_back(a.shape.size() == rank ? best : PartitionSpec{});
  plan.out.push_back(Layout{best, {}});
  plan.params = params;
  return plan;
}

}  // namespace fluxion
