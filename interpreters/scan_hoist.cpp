#include "interpreters/scan_hoist.h"

#include <algorithm>
#include <memory>

#include "ir/eval_rules.h"
#include "ir/trace.h"
#include "interpreters/inline.h"
#include "interpreters/simplify.h"
#include "interpreters/vmap.h"

namespace fluxion {
namespace {

// A scan eqn taken apart. The outer operands and the body's invars by role (parallel vectors), the
// body's outvars by role, and the eqn's outputs; pack() puts it back together.
struct Scan {
  std::vector<Atom> consts, carries, xs;              // outer operands
  std::vector<int32_t> in_consts, in_carries, in_xs;  // the body's invars
  std::vector<Atom> out_carries, out_ys;              // the body's outvars
  std::vector<int32_t> carry_outs, ys_outs;           // the eqn's outputs
  Program body;
  int64_t length = 0;
  const Eqn* eqn = nullptr;
};

Scan unpack(const Eqn& e) {
  Scan s;
  s.eqn = &e;
  s.body = *e.params.get<ProgramRef>("body");
  s.length = e.params.get_int("length");
  const size_t nc = size_t(e.params.get_int("num_consts")), nk = size_t(e.params.get_int("num_carry"));
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const int32_t v = s.body.invars[i];
    if (i < nc) s.consts.push_back(e.inputs[i]), s.in_consts.push_back(v);
    else if (i < nc + nk) s.carries.push_back(e.inputs[i]), s.in_carries.push_back(v);
    else s.xs.push_back(e.inputs[i]), s.in_xs.push_back(v);
  }
  for (size_t i = 0; i < e.outputs.size(); ++i) {
    if (i < nk) s.out_carries.push_back(s.body.outvars[i]), s.carry_outs.push_back(e.outputs[i]);
    else s.out_ys.push_back(s.body.outvars[i]), s.ys_outs.push_back(e.outputs[i]);
  }
  return s;
}

Eqn pack(Scan& s) {
  Program& b = s.body;
  b.invars = s.in_consts;
  b.invars.insert(b.invars.end(), s.in_carries.begin(), s.in_carries.end());
  b.invars.insert(b.invars.end(), s.in_xs.begin(), s.in_xs.end());
  b.outvars = s.out_carries;
  b.outvars.insert(b.outvars.end(), s.out_ys.begin(), s.out_ys.end());
  Eqn e = *s.eqn;
  e.params.set("body", std::make_shared<const Program>(dce(std::move(b))));
  e.params.set("num_consts", int64_t(s.consts.size()));
  e.params.set("num_carry", int64_t(s.carries.size()));
  e.inputs = s.consts;
  e.inputs.insert(e.inputs.end(), s.carries.begin(), s.carries.end());
  e.inputs.insert(e.inputs.end(), s.xs.begin(), s.xs.end());
  e.outputs = s.carry_outs;
  e.outputs.insert(e.outputs.end(), s.ys_outs.begin(), s.ys_outs.end());
  return e;
}

bool has_subprograms(const Eqn& e) {
  for (const auto& [key, value] : e.params.entries())
    if (std::holds_alternative<ProgramRef>(value) || std::holds_alternative<ProgramList>(value)) return true;
  return false;
}

int64_t elements(const AbstractArray& t) { return t.size(); }

AbstractArray stacked(AbstractArray t, int64_t length) {
  Shape s{length};
  for (int64_t d : t.shape) s.push_back(d);
  t.shape = s;
  t.weak_type = false;
  return t;
}

// ---- invariant and scanned-only work ---------------------------------------------------------------
enum Level : int { kConst = 0, kScanned = 1, kCarried = 2 };
enum class Role { stay, hoist, copy };

// Whether a value computed from scanned inputs alone is worth computing for every step before the
// loop, as a [length, ...] array. Not control flow (see below). A pure expansion (a broadcast, a product without contraction such
// as an outer product) only adds memory traffic when stacked: only if no larger than its inputs.
// Anything else up to 16x its scanned inputs (a projection to a wider state), within 64M elements.
bool worth_stacking(const Eqn& e, int64_t out, int64_t scanned_in, int64_t length) {
  // Batched, a cond runs every branch and a while loop runs until its slowest lane is done: in the
  // loop each step pays for one branch and its own trip count.
  if (has_subprograms(e)) return false;
  const bool expansion = e.prim == Prim::broadcast_in_dim ||
                         (e.prim == Prim::dot_general && e.params.get_ints("lhs_contracting").empty());
  if (out > (expansion ? 1 : 16) * scanned_in) return false;
  return length * out <= (int64_t(1) << 26);
}

// Step 1: each body eqn's role -- hoisted (reads no carry, and is constant or worth stacking),
// copied (a constant made of literals) or staying. False when nothing worth moving was found.
bool classify_invariants(const Scan& s, std::vector<Role>& role) {
  const Program& b = s.body;
  std::vector<int> level(b.types.size(), kConst);
  std::vector<char> outside(b.types.size(), 0);  // computable before the loop
  for (int32_t v : s.in_consts) outside[size_t(v)] = 1;
  for (int32_t v : b.constvars) outside[size_t(v)] = 1;
  for (int32_t v : s.in_carries) level[size_t(v)] = kCarried;
  for (int32_t v : s.in_xs) level[size_t(v)] = kScanned, outside[size_t(v)] = 1;

  role.assign(b.eqns.size(), Role::stay);
  bool worth = false;
  for (size_t i = 0; i < b.eqns.size(); ++i) {
    const Eqn& e = b.eqns[i];
    int lvl = kConst;
    bool all_outside = true, any_var = false;
    int64_t scanned_in = 0, out = 0;
    for (const Atom& a : e.inputs) {
      if (a.is_literal()) continue;
      any_var = true;
      lvl = std::max(lvl, level[size_t(a.var)]);
      all_outside = all_outside && outside[size_t(a.var)];
      if (level[size_t(a.var)] == kScanned) scanned_in += elements(b.type(a.var));
    }
    for (int32_t o : e.outputs) out += elements(b.type(o));
    if (!any_var && !has_subprograms(e) && !has_effect(e)) {
      // A constant made from literals: cheap, so both sides keep a copy.
      role[i] = Role::copy;
      for (int32_t o : e.outputs) outside[size_t(o)] = 1;
      continue;
    }
    const bool hoist = !has_effect(e) && all_outside &&  // a print runs once per iteration
                       lvl <= kScanned && (lvl == kConst || worth_stacking(e, out, scanned_in, s.length));
    for (int32_t o : e.outputs) level[size_t(o)] = lvl, outside[size_t(o)] = hoist;
    if (!hoist) continue;
    role[i] = Role::hoist;
    worth = worth || lvl == kConst || e.prim == Prim::dot_general;
  }
  return worth;
}

// Step 2: the values the loop still reads -- outputs of hoisted eqns used by the eqns that stay.
std::vector<int32_t> boundary_values(const Program& b, const std::vector<Role>& role) {
  std::vector<char> read_inside(b.types.size(), 0);
  for (size_t i = 0; i < b.eqns.size(); ++i)
    if (role[i] != Role::hoist)
      for (const Atom& a : b.eqns[i].inputs)
        if (!a.is_literal()) read_inside[size_t(a.var)] = 1;
  for (const Atom& a : b.outvars)
    if (!a.is_literal()) read_inside[size_t(a.var)] = 1;
  std::vector<int32_t> boundary;
  for (size_t i = 0; i < b.eqns.size(); ++i)
    if (role[i] == Role::hoist)
      for (int32_t o : b.eqns[i].outputs)
        if (read_inside[size_t(o)]) boundary.push_back(o);
  return boundary;
}

// Step 3: the hoisted part as a program of the scan's consts and scanned inputs, batched over the
// steps with vmap and appended to `outer`; the boundary values' batch dims go to `dims`. Empty
// when a batching rule captured an array (the loop is then left as it is).
std::vector<Atom> batch_hoisted(const Scan& s, Program& outer, const std::vector<Role>& role,
                                const std::vector<int32_t>& boundary, std::vector<int64_t>& dims) {
  const Program& b = s.body;
  Program h = b;
  h.eqns.clear();
  for (size_t i = 0; i < b.eqns.size(); ++i)
    if (role[i] != Role::stay) h.eqns.push_back(b.eqns[i]);
  h.invars = s.in_consts;
  h.invars.insert(h.invars.end(), s.in_xs.begin(), s.in_xs.end());
  h.outvars.assign(boundary.begin(), boundary.end());
  h = dce(std::move(h));

  Program g;
  {
    TraceScope scope;
    LocationScope at(s.eqn->loc);
    std::vector<BatchedArray> args;
    for (const Atom& a : s.consts) args.push_back({scope.new_input(outer.aval(a)), kNotMapped});
    for (const Atom& a : s.xs) args.push_back({scope.new_input(outer.aval(a)), 0});
    std::vector<Array> outs;
    for (const BatchedArray& r : vmap_eval(h, args, s.length)) {
      dims.push_back(r.dim);
      outs.push_back(r.dim == kNotMapped ? r.value : move_batch_dim(r.value, r.dim, 0, s.eqn->loc));
    }
    g = scope.finish(outs);
  }
  if (!g.constvars.empty()) return {};
  std::vector<Atom> operands = s.consts;
  operands.insert(operands.end(), s.xs.begin(), s.xs.end());
  return append_program(outer, g, operands);
}

// Moves the body's eqns that read no carry out of the loop (see the header). The batched eqns are
// appended to `outer`; the scan gets the values it still needs as new consts or scanned inputs.
bool hoist_invariants(Scan& s, Program& outer) {
  if (s.length < 2) return false;
  std::vector<Role> role;
  if (!classify_invariants(s, role)) return false;
  const std::vector<int32_t> boundary = boundary_values(s.body, role);
  if (boundary.empty()) return false;
  std::vector<int64_t> dims;
  const std::vector<Atom> values = batch_hoisted(s, outer, role, boundary, dims);
  if (values.empty()) return false;
  for (size_t k = 0; k < boundary.size(); ++k) {
    if (dims[k] == kNotMapped) s.consts.push_back(values[k]), s.in_consts.push_back(boundary[k]);
    else s.xs.push_back(values[k]), s.in_xs.push_back(boundary[k]);
  }
  std::vector<Eqn> kept;
  for (size_t i = 0; i < s.body.eqns.size(); ++i)
    if (role[i] != Role::hoist) kept.push_back(std::move(s.body.eqns[i]));
  s.body.eqns = std::move(kept);
  return true;
}

// ---- accumulated products ---------------------------------------------------------------------------
IntList shifted(const IntList& dims, bool contract_steps) {
  IntList r;
  if (contract_steps) r.push_back(0);
  for (int64_t d : dims) r.push_back(d + 1);
  return r;
}

// A carry that only accumulates a product: carry index, and the body's add and dot_general eqns.
struct Acc {
  size_t carry, add, dot;
};

// Step 1: the carries whose update is `carry + dot_general(a, b)`, read nowhere else, with
// factors that can be had outside the loop.
std::vector<Acc> find_accumulators(const Scan& s) {
  const Program& b = s.body;
  const std::vector<int> def = b.producers(), uses = b.use_counts();
  std::vector<Acc> accs;
  for (size_t k = 0; k < s.in_carries.size(); ++k) {
    const int32_t c = s.in_carries[k];
    const Atom& o = s.out_carries[k];
    if (o.is_literal() || def[size_t(o.var)] < 0 || uses[size_t(c)] != 1 || uses[size_t(o.var)] != 1) continue;
    const Eqn& add = b.eqns[size_t(def[size_t(o.var)])];
    if ((add.prim != Prim::add && add.prim != Prim::add_any) || add.inputs.size() != 2) continue;
    const int side = add.inputs[0] == Atom(c) ? 0 : add.inputs[1] == Atom(c) ? 1 : -1;
    if (side < 0) continue;
    const Atom& t = add.inputs[size_t(1 - side)];
    if (t.is_literal() || def[size_t(t.var)] < 0 || uses[size_t(t.var)] != 1) continue;
    const Eqn& dot = b.eqns[size_t(def[size_t(t.var)])];
    if (dot.prim != Prim::dot_general || dot.inputs[0].is_literal() || dot.inputs[1].is_literal()) continue;
    if (!b.type(t.var).same_type(b.type(c))) continue;
    // Where each factor would come from outside the loop. A computed factor is stacked over the
    // steps: only if it is no larger than the carry and the stack within 64M elements (an outer
    // product as a factor would stack length x its size).
    enum class From { constant, scanned, computed };
    auto from = [&](int32_t v) {
      if (std::find(s.in_consts.begin(), s.in_consts.end(), v) != s.in_consts.end()) return From::constant;
      if (std::find(s.in_xs.begin(), s.in_xs.end(), v) != s.in_xs.end()) return From::scanned;
      return From::computed;
    };
    const int32_t fa = dot.inputs[0].var, fb = dot.inputs[1].var;
    const From ka = from(fa), kb = from(fb);
    if (ka == From::constant && kb == From::constant) continue;  // a loop invariant times length
    auto stackable = [&](int32_t v, From k) {
      return k != From::computed ||
             (elements(b.type(v)) <= elements(b.type(c)) && s.length * elements(b.type(v)) <= (int64_t(1) << 26));
    };
    if (!stackable(fa, ka) || !stackable(fb, kb)) continue;
    // With one constant factor the other is summed over the steps first, in its own dtype: only
    // where that is the carry's dtype and a wide float (an f16 sum overflows where the loop's
    // per-step products into an f32 carry did not; integers would wrap).
    if (ka == From::constant || kb == From::constant) {
      const DType summed = ka == From::constant ? b.type(fb).dtype : b.type(fa).dtype;
      if (summed != b.type(c).dtype || (summed != DType::float32 && summed != DType::float64)) continue;
    }
    accs.push_back({k, size_t(def[size_t(o.var)]), size_t(def[size_t(t.var)])});
  }
  return accs;
}

// Carries that only accumulate a dot_general leave the loop (see the header). The eqns computing
// their final values are appended to `post`, to follow the scan.
bool hoist_accumulators(Scan& s, Program& outer, std::vector<Eqn>& post) {
  Program& b = s.body;
  if (s.length == 0) return false;  // the carry passes through unchanged; nothing to move
  const std::vector<Acc> accs = find_accumulators(s);
  if (accs.empty()) return false;

  // Each factor outside the loop: a const as it is, a scanned input as it is (stacked), any other
  // body value stacked as a new output (once, however many products read it).
  std::vector<int32_t> stacked_as(b.types.size(), -1);
  auto outside = [&](int32_t v, bool& is_stacked) -> Atom {
    for (size_t i = 0; i < s.in_consts.size(); ++i)
      if (s.in_consts[i] == v) return is_stacked = false, s.consts[i];
    for (size_t i = 0; i < s.in_xs.size(); ++i)
      if (s.in_xs[i] == v) return is_stacked = true, s.xs[i];
    is_stacked = true;
    if (stacked_as[size_t(v)] < 0) {
      stacked_as[size_t(v)] = outer.new_var(stacked(b.type(v), s.length));
      s.out_ys.push_back(Atom(v));
      s.ys_outs.push_back(stacked_as[size_t(v)]);
    }
    return Atom(stacked_as[size_t(v)]);
  };
  auto emit = [&](Prim prim, Params params, std::vector<Atom> in, int32_t out = -1) -> Atom {
    std::vector<AbstractArray> avals;
    for (const Atom& a : in) avals.push_back(outer.aval(a));
    if (out < 0) out = outer.new_var(eval_rules(prim).shape(avals, params).at(0));
    post.push_back(Eqn{prim, std::move(params), std::move(in), {out}, s.eqn->loc});
    return Atom(out);
  };

  std::vector<char> drop_eqn(b.eqns.size(), 0), drop_carry(s.in_carries.size(), 0);
  for (const Acc& acc : accs) {
    const Eqn& dot = b.eqns[acc.dot];
    bool sa = false, sb = false;
    Atom a = outside(dot.inputs[0].var, sa), c = outside(dot.inputs[1].var, sb);
    Params p = dot.params;
    if (sa && sb) {  // sum_t a_t . b_t: the step axis becomes one more contracted dimension
      p.set("lhs_contracting", shifted(p.get_ints("lhs_contracting"), true));
      p.set("rhs_contracting", shifted(p.get_ints("rhs_contracting"), true));
      p.set("lhs_batch", shifted(p.get_ints("lhs_batch"), false));
      p.set("rhs_batch", shifted(p.get_ints("rhs_batch"), false));
    } else if (sa) {  // sum_t a_t . b = (sum_t a_t) . b
      a = emit(Prim::reduce_sum, Params{{"axes", IntList{0}}}, {a});
    } else if (sb) {
      c = emit(Prim::reduce_sum, Params{{"axes", IntList{0}}}, {c});
    }
    Atom total = emit(Prim::dot_general, p, {a, c});
    emit(Prim::add_any, Params{}, {s.carries[acc.carry], total}, s.carry_outs[acc.carry]);
    drop_eqn[acc.add] = drop_eqn[acc.dot] = 1;
    drop_carry[acc.carry] = 1;
  }
  std::vector<Eqn> kept;
  for (size_t i = 0; i < b.eqns.size(); ++i)
    if (!drop_eqn[i]) kept.push_back(std::move(b.eqns[i]));
  b.eqns = std::move(kept);
  for (size_t k = s.in_carries.size(); k-- > 0;)
    if (drop_carry[k]) {
      s.carries.erase(s.carries.begin() + long(k));
      s.in_carries.erase(s.in_carries.begin() + long(k));
      s.out_carries.erase(s.out_carries.begin() + long(k));
      s.carry_outs.erase(s.carry_outs.begin() + long(k));
    }
  return true;
}

// Consts and scanned inputs the body no longer reads are not passed in.
void drop_unread_operands(Scan& s) {
  Program& b = s.body;
  std::vector<char> read(b.types.size(), 0);
  for (const Eqn& e : b.eqns)
    for (const Atom& a : e.inputs)
      if (!a.is_literal()) read[size_t(a.var)] = 1;
  for (const Atom& a : b.outvars)
    if (!a.is_literal()) read[size_t(a.var)] = 1;
  auto prune = [&](std::vector<Atom>& outer, std::vector<int32_t>& inner) {
    for (size_t i = inner.size(); i-- > 0;)
      if (!read[size_t(inner[i])]) {
        outer.erase(outer.begin() + long(i));
        inner.erase(inner.begin() + long(i));
      }
  };
  prune(s.consts, s.in_consts);
  prune(s.xs, s.in_xs);
}

bool contains_scan(const Program& p) {
  for (const Eqn& e : p.eqns)
    if (e.prim == Prim::scan || any_sub_program(e, contains_scan)) return true;
  return false;
}

}  // namespace

Program hoist_scan_invariants(Program p) {
  if (!contains_scan(p)) return p;
  std::vector<Eqn> eqns = std::move(p.eqns);
  p.eqns.clear();
  bool changed_any = false;
  for (Eqn& e : eqns) {
    rewrite_subprograms(e, [](const Program& q) {
      return contains_scan(q) ? std::optional<Program>(hoist_scan_invariants(q)) : std::nullopt;
    });
    if (e.prim != Prim::scan) {
      p.eqns.push_back(std::move(e));
      continue;
    }
    Scan s = unpack(e);
    std::vector<Eqn> post;
    bool changed = hoist_invariants(s, p);
    changed = hoist_accumulators(s, p, post) || changed;
    if (!changed) {
      p.eqns.push_back(std::move(e));
      continue;
    }
    drop_unread_operands(s);
    p.eqns.push_back(pack(s));
    for (Eqn& q : post) p.eqns.push_back(std::move(q));
    changed_any = true;
  }
  // Folds what the rewrites leave behind (an accumulator's zero start: 0 + x). No cse: a
  // checkpointed recomputation must stay apart from the forward pass.
  return changed_any ? simplify(std::move(p), /*cse=*/false) : p;
}

}  // namespace fluxion
