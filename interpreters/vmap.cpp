#include "interpreters/vmap.h"

#include <array>

#include "ir/profiler.h"
#include "ir/trace.h"
#include "interpreters/axis_env.h"

namespace fluxion {

namespace {
std::array<BatchRule, kNumPrims>& batch_table() {
  static std::array<BatchRule, kNumPrims> t{};
  return t;
}
}  // namespace

BatchRule batch_rule(Prim p) { return batch_table()[size_t(p)]; }
void register_batch_rule(Prim p, BatchRule rule) { batch_table()[size_t(p)] = rule; }

IntList dims_past_batch(const IntList& dims, int64_t bd) {
  IntList out;
  for (int64_t d : dims) out.push_back(bd != kNotMapped && d >= bd ? d + 1 : d);
  return out;
}

Array move_batch_dim(const Array& x, int64_t from, int64_t to, SourceLoc loc) {
  if (from == to) return x;
  IntList perm;
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (d != from) perm.push_back(d);
  perm.insert(perm.begin() + to, from);
  return bind1(Prim::transpose, {x}, Params{{"permutation", perm}}, loc);
}

Array batch_at(const BatchedArray& x, int64_t to, int64_t axis_size, SourceLoc loc) {
  if (x.dim != kNotMapped) return move_batch_dim(x.value, x.dim, to, loc);
  const Array& v = x.value;
  IntList shape = v.shape().dims(), bdims;
  shape.insert(shape.begin() + to, axis_size);
  for (int64_t d = 0; d < v.ndim(); ++d) bdims.push_back(d < to ? d : d + 1);
  return bind1(Prim::broadcast_in_dim, {v}, Params{{"shape", shape}, {"broadcast_dimensions", bdims}}, loc);
}

std::vector<Array> batch_like_first(std::span<const BatchedArray> xs, int64_t axis_size, SourceLoc loc, int64_t& dim) {
  dim = kNotMapped;
  for (const BatchedArray& x : xs)
    if (x.dim != kNotMapped) {
      dim = x.dim;
      break;
    }
  std::vector<Array> out;
  out.reserve(xs.size());
  for (const BatchedArray& x : xs) out.push_back(batch_at(x, dim, axis_size, loc));
  return out;
}

std::vector<BatchedArray> elementwise_batch_rule(Prim p, std::span<const BatchedArray> args, const Params& params,
                                                 int64_t axis_size, SourceLoc loc) {
  // Fast path: every non-scalar operand is mapped at the same position with the same rank.
  int64_t dim = kNotMapped;
  int rank = -1;
  bool aligned = true;
  for (const BatchedArray& a : args) {
    if (a.dim == kNotMapped) {
      if (a.value.ndim() != 0) aligned = false;
      continue;
    }
    if (dim == kNotMapped) {
      dim = a.dim;
      rank = a.value.ndim();
    } else if (a.dim != dim || a.value.ndim() != rank) {
      aligned = false;
    }
  }
  std::vector<Array> ins;
  if (aligned) {
    for (const BatchedArray& a : args) ins.push_back(a.value);
  } else {
    // The per-example shape of the result: that of any operand which is not a scalar per example.
    Shape example;
    for (const BatchedArray& a : args) {
      const int per_example_rank = a.value.ndim() - (a.dim == kNotMapped ? 0 : 1);
      if (per_example_rank == 0) continue;
      example = Shape();
      for (int d = 0; d < a.value.ndim(); ++d)
        if (d != a.dim) example.push_back(a.value.shape()[size_t(d)]);
      break;
    }
    dim = 0;
    for (const BatchedArray& a : args) {
      if (a.dim == kNotMapped && a.value.ndim() == 0) {
        ins.push_back(a.value);  // scalars broadcast inside the primitive
      } else if (a.dim != kNotMapped && a.value.ndim() == 1 && example.rank() > 0) {
        // A per-example scalar against non-scalar operands: broadcast it over the example shape.
        IntList shape{axis_size};
        for (int64_t d : example) shape.push_back(d);
        ins.push_back(bind1(Prim::broadcast_in_dim, {a.value}, Params{{"shape", shape}, {"broadcast_dimensions", IntList{0}}}, loc));
      } else {
        ins.push_back(batch_at(a, 0, axis_size, loc));
      }
    }
  }
  std::vector<Array> outs = bind(p, ins, params, loc);
  std::vector<BatchedArray> r;
  for (Array& o : outs) r.push_back({std::move(o), dim});
  return r;
}

std::vector<BatchedArray> vmap_eval(const Program& p, std::span<const BatchedArray> args, int64_t axis_size) {
  profiler::Scope prof("transform", "vmap");
  std::vector<BatchedArray> env(p.types.size());
  for (size_t i = 0; i < p.invars.size(); ++i) env[size_t(p.invars[i])] = args[i];
  for (size_t i = 0; i < p.constvars.size(); ++i) env[size_t(p.constvars[i])] = {p.consts[i], kNotMapped};
  auto read = [&](const Atom& a) { return a.is_literal() ? BatchedArray{literal_array(a.lit), kNotMapped} : env[size_t(a.var)]; };
  std::vector<BatchedArray> ins;
  std::vector<Array> plain;
  for (const Eqn& e : p.eqns) {
    ins.clear();
    bool mapped = false;
    for (const Atom& a : e.inputs) {
      ins.push_back(read(a));
      mapped = mapped || ins.back().dim != kNotMapped;
    }
    if (!mapped && !over_batched_axis(e)) {
      plain.clear();
      for (const BatchedArray& b : ins) plain.push_back(b.value);
      std::vector<Array> o = bind(e.prim, plain, e.params, e.loc);
      for (size_t j = 0; j < o.size(); ++j) env[size_t(e.outputs[j])] = {std::move(o[j]), kNotMapped};
      continue;
    }
    const BatchRule rule = batch_rule(e.prim);
    if (!rule)
      throw TypeError("TypeError: vmap of " + std::string(prim_name(e.prim)) + " at " + e.loc.str() +
                      ": the primitive has no batching rule");
    LocationScope at(e.loc);
    std::vector<BatchedArray> o = rule(ins, e.params, axis_size, e.loc);
    for (size_t j = 0; j < o.size(); ++j) env[size_t(e.outputs[j])] = std::move(o[j]);
  }
  std::vector<BatchedArray> outs;
  for (const Atom& a : p.outvars) outs.push_back(read(a));
  return outs;
}

}  // namespace fluxion
