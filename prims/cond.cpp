// cond[branches=(P0, P1, ...)] index ops...: runs branch clamp(index, 0, n-1) on ops; every branch
// takes all ops and returns the same types. One block (the pattern of prims/unary.cpp); the user API
// is fx::cond / fx::switch_ (transforms/control_flow.h), the helpers prims/subprograms.h.
//
// Derivatives: sub-programs are differentiated with the program transforms (jvp_program,
// transpose_eval) and the results are bound as new cond eqns, whose own rules apply again when
// those are differentiated (higher order) or nested. Sub-programs held in params are closed, so
// every derived program's captured values are hoisted into explicit leading operands.
#include <algorithm>

#include "prims/registry.h"
#include "prims/subprograms.h"
#include "interpreters/simplify.h"

namespace fluxion {
namespace {
using namespace subprograms;

std::vector<AbstractArray> cond_shape(std::span<const AbstractArray> in, const Params& params) {
  const ProgramList& branches = params.get<ProgramList>("branches");
  if (branches.empty()) rule_error(ErrorKind::Value, "needs at least one branch");
  if (in.empty() || in[0].ndim() != 0 || !is_integer(in[0].dtype))
    rule_error(ErrorKind::Type, "the branch index must be an integer scalar, got " + (in.empty() ? std::string("nothing") : in[0].str()));
  std::vector<AbstractArray> ops(in.begin() + 1, in.end());
  std::vector<AbstractArray> outs;
  for (size_t b = 0; b < branches.size(); ++b) {
    check_inputs(ops, *branches[b], "branch " + std::to_string(b));
    std::vector<AbstractArray> o = branches[b]->out_avals();
    if (b == 0) {
      outs = o;
      continue;
    }
    if (o.size() != outs.size())
      rule_error(ErrorKind::Type, "branch " + std::to_string(b) + " returns " + std::to_string(o.size()) +
                                      " values, branch 0 returns " + std::to_string(outs.size()));
    for (size_t i = 0; i < o.size(); ++i)
      if (!o[i].same_type(outs[i]))
        rule_error(ErrorKind::Type, "output " + std::to_string(i) + " is " + o[i].str() + " in branch " + std::to_string(b) +
                                        " but " + outs[i].str() + " in branch 0");
  }
  for (AbstractArray& a : outs) a.weak_type = false;
  return outs;
}

int64_t branch_index(const Array& index, size_t n) {
  int64_t i = int64_t(Literal::load(index.data(), index.dtype()).as_double());
  return std::clamp<int64_t>(i, 0, int64_t(n) - 1);
}

std::vector<Array> cond_impl(Arrays in, const Params& params, SourceLoc) {
  const ProgramList& branches = params.get<ProgramList>("branches");
  return eval_program(*branches[size_t(branch_index(in[0], branches.size()))], in.subspan(1));
}

/// Binds a cond over branch programs that take `ops`; each branch's captured values (hoisted) become
/// operands too, passed to every branch (the other branches ignore them).
std::vector<Array> bind_cond_programs(const Array& index, std::span<const Array> ops, std::vector<Program> progs,
                                      SourceLoc loc) {
  std::vector<std::vector<Array>> consts(progs.size());
  std::vector<Array> operands{index};
  for (size_t b = 0; b < progs.size(); ++b) {
    progs[b] = hoist_consts(simplify(std::move(progs[b])), consts[b]);
    operands.insert(operands.end(), consts[b].begin(), consts[b].end());
  }
  operands.insert(operands.end(), ops.begin(), ops.end());
  ProgramList list;
  for (size_t b = 0; b < progs.size(); ++b) {
    Program& p = progs[b];
    const size_t own = consts[b].size();
    std::vector<int32_t> invars;
    for (size_t c = 0; c < progs.size(); ++c) {
      if (c == b) {
        invars.insert(invars.end(), p.invars.begin(), p.invars.begin() + long(own));
        continue;
      }
      for (const Array& v : consts[c]) invars.push_back(p.new_var(v.aval()));
    }
    invars.insert(invars.end(), p.invars.begin() + long(own), p.invars.end());
    p.invars = std::move(invars);
    list.push_back(share(std::move(p)));
  }
  return bind(Prim::cond, operands, Params{{"branches", list}}, loc);
}

// cond: one JVP program per branch, all with the same nonzero mask, returning the primal outputs and
// the tangents that are nonzero in any branch (a branch where one is zero returns materialised
// zeros, so the branches agree). The new cond takes (index, ops..., nonzero tangents...). Its primal
// outputs are not used: the original cond, bound by jvp_eval, provides them, which keeps the primal
// known under partial evaluation (a linearized cond recomputes its branch in the backward pass).
std::vector<Array> cond_jvp(Arrays x, Arrays t, Arrays outs, const Params& params, SourceLoc loc) {
  const ProgramList& branches = params.get<ProgramList>("branches");
  std::vector<bool> nonzero;
  std::vector<Array> ops(x.begin() + 1, x.end());
  for (size_t i = 1; i < x.size(); ++i) {
    nonzero.push_back(!is_zero(t[i]) && has_tangent_space(x[i].dtype()));
    if (nonzero.back()) ops.push_back(t[i]);
  }
  const size_t no = outs.size();
  std::vector<Program> jvps;
  std::vector<bool> out_nonzero(no, false);
  for (const ProgramRef& b : branches) {
    std::vector<bool> nz;
    jvps.push_back(jvp_program(*b, nonzero, &nz));
    for (size_t j = 0; j < no; ++j) out_nonzero[j] = out_nonzero[j] || (nz[j] && has_tangent_space(outs[j].dtype()));
  }
  std::vector<size_t> keep = range(0, no);
  for (size_t j = 0; j < no; ++j)
    if (out_nonzero[j]) keep.push_back(no + j);
  // The original cond, bound beside this one, runs the branch's prints; these only recompute it.
  for (Program& p : jvps) p = drop_effects(reorder(std::move(p), range(0, p.invars.size()), keep));
  std::vector<Array> r = bind_cond_programs(x[0], ops, std::move(jvps), loc);
  std::vector<Array> tangents;
  size_t k = no;
  for (size_t j = 0; j < no; ++j) tangents.push_back(out_nonzero[j] ? r[k++] : Array());
  return tangents;
}

// In a linear program, a cond holds JVP branches: linear in their tangent inputs given the primal
// ones. Its transpose is a cond of the branches' transposes (transpose_eval with the primal inputs
// known), so the taken branch's primal is recomputed in the backward pass.
std::vector<Array> cond_transpose(Arrays cts, std::span<const LinearArg> a, const Params& params, SourceLoc loc) {
  if (a[0].linear) throw TypeError("TypeError: transpose of cond at " + loc.str() + ": the branch index is linear");
  const ProgramList& branches = params.get<ProgramList>("branches");
  std::vector<bool> linear;
  std::vector<Array> ops;
  std::vector<AbstractArray> op_types;
  for (size_t i = 1; i < a.size(); ++i) {
    linear.push_back(a[i].linear);
    if (!a[i].linear) {
      ops.push_back(a[i].value);
      op_types.push_back(a[i].aval);
    }
  }
  const size_t nk = ops.size();
  for (const Array& c : cts)
    if (!is_zero(c)) {
      ops.push_back(c);
      op_types.push_back(c.aval());
    }
  std::vector<Program> transposed;
  for (const ProgramRef& b : branches) {
    TraceScope scope;
    std::vector<Array> in;
    for (const AbstractArray& ty : op_types) in.push_back(scope.new_input(ty));
    std::vector<Array> branch_cts;
    size_t k = nk;
    for (const Array& c : cts) branch_cts.push_back(is_zero(c) ? Array() : in[k++]);
    std::vector<Array> g = transpose_eval(*b, linear, std::span(in).first(nk), branch_cts);
    size_t m = 0;
    for (size_t i = 1; i < a.size(); ++i)
      if (a[i].linear) {
        g[m] = materialised(g[m], a[i].aval, loc);
        ++m;
      }
    transposed.push_back(scope.finish(g));
  }
  std::vector<Array> g = bind_cond_programs(a[0].value, ops, std::move(transposed), loc);
  std::vector<Array> result{Array()};
  size_t m = 0;
  for (size_t i = 1; i < a.size(); ++i) result.push_back(a[i].linear ? g[m++] : Array());
  return result;
}

// Batched index: every branch on the whole batch, then per example the result of branch
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

// Unbatched index: one cond whose branches are batched; an output batched in any branch is batched
// (broadcast) in all of them so that the branches agree.
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
    programs.push_back(share(std::move(p)));
  }
  std::vector<Array> r = bind(Prim::cond, operands, Params{{"branches", programs}}, loc);
  std::vector<BatchedArray> outs;
  for (size_t j = 0; j < r.size(); ++j) outs.push_back({r[j], out_batched[j] ? 0 : kNotMapped});
  return outs;
}

const Registration cond_registration = PrimitiveRules{
    .prim = Prim::cond,
    .shape = &cond_shape,
    .impl = &cond_impl,
    .jvp = &cond_jvp,
    .transpose = &cond_transpose,
    .linear = kLinearByParams,  // in the ops its branches are linear in
    .batch = &cond_batch,
};

}  // namespace
}  // namespace fluxion
