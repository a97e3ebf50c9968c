// while[cond=C body=B cond_nconsts=nc body_nconsts=nb] cond_consts... body_consts... carry...:
// while C(cond_consts, carry) is true: carry = B(body_consts, carry). One block (the pattern of
// prims/unary.cpp); the user API is fx::while_loop / fori_loop (transforms/control_flow.h), the
// helpers prims/subprograms.h.
#include "prims/registry.h"
#include "prims/subprograms.h"
#include "interpreters/simplify.h"

namespace fluxion {
namespace {
using namespace subprograms;

std::vector<AbstractArray> while_shape(std::span<const AbstractArray> in, const Params& params) {
  const Program& c = sub(params, "cond");
  const Program& b = sub(params, "body");
  size_t nc = count(params, "cond_nconsts"), nb = count(params, "body_nconsts");
  if (in.size() < nc + nb) rule_error(ErrorKind::Type, "too few operands");
  std::vector<AbstractArray> carry(in.begin() + long(nc + nb), in.end());
  std::vector<AbstractArray> cin(in.begin(), in.begin() + long(nc));
  cin.insert(cin.end(), carry.begin(), carry.end());
  check_inputs(cin, c, "the loop condition");
  std::vector<AbstractArray> co = c.out_avals();
  if (co.size() != 1 || co[0].ndim() != 0 || co[0].dtype != DType::bool_)
    rule_error(ErrorKind::Type, "the loop condition must return a bool scalar");
  std::vector<AbstractArray> bin(in.begin() + long(nc), in.begin() + long(nc + nb));
  bin.insert(bin.end(), carry.begin(), carry.end());
  check_inputs(bin, b, "the loop body");
  std::vector<AbstractArray> bo = b.out_avals();
  if (bo.size() != carry.size()) rule_error(ErrorKind::Type, "the loop body must return the carry");
  for (size_t i = 0; i < bo.size(); ++i)
    if (!bo[i].same_type(carry[i]))
      rule_error(ErrorKind::Type, "carry leaf " + std::to_string(i) + " enters the loop as " + carry[i].str() +
                                      " but the body returns " + bo[i].str());
  // A carry is weakly typed only if it enters and leaves the body so (a weak 0.0 that the body
  // turns into f32 comes out f32), however many times the loop runs.
  for (size_t i = 0; i < bo.size(); ++i) carry[i].weak_type = carry[i].weak_type && bo[i].weak_type;
  return carry;
}

std::vector<Array> while_impl(Arrays in, const Params& params, SourceLoc) {
  const Program& c = sub(params, "cond");
  const Program& b = sub(params, "body");
  size_t nc = count(params, "cond_nconsts"), nb = count(params, "body_nconsts");
  std::vector<Array> carry(in.begin() + long(nc + nb), in.end());
  std::vector<Array> cin(in.begin(), in.begin() + long(nc)), bin(in.begin() + long(nc), in.begin() + long(nc + nb));
  for (;;) {
    std::vector<Array> ci = cin;
    ci.insert(ci.end(), carry.begin(), carry.end());
    if (!eval_program(c, ci)[0].item<bool>()) return carry;
    std::vector<Array> bi = bin;
    bi.insert(bi.end(), carry.begin(), carry.end());
    carry = eval_program(b, bi);
  }
}

// while: the body's JVP, carrying the primal carry and the tangents of the carry leaves that can be
// nonzero -- a fixpoint, since a leaf whose tangent starts at zero may become nonzero after a step.
// Body-const tangents are extra body consts; the condition gets the tangent carries as inputs it
// ignores. Forward mode only: see while_transpose.
std::vector<Array> while_jvp(Arrays x, Arrays t, Arrays outs, const Params& params, SourceLoc loc) {
  const Program& c = sub(params, "cond");
  const Program& body = sub(params, "body");
  const size_t nc = count(params, "cond_nconsts"), nb = count(params, "body_nconsts"), nk = outs.size();
  std::vector<bool> mask;
  for (size_t i = nc; i < x.size(); ++i) mask.push_back(!is_zero(t[i]) && has_tangent_space(x[i].dtype()));
  Program j;
  for (bool changed = true; changed;) {
    std::vector<bool> out_nz;
    j = jvp_program(body, mask, &out_nz);
    changed = false;
    for (size_t i = 0; i < nk; ++i)
      if (out_nz[i] && !mask[nb + i] && has_tangent_space(outs[i].dtype())) changed = mask[nb + i] = true;
  }
  std::vector<Array> body_consts(x.begin() + long(nc), x.begin() + long(nc + nb)), carry(x.begin() + long(nc + nb), x.end());
  std::vector<Array> tcarry;
  std::vector<size_t> const_t, carry_t;  // positions of the tangent invars in j
  size_t pos = nb + nk;
  for (size_t i = 0; i < nb; ++i)
    if (mask[i]) {
      body_consts.push_back(t[nc + i]);
      const_t.push_back(pos++);
    }
  std::vector<size_t> tangent_outs;
  for (size_t i = 0; i < nk; ++i)
    if (mask[nb + i]) {
      tcarry.push_back(tangent_or_zeros(x[nc + nb + i], t[nc + nb + i], loc));
      carry_t.push_back(pos++);
      tangent_outs.push_back(nk + i);
    }
  std::vector<size_t> order = range(0, nb);
  append(order, const_t);
  append(order, range(nb, nb + nk));
  append(order, carry_t);
  std::vector<size_t> out_order = range(0, nk);
  append(out_order, tangent_outs);
  std::vector<Array> hoisted;
  Program jb = hoist_consts(simplify(reorder(std::move(j), order, out_order)), hoisted);

  Program wrapped_cond = c;  // takes the tangent carries too, and ignores them
  for (const Array& tc : tcarry) wrapped_cond.invars.push_back(wrapped_cond.new_var(tc.aval()));

  std::vector<Array> operands(x.begin(), x.begin() + long(nc));
  operands.insert(operands.end(), hoisted.begin(), hoisted.end());
  operands.insert(operands.end(), body_consts.begin(), body_consts.end());
  operands.insert(operands.end(), carry.begin(), carry.end());
  operands.insert(operands.end(), tcarry.begin(), tcarry.end());
  Params p{{"cond", share(std::move(wrapped_cond))},
           {"body", share(std::move(jb))},
           {"cond_nconsts", int64_t(nc)},
           {"body_nconsts", int64_t(hoisted.size() + body_consts.size())}};
  std::vector<Array> r = bind(Prim::while_, operands, p, loc);
  std::vector<Array> tangents;
  size_t k = nk;
  for (size_t i = 0; i < nk; ++i) tangents.push_back(mask[nb + i] ? r[k++] : Array());
  return tangents;
}

// A while loop's trip count is known only at run time, so the values of each step cannot be laid
// out for a backward pass. The bounded form (max_steps) is a scan, which can.
std::vector<Array> while_transpose(Arrays, std::span<const LinearArg>, const Params&, SourceLoc loc) {
  throw TypeError("TypeError: reverse-mode differentiation (grad, vjp, jacrev) of the while_loop at " + loc.str() +
                  ": its number of steps is only known at run time, so the values of each step cannot be saved for "
                  "the backward pass. Bound the loop: fx::while_loop(cond, body, init, fx::max_steps(N)) runs at most "
                  "N steps and is reverse-mode differentiable (or use fori_loop with static bounds, or scan). "
                  "Forward mode (jvp, jacfwd) works on the unbounded loop.");
}

// Batching: with an unbatched predicate, a while over the batched cond and body; with a batched one
// the loop runs while any example's predicate holds, and the body keeps the carry of the examples
// that are done (select on their predicate), so every carry becomes batched.
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
  Params p{{"cond", share(std::move(cond_p.program))},
           {"body", share(std::move(body_p.program))},
           {"cond_nconsts", cond_nconsts},
           {"body_nconsts", body_nconsts}};
  std::vector<Array> r = bind(Prim::while_, operands, p, loc);
  std::vector<BatchedArray> outs;
  for (size_t i = 0; i < r.size(); ++i) outs.push_back({r[i], batched[i] ? 0 : kNotMapped});
  return outs;
}

const Registration while_registration = PrimitiveRules{
    .prim = Prim::while_,
    .shape = &while_shape,
    .impl = &while_impl,
    .jvp = &while_jvp,
    // Linear in its tangent carries (what while_jvp makes), but the transpose can only explain why
    // reverse mode needs a bound (max_steps).
    .transpose = &while_transpose,
    .linear = kLinearByParams,
    .batch = &while_batch,
};

}  // namespace
}  // namespace fluxion
