#include "interpreters/simplify.h"

#include <array>
#include <unordered_set>

#include "ir/profiler.h"
#include "ir/array.h"
#include "ir/eval_rules.h"

namespace fluxion {

namespace {

// (A complex literal is v only when its imaginary part is 0.)
bool is_literal_value(const Atom& a, double v) { return a.is_literal() && a.lit.as_double() == v && a.lit.im == 0; }

// What is known about a var's value: a splat of a literal (broadcast_in_dim of a scalar literal).
struct Splat {
  bool known = false;
  double value = 0;
};

class Simplifier {
 public:
  Simplifier(Program& p, bool cse)
      : p_(p),
        sub_(p.types.size()),
        splat_(p.types.size()),
        producer_(p.types.size(), -1),
        seen_(16, KeyHash{&out_}, KeyEq{&out_}),
        cse_enabled_(cse) {
    for (size_t i = 0; i < sub_.size(); ++i) sub_[i] = Atom(int32_t(i));
  }

  void run() {
    out_.reserve(p_.eqns.size());
    for (Eqn& e : p_.eqns) {
      for (Atom& a : e.inputs) a = resolve(a);
      compose(e);
      if (fold(e) || identity(e)) continue;
      out_.push_back(std::move(e));
      if (cse_enabled_ && !has_effect(out_.back()) && cse()) {  // two prints print twice
        out_.pop_back();
        continue;
      }
      record();
    }
    p_.eqns = std::move(out_);
    for (Atom& a : p_.outvars) a = resolve(a);
  }

 private:
  Atom resolve(const Atom& a) const { return a.is_literal() ? a : sub_[size_t(a.var)]; }
  AbstractArray type_of(const Atom& a) const { return p_.aval(a); }
  bool zero(const Atom& a) const {
    return is_literal_value(a, 0) || (!a.is_literal() && splat_[size_t(a.var)].known && splat_[size_t(a.var)].value == 0);
  }
  bool one(const Atom& a) const {
    return is_literal_value(a, 1) || (!a.is_literal() && splat_[size_t(a.var)].known && splat_[size_t(a.var)].value == 1);
  }
  // Replaces the eqn's single output by `a` if a has exactly the output's type.
  bool forward(const Eqn& e, const Atom& a) {
    const AbstractArray& t = p_.type(e.outputs[0]);
    AbstractArray at = type_of(a);
    if (!(at.shape == t.shape && at.dtype == t.dtype)) return false;
    sub_[size_t(e.outputs[0])] = a;
    return true;
  }

  bool fold(const Eqn& e) {
    if (e.outputs.size() != 1 || e.inputs.empty()) return false;
    for (const Atom& a : e.inputs)
      if (!a.is_literal()) return false;
    const AbstractArray& t = p_.type(e.outputs[0]);
    if (t.ndim() != 0) return false;
    const EvalRules& r = eval_rules(e.prim);
    // Collectives (prims/collectives.cpp) meet the other devices of their axis: never at compile time.
    if (!r.kernel || e.params.has("axis_key")) return false;
    // One element of any dtype (complex128 is 16 bytes), aligned for the kernels' typed reads.
    struct alignas(16) Slot {
      unsigned char bytes[16];
    };
    std::vector<Slot> in_bytes(e.inputs.size());
    std::vector<AbstractArray> in_avals;
    std::vector<View> ins;
    in_avals.reserve(e.inputs.size());
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      e.inputs[i].lit.store(in_bytes[i].bytes);
      in_avals.push_back(e.inputs[i].lit.aval());
    }
    for (size_t i = 0; i < e.inputs.size(); ++i) ins.push_back(View{in_bytes[i].bytes, &in_avals[i]});
    Slot out_bytes{};
    View out{out_bytes.bytes, &t};
    r.kernel(ins, std::span<const View>(&out, 1), e.params);
    sub_[size_t(e.outputs[0])] = Atom(Literal::load(out_bytes.bytes, t.dtype, t.weak_type));
    return true;
  }

  bool identity(const Eqn& e) {
    const std::vector<Atom>& in = e.inputs;
    switch (e.prim) {
      case Prim::add:
      case Prim::add_any:
        if (zero(in[1]) && forward(e, in[0])) return true;
        return zero(in[0]) && forward(e, in[1]);
      case Prim::sub: return zero(in[1]) && forward(e, in[0]);
      case Prim::mul:
        if (one(in[1]) && forward(e, in[0])) return true;
        return one(in[0]) && forward(e, in[1]);
      case Prim::div: return one(in[1]) && forward(e, in[0]);
      case Prim::neg:
        if (const Eqn* inner = producer(in[0]); inner && inner->prim == Prim::neg) return forward(e, inner->inputs[0]);
        return false;
      case Prim::convert_element_type:
      case Prim::reshape:
      case Prim::squeeze:
        return type_of(in[0]).same_type(p_.type(e.outputs[0])) && forward(e, in[0]);
      case Prim::broadcast_in_dim: {
        if (type_of(in[0]).shape == p_.type(e.outputs[0]).shape) return forward(e, in[0]);
        return false;
      }
      case Prim::transpose: {
        const IntList& perm = e.params.get_ints("permutation");
        bool id = true;
        for (size_t i = 0; i < perm.size(); ++i) id = id && perm[i] == int64_t(i);
        if (id) return forward(e, in[0]);
        return false;
      }
      case Prim::reduce_sum:
      case Prim::reduce_max:
      case Prim::reduce_min:
      case Prim::reduce_prod:
        return e.params.get_ints("axes").empty() && forward(e, in[0]);
      case Prim::select: return in[1] == in[2] && forward(e, in[1]);
      default: return false;
    }
  }

  // cse: eqns are keyed by their index in out_ (the hash and equality read the eqn there).
  struct KeyHash {
    const std::vector<Eqn>* eqns;
    size_t operator()(int32_t i) const {
      const Eqn& e = (*eqns)[size_t(i)];
      size_t h = hash_combine(size_t(e.prim), e.params.hash());
      for (const Atom& a : e.inputs)
        h = hash_combine(h, a.is_literal() ? std::hash<double>()(a.lit.as_double()) + size_t(a.lit.dtype) : size_t(a.var));
      return h;
    }
  };
  struct KeyEq {
    const std::vector<Eqn>* eqns;
    bool operator()(int32_t i, int32_t j) const {
      const Eqn& a = (*eqns)[size_t(i)];
      const Eqn& b = (*eqns)[size_t(j)];
      return a.prim == b.prim && a.inputs == b.inputs && a.outputs.size() == b.outputs.size() && a.params == b.params;
    }
  };

  // Whether the eqn just appended to out_ repeats an earlier one; if so its outputs are redirected.
  bool cse() {
    const int32_t i = int32_t(out_.size() - 1);
    auto it = seen_.find(i);
    if (it == seen_.end()) return false;
    const Eqn& e = out_.back();
    const Eqn& prev = out_[size_t(*it)];
    for (size_t j = 0; j < prev.outputs.size(); ++j) sub_[size_t(e.outputs[j])] = Atom(prev.outputs[j]);
    return true;
  }

  void record() {
    const int32_t i = int32_t(out_.size() - 1);
    const Eqn& e = out_.back();
    if (cse_enabled_) seen_.insert(i);
    for (int32_t v : e.outputs) producer_[size_t(v)] = i;
    if (e.prim == Prim::broadcast_in_dim && e.inputs[0].is_literal()) {
      splat_[size_t(e.outputs[0])] = Splat{e.inputs[0].lit.im == 0, e.inputs[0].lit.as_double()};
    }
  }

  const Eqn* producer(const Atom& a) const {
    if (a.is_literal() || producer_[size_t(a.var)] < 0) return nullptr;
    return &out_[size_t(producer_[size_t(a.var)])];
  }

  // Chains of data movement collapse into one eqn: transpose(transpose x), reshape(reshape x),
  // broadcast_in_dim(broadcast_in_dim x). The inner eqn then usually dies in dce.
  void compose(Eqn& e) {
    if (e.inputs.empty()) return;
    const Eqn* found = producer(e.inputs[0]);
    if (!found || found->prim != e.prim || found->outputs.size() != 1) return;
    const Eqn& inner = *found;
    switch (e.prim) {
      case Prim::transpose: {
        const IntList& outer_perm = e.params.get_ints("permutation");
        const IntList& inner_perm = inner.params.get_ints("permutation");
        IntList perm;
        for (int64_t d : outer_perm) perm.push_back(inner_perm[size_t(d)]);
        e.params.set("permutation", perm);
        e.inputs[0] = inner.inputs[0];
        return;
      }
      case Prim::reshape:
        e.inputs[0] = inner.inputs[0];
        return;
      case Prim::broadcast_in_dim: {
        const IntList& outer_dims = e.params.get_ints("broadcast_dimensions");
        const IntList& inner_dims = inner.params.get_ints("broadcast_dimensions");
        IntList dims;
        for (int64_t d : inner_dims) dims.push_back(outer_dims[size_t(d)]);
        e.params.set("broadcast_dimensions", dims);
        e.inputs[0] = inner.inputs[0];
        return;
      }
      default: return;
    }
  }

  Program& p_;
  std::vector<Atom> sub_;
  std::vector<Splat> splat_;
  std::vector<Eqn> out_;
  std::vector<int32_t> producer_;  // var -> index in out_ of the eqn defining it, or -1
  std::unordered_set<int32_t, KeyHash, KeyEq> seen_;
  bool cse_enabled_;
};

// Renumbers vars densely in order of definition (constvars, invars, eqn outputs).
Program compact(Program p) {
  std::vector<int32_t> map(p.types.size(), -1);
  Program q;
  q.types.reserve(p.types.size());
  q.eqns.reserve(p.eqns.size());
  auto def = [&](int32_t v) {
    map[size_t(v)] = q.new_var(p.types[size_t(v)]);
    return map[size_t(v)];
  };
  auto use = [&](const Atom& a) { return a.is_literal() ? a : Atom(map[size_t(a.var)]); };
  for (int32_t v : p.constvars) q.constvars.push_back(def(v));
  for (int32_t v : p.invars) q.invars.push_back(def(v));
  q.consts = std::move(p.consts);
  for (Eqn& e : p.eqns) {
    for (Atom& a : e.inputs) a = use(a);
    for (int32_t& v : e.outputs) v = def(v);
    q.eqns.push_back(std::move(e));
  }
  for (const Atom& a : p.outvars) q.outvars.push_back(use(a));
  return q;
}

}  // namespace

Program dce(Program p) {
  std::vector<char> live(p.types.size(), 0);
  for (const Atom& a : p.outvars)
    if (!a.is_literal()) live[size_t(a.var)] = 1;
  std::vector<Eqn> kept;
  for (size_t k = p.eqns.size(); k-- > 0;) {
    Eqn& e = p.eqns[k];
    bool used = false;
    for (int32_t v : e.outputs) used = used || live[size_t(v)];
    if (!used && !has_effect(e)) continue;  // a print is kept though nothing reads it
    for (const Atom& a : e.inputs)
      if (!a.is_literal()) live[size_t(a.var)] = 1;
    kept.push_back(std::move(e));
  }
  p.eqns.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
  std::vector<int32_t> constvars;
  std::vector<Array> consts;
  for (size_t i = 0; i < p.constvars.size(); ++i)
    if (live[size_t(p.constvars[i])]) {
      constvars.push_back(p.constvars[i]);
      if (i < p.consts.size()) consts.push_back(p.consts[i]);
    }
  bool had_values = p.consts.size() == p.constvars.size();
  p.constvars = std::move(constvars);
  p.consts = had_values ? std::move(consts) : std::vector<Array>{};
  return compact(std::move(p));
}

Program drop_effects(Program p) {
  if (!has_effect(p)) return p;
  std::vector<Eqn> kept;
  for (Eqn& e : p.eqns) {
    if (!has_effect(e)) {
      kept.push_back(std::move(e));
      continue;
    }
    if (eval_rules(e.prim).effect) continue;
    Params params;  // the effects are in sub-programs
    for (const auto& [key, v] : e.params.entries()) {
      if (const ProgramRef* prog = std::get_if<ProgramRef>(&v); prog && *prog) {
        params.set(key, std::make_shared<const Program>(drop_effects(**prog)));
      } else if (const ProgramList* list = std::get_if<ProgramList>(&v)) {
        ProgramList stripped;
        for (const ProgramRef& q : *list) stripped.push_back(q ? std::make_shared<const Program>(drop_effects(*q)) : q);
        params.set(key, stripped);
      } else {
        params.set(key, v);
      }
    }
    e.params = std::move(params);
    kept.push_back(std::move(e));
  }
  p.eqns = std::move(kept);
  return dce(std::move(p));
}

Program simplify(Program p, bool cse) {
  profiler::Scope prof("transform", "simplify");
  Simplifier(p, cse).run();
  return dce(std::move(p));
}

}  // namespace fluxion
