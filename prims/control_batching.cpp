// Batching rules of the control-flow primitives (prims/control.cpp holds their shape rules, impls
// and derivative rules).
#include <algorithm>

#include "ir/trace.h"
#include "prims/registry.h"
#include "transforms/vmap.h"

namespace fluxion {
namespace {

using Arrays = std::span<const Array>;
const Program& sub(const Params& p, const char* key) { return *p.get<ProgramRef>(key); }
size_t count(const Params& p, const char* key) { return size_t(p.get_int(key)); }

// ---- batching -----------------------------------------------------------------------------------------
// Batched control flow is the same control flow over batched sub-programs: each sub-program is
// re-traced through vmap_eval on batched inputs. Inside control flow every batched value has its
// batch dim at 0 (scanned operands at 1, so that the scanned axis stays leading); unbatched values
// stay unbatched unless the control flow needs them batched:
//   - cond with an unbatched index: one cond whose branches are batched; an output batched in any
//     branch is batched (broadcast) in all of them so that the branches agree;
//   - cond with a batched index: every branch runs on the whole batch, and a chain of selects on
//     clamp(index) == k picks each example's result (the cost of all the branches);
//   - while with an unbatched predicate: a while over the batched cond and body; with a batched one
//     the loop runs while any example's predicate holds, and the body keeps the carry of the
//     examples that are done (select on their predicate), so every carry becomes batched;
//   - scan: a scan over the batched body; ys come out with the batch dim at 1.
// A carry that the body makes batched must enter the loop batched: which carries are batched is a
// fixpoint, found by re-tracing the body until it stops growing.
namespace batching {

using BatchedArgs = std::span<const BatchedArray>;

/// A sub-program traced from `build` on fresh inputs of the given types, closed: the values the
/// trace captured are its leading inputs, listed in `consts` (never batched).
struct Closed {
  Program program;
  std::vector<Array> consts;
};
template <class Build>
Closed trace_sub(std::span<const AbstractArray> in, Build build) {
  TraceScope scope;
  std::vector<Array> inputs;
  for (const AbstractArray& a : in) inputs.push_back(scope.new_input(a));
  std::vector<Array> outs = build(std::span<const Array>(inputs));
  Closed c;
  c.program = hoist_consts(scope.finish(outs), c.consts);
  return c;
}
ProgramRef shared(Program p) { return std::make_shared<const Program>(std::move(p)); }

/// Operands as control flow holds them: a value and its batch dim (0, or kNotMapped).
struct Operands {
  std::vector<Array> values;
  std::vector<int64_t> dims;
  size_t size() const { return values.size(); }
  void push(const Array& v, int64_t d) {
    values.push_back(v);
    dims.push_back(d);
  }
  Operands& operator+=(const Operands& o) {
    values.insert(values.end(), o.values.begin(), o.values.end());
    dims.insert(dims.end(), o.dims.begin(), o.dims.end());
    return *this;
  }
  Operands range(size_t from, size_t n) const {
    return {{values.begin() + long(from), values.begin() + long(from + n)},
            {dims.begin() + long(from), dims.begin() + long(from + n)}};
  }
  std::vector<AbstractArray> avals() const {
    std::vector<AbstractArray> r;
    for (const Array& v : values) r.push_back(v.aval());
    return r;
  }
};
Operands operator+(Operands a, const Operands& b) { return a += b; }

/// Mapped operands moved to batch dim 0.
Operands at_front(BatchedArgs a, SourceLoc loc) {
  Operands o;
  for (const BatchedArray& x : a)
    o.push(x.dim == kNotMapped ? x.value : move_batch_dim(x.value, x.dim, 0, loc), x.dim == kNotMapped ? kNotMapped : 0);
  return o;
}

/// The operands with those flagged in `batch` batched at 0 (broadcast if they were not).
Operands batched_where(const Operands& o, const std::vector<bool>& batch, int64_t n, SourceLoc loc) {
  Operands r;
  for (size_t i = 0; i < o.size(); ++i)
    if (batch[i] && o.dims[i] == kNotMapped)
      r.push(batch_at({o.values[i], kNotMapped}, 0, n, loc), 0);
    else
      r.push(o.values[i], o.dims[i]);
  return r;
}

/// Types of operands with those flagged in `batch` batched at 0 (abstractly: nothing is emitted).
std::vector<AbstractArray> avals_where(const Operands& o, const std::vector<bool>& batch, int64_t n) {
  std::vector<AbstractArray> r = o.avals();
  for (size_t i = 0; i < o.size(); ++i)
    if (batch[i] && o.dims[i] == kNotMapped) {
      IntList s = r[i].shape.dims();
      s.insert(s.begin(), n);
      r[i].shape = Shape(s);
    }
  return r;
}

/// p applied under vmap to inputs of the current trace, with the given batch dims.
std::vector<BatchedArray> call_batched(const Program& p, std::span<const Array> in, std::span<const int64_t> dims,
                                       int64_t n) {
  std::vector<BatchedArray> args;
  for (size_t i = 0; i < in.size(); ++i) args.push_back({in[i], dims[i]});
  return vmap_eval(p, args, n);
}

/// Which outputs of p are batched when its inputs have these types and batch dims (a throwaway trace).
std::vector<bool> batched_outputs(const Program& p, std::span<const AbstractArray> avals, std::span<const int64_t> dims,
                                  int64_t n) {
  TraceScope scope;
  std::vector<Array> in;
  for (const AbstractArray& a : avals) in.push_back(scope.new_input(a));
  std::vector<bool> r;
  for (const BatchedArray& o : call_batched(p, in, dims, n)) r.push_back(o.dim != kNotMapped);
  return r;
}

/// The dims of inputs with those flagged in `batch` at 0.
std::vector<int64_t> dims_where(const Operands& o, const std::vector<bool>& batch) {
  std::vector<int64_t> d = o.dims;
  for (size_t i = 0; i < d.size(); ++i)
    if (batch[i]) d[i] = 0;
  return d;
}

/// Grows the set of batched carries until the loop body keeps it: `body_outputs(carry_batched)`
/// says which carries the body returns batched.
template <class BodyOutputs>
std::vector<bool> carry_fixpoint(std::vector<bool> batched, BodyOutputs body_outputs) {
  for (;;) {
    std::vector<bool> out = body_outputs(batched);
    bool grew = false;
    for (size_t i = 0; i < batched.size(); ++i)
      if (out[i] && !batched[i]) batched[i] = grew = true;
    if (!grew) return batched;
  }
}

std::vector<bool> flags(const Operands& o) {
  std::vector<bool> r;
  for (int64_t d : o.dims) r.push_back(d != kNotMapped);
  return r;
}
std::vector<bool> concat(std::vector<bool> a, const std::vector<bool>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// pred (a batch of bool scalars, [n]) broadcast against a batched value of `shape`.
Array pred_like(const Array& pred, const Shape& shape, SourceLoc loc) {
  if (shape.rank() == 1) return pred;
  return bind1(Prim::broadcast_in_dim, {pred}, Params{{"shape", shape.dims()}, {"broadcast_dimensions", IntList{0}}}, loc);
}

// cond, batched index: every branch on the whole batch, then per example the result of branch
// clamp(index): a chain of selects on index == k.
std::vector<BatchedArray> cond_batch_index(const ProgramList& branches, const Array& index, const Operands& ops,
                                           int64_t n, SourceLoc loc) {
  const DType dt = index.dtype();
  const int64_t last = int64_t(branches.size()) - 1;
  Array idx = bind1(Prim::clamp,
                    {literal_array(Literal::of_int(0, dt)), index, literal_array(Literal::of_int(last, dt))}, {}, loc);
  std::vector<std::vector<BatchedArray>> results;
  for (const ProgramRef& b : branches) results.push_back(call_batched(*b, ops.values, ops.dims, n));
  std::vector<BatchedArray> outs;
  for (size_t j = 0; j < results[0].size(); ++j) {
    Array acc = batch_at(results[size_t(last)][j], 0, n, loc);
    for (int64_t k = last - 1; k >= 0; --k) {
      Array is_k = bind1(Prim::eq, {idx, literal_array(Literal::of_int(k, dt))}, {}, loc);
      Array mine = batch_at(results[size_t(k)][j], 0, n, loc);
      acc = bind1(Prim::select, {pred_like(is_k, acc.shape(), loc), mine, acc}, {}, loc);
    }
    outs.push_back({acc, 0});
  }
  return outs;
}

std::vector<BatchedArray> cond_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  const ProgramList& branches = params.get<ProgramList>("branches");
  Operands ops = at_front(a.subspan(1), loc);
  if (a[0].dim != kNotMapped) return cond_batch_index(branches, a[0].value, ops, n, loc);
  // An output batched in any branch is batched (at 0) in every branch.
  const std::vector<AbstractArray> avals = ops.avals();
  std::vector<bool> out_batched(branches[0]->outvars.size(), false);
  for (const ProgramRef& b : branches) {
    std::vector<bool> m = batched_outputs(*b, avals, ops.dims, n);
    for (size_t j = 0; j < m.size(); ++j) out_batched[j] = out_batched[j] || m[j];
  }
  std::vector<Closed> built;
  for (const ProgramRef& b : branches)
    built.push_back(trace_sub(avals, [&](std::span<const Array> in) {
      std::vector<BatchedArray> r = call_batched(*b, in, ops.dims, n);
      std::vector<Array> outs;
      for (size_t j = 0; j < r.size(); ++j) outs.push_back(out_batched[j] ? batch_at(r[j], 0, n, loc) : r[j].value);
      return outs;
    }));
  // Every branch takes the values every branch captured (its own in place, the others ignored).
  std::vector<Array> operands{a[0].value};
  for (const Closed& c : built) operands.insert(operands.end(), c.consts.begin(), c.consts.end());
  const size_t ncaptured = operands.size() - 1;
  operands.insert(operands.end(), ops.values.begin(), ops.values.end());
  ProgramList programs;
  size_t offset = 0;
  for (Closed& c : built) {
    Program& p = c.program;
    std::vector<int32_t> invars;
    for (size_t i = 0; i < ncaptured; ++i)
      invars.push_back(i >= offset && i < offset + c.consts.size() ? p.invars[i - offset]
                                                                    : p.new_var(operands[1 + i].aval()));
    invars.insert(invars.end(), p.invars.begin() + long(c.consts.size()), p.invars.end());
    offset += c.consts.size();
    p.invars = std::move(invars);
    programs.push_back(shared(std::move(p)));
  }
  std::vector<Array> r = bind(Prim::cond, operands, Params{{"branches", programs}}, loc);
  std::vector<BatchedArray> outs;
  for (size_t j = 0; j < r.size(); ++j) outs.push_back({r[j], out_batched[j] ? 0 : kNotMapped});
  return outs;
}

std::vector<BatchedArray> while_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  const Program& c = sub(params, "cond");
  const Program& b = sub(params, "body");
  const size_t nc = count(params, "cond_nconsts"), nb = count(params, "body_nconsts");
  Operands all = at_front(a, loc);
  const Operands cconsts = all.range(0, nc), bconsts = all.range(nc, nb);
  Operands carry = all.range(nc + nb, all.size() - nc - nb);
  std::vector<bool> batched = carry_fixpoint(flags(carry), [&](const std::vector<bool>& cb) {
    std::vector<bool> in = concat(flags(bconsts), cb);
    std::vector<AbstractArray> avals = bconsts.avals();
    for (const AbstractArray& t : avals_where(carry, cb, n)) avals.push_back(t);
    return batched_outputs(b, avals, dims_where(bconsts + carry, in), n);
  });
  std::vector<AbstractArray> cavals = cconsts.avals();
  for (const AbstractArray& t : avals_where(carry, batched, n)) cavals.push_back(t);
  const bool pred_batched =
      batched_outputs(c, cavals, dims_where(cconsts + carry, concat(flags(cconsts), batched)), n)[0];
  if (pred_batched) batched.assign(batched.size(), true);
  carry = batched_where(carry, batched, n, loc);
  const Operands cin = cconsts + carry, bin = bconsts + carry;

  // The batched predicate of the carry (shape [n]).
  auto predicate = [&](std::span<const Array> in) {
    return batch_at(call_batched(c, in, cin.dims, n)[0], 0, n, loc);
  };
  // The batched body's new carry, each leaf batched as `batched` says.
  auto step = [&](std::span<const Array> in) {
    std::vector<BatchedArray> r = call_batched(b, in, bin.dims, n);
    std::vector<Array> outs;
    for (size_t i = 0; i < r.size(); ++i) outs.push_back(batched[i] ? batch_at(r[i], 0, n, loc) : r[i].value);
    return outs;
  };
  Closed cond_p, body_p;
  std::vector<Array> operands;
  if (!pred_batched) {
    cond_p = trace_sub(cin.avals(), [&](std::span<const Array> in) {
      return std::vector<Array>{call_batched(c, in, cin.dims, n)[0].value};
    });
    body_p = trace_sub(bin.avals(), step);
    operands = cond_p.consts;
    operands.insert(operands.end(), cconsts.values.begin(), cconsts.values.end());
    operands.insert(operands.end(), body_p.consts.begin(), body_p.consts.end());
    operands.insert(operands.end(), bconsts.values.begin(), bconsts.values.end());
  } else {
    // Run while any example runs; the body sees the cond consts too, to keep finished examples.
    cond_p = trace_sub(cin.avals(), [&](std::span<const Array> in) {
      return std::vector<Array>{bind1(Prim::reduce_or, {predicate(in)}, Params{{"axes", IntList{0}}}, loc)};
    });
    const std::vector<AbstractArray> avals = (cconsts + bin).avals();
    body_p = trace_sub(avals, [&](std::span<const Array> in) {
      std::vector<Array> cin_vals(in.begin(), in.begin() + long(nc));
      cin_vals.insert(cin_vals.end(), in.end() - long(carry.size()), in.end());
      Array running = predicate(cin_vals);
      std::vector<Array> next = step(in.subspan(nc));
      for (size_t i = 0; i < next.size(); ++i) {
        const Array& old = in[in.size() - carry.size() + i];
        next[i] = bind1(Prim::select, {pred_like(running, old.shape(), loc), next[i], old}, {}, loc);
      }
      return next;
    });
    operands = cond_p.consts;
    operands.insert(operands.end(), cconsts.values.begin(), cconsts.values.end());
    operands.insert(operands.end(), body_p.consts.begin(), body_p.consts.end());
    operands.insert(operands.end(), cconsts.values.begin(), cconsts.values.end());
    operands.insert(operands.end(), bconsts.values.begin(), bconsts.values.end());
  }
  const int64_t cond_nconsts = int64_t(cond_p.consts.size() + nc);
  const int64_t body_nconsts = int64_t(body_p.consts.size() + (pred_batched ? nc : 0) + nb);
  operands.insert(operands.end(), carry.values.begin(), carry.values.end());
  Params p{{"cond", shared(std::move(cond_p.program))},
           {"body", shared(std::move(body_p.program))},
           {"cond_nconsts", cond_nconsts},
           {"body_nconsts", body_nconsts}};
  std::vector<Array> r = bind(Prim::while_, operands, p, loc);
  std::vector<BatchedArray> outs;
  for (size_t i = 0; i < r.size(); ++i) outs.push_back({r[i], batched[i] ? 0 : kNotMapped});
  return outs;
}

std::vector<BatchedArray> scan_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  const Program& body = sub(params, "body");
  const size_t nc = count(params, "num_consts"), nk = count(params, "num_carry");
  const Operands consts = at_front(a.subspan(0, nc), loc);
  Operands carry = at_front(a.subspan(nc, nk), loc);
  // Scanned operands batched at 1: their slices are batched at 0.
  Operands xs, slices;
  std::vector<AbstractArray> slice_avals;
  for (const BatchedArray& x : a.subspan(nc + nk)) {
    Array v = x.dim == kNotMapped ? x.value : move_batch_dim(x.value, x.dim, 1, loc);
    xs.push(v, x.dim == kNotMapped ? kNotMapped : 1);
    slices.dims.push_back(x.dim == kNotMapped ? kNotMapped : 0);
    AbstractArray s = v.aval();
    s.shape = Shape(s.shape.begin() + 1, s.shape.end());
    slice_avals.push_back(s);
  }
  auto body_inputs = [&](const std::vector<bool>& cb, std::vector<int64_t>& dims) {
    std::vector<AbstractArray> avals = consts.avals();
    for (const AbstractArray& t : avals_where(carry, cb, n)) avals.push_back(t);
    avals.insert(avals.end(), slice_avals.begin(), slice_avals.end());
    dims = dims_where(consts + carry, concat(std::vector<bool>(nc, false), cb));
    dims.insert(dims.end(), slices.dims.begin(), slices.dims.end());
    return avals;
  };
  const std::vector<bool> batched = carry_fixpoint(flags(carry), [&](const std::vector<bool>& cb) {
    std::vector<int64_t> dims;
    std::vector<AbstractArray> avals = body_inputs(cb, dims);
    std::vector<bool> out = batched_outputs(body, avals, dims, n);
    out.resize(nk);
    return out;
  });
  carry = batched_where(carry, batched, n, loc);
  std::vector<int64_t> dims;
  const std::vector<AbstractArray> avals = body_inputs(batched, dims);
  std::vector<bool> ys_batched;
  Closed body_p = trace_sub(avals, [&](std::span<const Array> in) {
    std::vector<BatchedArray> r = call_batched(body, in, dims, n);
    std::vector<Array> outs;
    for (size_t i = 0; i < r.size(); ++i) {
      const bool batch = i < nk ? bool(batched[i]) : r[i].dim != kNotMapped;
      if (i >= nk) ys_batched.push_back(batch);
      outs.push_back(batch ? batch_at(r[i], 0, n, loc) : r[i].value);
    }
    return outs;
  });
  std::vector<Array> operands = body_p.consts;
  operands.insert(operands.end(), consts.values.begin(), consts.values.end());
  operands.insert(operands.end(), carry.values.begin(), carry.values.end());
  operands.insert(operands.end(), xs.values.begin(), xs.values.end());
  Params p{{"body", shared(std::move(body_p.program))},
           {"num_consts", int64_t(body_p.consts.size() + nc)},
           {"num_carry", int64_t(nk)},
           {"length", params.get_int("length")},
           {"reverse", params.get_bool("reverse")}};
  std::vector<Array> r = bind(Prim::scan, operands, p, loc);
  std::vector<BatchedArray> outs;
  for (size_t i = 0; i < r.size(); ++i)
    outs.push_back({r[i], i < nk ? (batched[i] ? 0 : kNotMapped) : (ys_batched[i - nk] ? 1 : kNotMapped)});
  return outs;
}

}  // namespace batching


}  // namespace

void register_control_batching(RuleTable& t) {
  t[size_t(Prim::cond)].batch = &batching::cond_batch;
  t[size_t(Prim::while_)].batch = &batching::while_batch;
  t[size_t(Prim::scan)].batch = &batching::scan_batch;
}

}  // namespace fluxion
