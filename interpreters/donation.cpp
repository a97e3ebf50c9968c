// interpreters/donation.h. Why an output may take a donated input's buffer:
//
// lowering/ emits the eqns in program order, and the passes after it only move a computation
// later: fx-fuse-elementwise fuses an elementwise producer into its consumer only when the
// producer has a single use, and fx-group-elementwise merges runs of consecutive elementwise ops
// into one loop whose body reads every input at the loop's own index. Nothing is computed twice.
// Output k is written by the op E that computes it (or copied at the end of the kernel). So the
// buffer of input j may hold output k if every read of j happens before E, or inside E's loop at
// the element E is writing:
//   * every eqn that reads j, or reads a value that may still be j's memory or computed from it
//     in a fused loop, comes no later than E;
//   * E itself may read j only through elementwise ops (identity indexing) -- a transpose or a
//     broadcast fused into E would read elements E has already overwritten;
//   * nothing reads j's memory at the end of the kernel (an output that is j, or a view of it).
// What stops the walk: a reduction, a contraction or a library call (dot_general, convolutions,
// the windowed ops, decompositions) reads its operands completely into a fresh result before
// anything after it runs; an elementwise result with several uses is materialised in a buffer of
// its own. Every other op (shape ops, gathers, control flow) may alias or be fused: the walk
// continues through all of its results' uses. Which of the three a primitive is, its block says
// (`.reads` in prims/registry.h: whole, elementwise or other).
#include "interpreters/donation.h"

#include <algorithm>
#include <array>
#include <deque>

#include "memory/buffer.h"

namespace fluxion::donation {

namespace {
// Filled as the library loads, read-only afterwards.
std::array<Reads, kNumPrims>& reads_table() {
  static std::array<Reads, kNumPrims> t{};
  return t;
}
}  // namespace

void register_reads(Prim p, Reads r) { reads_table()[size_t(p)] = r; }
Reads reads(Prim p) { return reads_table()[size_t(p)]; }

namespace {

enum class Kind { elementwise, barrier, other };

struct Uses {
  std::vector<std::vector<int>> eqns;  // per var: the eqns that read it (in order, repeats kept)
  std::vector<int> outputs;            // per var: how many outvars it is
  std::vector<int> def;                // per var: the eqn that defines it, or -1
};

Uses uses_of(const Program& p) {
  Uses u{std::vector<std::vector<int>>(p.types.size()), std::vector<int>(p.types.size(), 0),
         std::vector<int>(p.types.size(), -1)};
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    for (const Atom& a : p.eqns[i].inputs)
      if (!a.is_literal()) u.eqns[size_t(a.var)].push_back(int(i));
    for (int32_t v : p.eqns[i].outputs) u.def[size_t(v)] = int(i);
  }
  for (const Atom& a : p.outvars)
    if (!a.is_literal()) ++u.outputs[size_t(a.var)];
  return u;
}

Kind kind_of(const Program& p, const Eqn& e) {
  const Reads r = reads(e.prim);
  if (r == Reads::whole) return Kind::barrier;
  if (r != Reads::elementwise || e.outputs.size() != 1) return Kind::other;
  const Shape& s = p.type(e.outputs[0]).shape;
  // Operands of the result's shape are read at the loop's index; a rank-0 one is one value for every
  // element (a learning rate). Anything else would be a broadcast.
  for (const Atom& a : e.inputs)
    if (!a.is_literal() && !(p.type(a.var).shape == s) && p.type(a.var).shape.rank() != 0) return Kind::other;
  return Kind::elementwise;
}

enum class Verdict { unsafe, safe, safe_and_read_by_writer };

// Whether output op `writer` may write into the buffer of var `j` (the header's rules).
Verdict check(const Program& p, const Uses& u, int32_t j, int writer) {
  struct Item {
    int32_t var;
    bool identity;  // reached from j through elementwise ops only
    bool alias;     // may be j's own memory (j, or a view of it): every use reads j
  };
  std::vector<int> seen(p.types.size(), 0);  // 0 no, 1 reached non-identity, 2 reached identity
  std::deque<Item> work{{j, true, true}};
  bool read_by_writer = false;
  while (!work.empty()) {
    const Item it = work.front();
    work.pop_front();
    if (it.alias && u.outputs[size_t(it.var)] > 0) return Verdict::unsafe;  // read at the kernel's end
    for (int r : u.eqns[size_t(it.var)]) {
      const Eqn& e = p.eqns[size_t(r)];
      const Kind k = kind_of(p, e);
      if (r == writer) {
        if (!it.identity || k != Kind::elementwise) return Verdict::unsafe;
        read_by_writer = true;
        continue;
      }
      if (r > writer) return Verdict::unsafe;
      if (k == Kind::barrier) continue;
      for (int32_t v : e.outputs) {
        // An elementwise result with several uses (or one that is an output) gets its own buffer;
        // with one use it may be fused into that use.
        if (k == Kind::elementwise && !(u.eqns[size_t(v)].size() == 1 && u.outputs[size_t(v)] == 0)) continue;
        const bool identity = it.identity && k == Kind::elementwise;
        const int rank = identity ? 2 : 1;
        if (seen[size_t(v)] >= rank) continue;
        seen[size_t(v)] = rank;
        work.push_back({v, identity, k == Kind::other});
      }
    }
  }
  return read_by_writer ? Verdict::safe_and_read_by_writer : Verdict::safe;
}

}  // namespace

std::vector<int> plan(const Program& p, const std::vector<bool>& donated) {
  std::vector<int> out(p.outvars.size(), -1);
  if (std::none_of(donated.begin(), donated.end(), [](bool d) { return d; })) return out;
  const Uses u = uses_of(p);
  std::vector<bool> taken(p.invars.size(), false);
  // First the pairs where the output is computed from the input (an update in place), then any.
  for (Verdict wanted : {Verdict::safe_and_read_by_writer, Verdict::safe}) {
    for (size_t k = 0; k < p.outvars.size(); ++k) {
      const Atom& o = p.outvars[k];
      if (out[k] >= 0 || o.is_literal() || u.def[size_t(o.var)] < 0 || p.type(o.var).size() == 0) continue;
      for (size_t i = 0; i < p.invars.size() && out[k] < 0; ++i) {
        const int32_t j = p.invars[i];
        if (i >= donated.size() || !donated[i] || taken[i]) continue;
        const AbstractArray &a = p.type(j), &b = p.type(o.var);
        if (!(a.shape == b.shape) || a.dtype != b.dtype) continue;
        const Verdict v = check(p, u, j, u.def[size_t(o.var)]);
        if (v == wanted || (wanted == Verdict::safe && v == Verdict::safe_and_read_by_writer)) {
          out[k] = int(i);
          taken[i] = true;
        }
      }
    }
  }
  return out;
}

std::vector<std::shared_ptr<Buffer>> takeable(const std::vector<int>& plan, std::span<const Array> inputs,
                                              std::span<const Array> consts) {
  std::vector<std::shared_ptr<Buffer>> r(plan.size());
  auto shares = [&](const Buffer* b, size_t except) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (i != except && inputs[i].impl()->buffer.get() == b) return true;
    for (const Array& c : consts)
      if (c.valid() && c.impl()->buffer.get() == b) return true;
    return false;
  };
  for (size_t k = 0; k < plan.size(); ++k) {
    if (plan[k] < 0) continue;
    const ArrayImpl& a = *inputs[size_t(plan[k])].impl();
    const std::shared_ptr<Buffer>& b = a.buffer;
    // use_count 1: this array is the buffer's only owner (a view or an eager result sharing it
    // would hold another reference).
    if (a.trace || a.sharding || !b || b->external || b.use_count() != 1 ||
        b->device.memory_kind() != MemoryKind::host || b->nbytes != a.aval.nbytes() || shares(b.get(), size_t(plan[k])))
      continue;
    r[k] = b;
  }
  return r;
}

void check_live(std::span<const Array> leaves) {
  for (const Array& a : leaves)
    if (a.valid() && a.impl()->deleted) throw ValueError(*a.impl()->deleted);
}

void delete_donated(std::span<const Array> leaves, const std::vector<bool>& donated,
                    const std::vector<int>& leaf_argument, const std::string& where) {
  for (size_t i = 0; i < leaves.size() && i < donated.size(); ++i) {
    if (!donated[i]) continue;
    ArrayImpl& a = *leaves[i].impl();
    if (a.trace || a.deleted) continue;
    int64_t first = int64_t(i);  // the leaf's position within its argument
    while (first > 0 && leaf_argument[size_t(first - 1)] == leaf_argument[i]) --first;
    a.deleted = std::make_shared<const std::string>(
        "ValueError: this array (" + a.aval.str() + ", leaf " + std::to_string(int64_t(i) - first) + " of argument " +
        std::to_string(leaf_argument[i]) + ") was donated to " + where +
        " (donate_argnums) and deleted by that call: its buffer may now hold the call's result. Use the "
        "result instead, or leave the argument out of donate_argnums");
    a.buffer.reset();
  }
}

}  // namespace fluxion::donation
