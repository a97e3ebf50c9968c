// Control flow: primitives that hold sub-programs, evaluated by interpreting them (impl).
//
//   cond[branches=(P0, P1, ...)] index ops...
//       runs branch clamp(index, 0, n-1) on ops; every branch takes all ops and returns the same types.
//   while[cond=C body=B cond_nconsts=nc body_nconsts=nb] cond_consts... body_consts... carry...
//       while C(cond_consts, carry) is true: carry = B(body_consts, carry).
//   scan[body=B num_consts=nc num_carry=nk length=n reverse=False] consts... carry... xs...
//       for t in 0..n-1 (or n-1..0): carry, y_t = B(consts, carry, xs[t]); returns carry, stacked ys.
//
// The user API (transforms/control_flow.h) builds these from C++ callables, converting captured
// values into explicit operands. Their derivative rules follow in this file; their batching rules,
// which re-trace the sub-programs through vmap, are in prims/control_batching.cpp.
#include <algorithm>

#include "ir/trace.h"
#include "prims/registry.h"
#include "transforms/jvp.h"
#include "transforms/simplify.h"
#include "transforms/transpose.h"
#include "transforms/vjp.h"

namespace fluxion {
namespace {

using Arrays = std::span<const Array>;
const Program& sub(const Params& p, const char* key) { return *p.get<ProgramRef>(key); }
size_t count(const Params& p, const char* key) { return size_t(p.get_int(key)); }

void check_inputs(std::span<const AbstractArray> in, const Program& prog, const std::string& what) {
  if (in.size() != prog.invars.size())
    rule_error(ErrorKind::Type, what + " takes " + std::to_string(prog.invars.size()) + " inputs, given " +
                                    std::to_string(in.size()));
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].same_type(prog.type(prog.invars[i])))
      rule_error(ErrorKind::Type, what + " input " + std::to_string(i) + " has type " + prog.type(prog.invars[i]).str() +
                                      " but is given " + in[i].str());
}

// ---- cond -------------------------------------------------------------------------------------------
std::vector<AbstractArray> cond_rule(std::span<const AbstractArray> in, const Params& params) {
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

// ---- while ------------------------------------------------------------------------------------------
std::vector<AbstractArray> while_rule(std::span<const AbstractArray> in, const Params& params) {
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

// ---- scan -------------------------------------------------------------------------------------------
std::vector<AbstractArray> scan_rule(std::span<const AbstractArray> in, const Params& params) {
  const Program& body = sub(params, "body");
  size_t nc = count(params, "num_consts"), nk = count(params, "num_carry");
  int64_t length = params.get_int("length");
  if (length < 0) rule_error(ErrorKind::Value, "negative length");
  if (in.size() < nc + nk) rule_error(ErrorKind::Type, "too few operands");
  std::vector<AbstractArray> body_in(in.begin(), in.begin() + long(nc + nk));
  for (size_t i = nc + nk; i < in.size(); ++i) {
    const AbstractArray& x = in[i];
    if (x.ndim() == 0 || x.shape[0] != length)
      rule_error(ErrorKind::Shape, "scanned operand " + std::to_string(i - nc - nk) + " has type " + x.str() +
                                       "; its leading dimension must be the length " + std::to_string(length));
    AbstractArray slice = x;
    slice.shape = Shape(x.shape.begin() + 1, x.shape.end());
    body_in.push_back(slice);
  }
  check_inputs(body_in, body, "the scan body");
  std::vector<AbstractArray> bo = body.out_avals();
  if (bo.size() < nk) rule_error(ErrorKind::Type, "the scan body must return the carry first");
  std::vector<AbstractArray> outs;
  for (size_t i = 0; i < nk; ++i) {
    if (!bo[i].same_type(in[nc + i]))
      rule_error(ErrorKind::Type, "carry leaf " + std::to_string(i) + " enters the scan as " + in[nc + i].str() +
                                      " but the body returns " + bo[i].str());
    outs.push_back(in[nc + i]);
    outs.back().weak_type = in[nc + i].weak_type && bo[i].weak_type;  // as for while
  }
  for (size_t i = nk; i < bo.size(); ++i) {
    AbstractArray y = bo[i];
    Shape s{length};
    for (int64_t d : y.shape) s.push_back(d);
    y.shape = s;
    y.weak_type = false;
    outs.push_back(y);
  }
  return outs;
}

Array slice_at(const Array& x, int64_t t) {
  IntList start(size_t(x.ndim()), 0), limit = x.shape().dims();
  start[0] = t;
  limit[0] = t + 1;
  Array s = bind1(Prim::slice, {x}, Params{{"start_indices", start}, {"limit_indices", limit}}, {});
  return bind1(Prim::squeeze, {s}, Params{{"dimensions", IntList{0}}}, {});
}

std::vector<Array> scan_impl(Arrays in, const Params& params, SourceLoc) {
  const Program& body = sub(params, "body");
  size_t nc = count(params, "num_consts"), nk = count(params, "num_carry");
  const int64_t length = params.get_int("length");
  const bool reverse = params.get_bool("reverse");
  std::vector<Array> consts(in.begin(), in.begin() + long(nc));
  std::vector<Array> carry(in.begin() + long(nc), in.begin() + long(nc + nk));
  std::vector<Array> xs(in.begin() + long(nc + nk), in.end());
  const size_t ny = body.outvars.size() - nk;
  std::vector<std::vector<Array>> ys(ny, std::vector<Array>(size_t(length)));
  std::vector<Array> args;
  for (int64_t step = 0; step < length; ++step) {
    const int64_t t = reverse ? length - 1 - step : step;
    args = consts;
    args.insert(args.end(), carry.begin(), carry.end());
    for (const Array& x : xs) args.push_back(slice_at(x, t));
    std::vector<Array> out = eval_program(body, args);
    carry.assign(out.begin(), out.begin() + long(nk));
    for (size_t j = 0; j < ny; ++j) ys[j][size_t(t)] = out[nk + j];
  }
  std::vector<AbstractArray> avals = body.out_avals();
  std::vector<Array> result = carry;
  for (size_t j = 0; j < ny; ++j) {
    const AbstractArray& y = avals[nk + j];
    IntList shape{length};
    for (int64_t d : y.shape) shape.push_back(d);
    if (length == 0) {
      Array zero = literal_array(Literal::of_int(0, y.dtype));
      result.push_back(bind1(Prim::broadcast_in_dim, {zero}, Params{{"shape", shape}, {"broadcast_dimensions", IntList{}}}, {}));
      continue;
    }
    std::vector<Array> rows;
    for (const Array& r : ys[j]) {
      IntList one{1};
      for (int64_t d : y.shape) one.push_back(d);
      rows.push_back(bind1(Prim::reshape, {r}, Params{{"new_sizes", one}}, {}));
    }
    result.push_back(bind1(Prim::concatenate, rows, Params{{"dimension", int64_t(0)}}, {}));
  }
  return result;
}

// ---- derivatives (jvp, transpose) --------------------------------------------------------------------
// Sub-programs are differentiated with the program transforms (jvp_program, linearize_programs,
// transpose_eval) and the results are bound as new control-flow eqns; their own rules apply again
// when those are differentiated (higher order) or nested. Sub-programs held in params are closed,
// so every derived program's captured values are hoisted into explicit leading operands.

ProgramRef share(Program p) { return std::make_shared<const Program>(std::move(p)); }

/// p with invars in the order `in` (a permutation of all of them) and outvars `out` (any subset).
Program reorder(Program p, const std::vector<size_t>& in, const std::vector<size_t>& out) {
  std::vector<int32_t> invars;
  for (size_t i : in) invars.push_back(p.invars[i]);
  std::vector<Atom> outvars;
  for (size_t i : out) outvars.push_back(p.outvars[i]);
  p.invars = std::move(invars);
  p.outvars = std::move(outvars);
  return p;
}
std::vector<size_t> range(size_t from, size_t to) {
  std::vector<size_t> r;
  for (size_t i = from; i < to; ++i) r.push_back(i);
  return r;
}
void append(std::vector<size_t>& a, const std::vector<size_t>& b) { a.insert(a.end(), b.begin(), b.end()); }
Array tangent_or_zeros(const Array& primal, const Array& t, SourceLoc loc) {
  return is_zero(t) ? zeros_for(primal.aval(), loc) : t;
}
Array materialised(const Array& ct, const AbstractArray& aval, SourceLoc loc) {
  return is_zero(ct) ? zeros_for(aval, loc) : ct;
}
AbstractArray row_type(AbstractArray a) {
  a.shape = Shape(a.shape.begin() + 1, a.shape.end());
  return a;
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
  for (Program& p : jvps) p = reorder(std::move(p), range(0, p.invars.size()), keep);
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

// scan: the body is linearized once (linearize_programs with the carry mask at its fixpoint). The
// rule emits two scans: a primal scan whose body is the forward program, stacking the body's
// residuals of every step as extra ys, and a linear tangent scan whose body is the linear program,
// scanning over those residuals. Partial evaluation then keeps the primal scan in the forward pass
// and the tangent scan in the linear program, whose transpose is a reverse scan. Residuals that are
// the body's consts or scanned inputs are passed as they are, not stacked again: with checkpoint on
// the body, only the carries are stored per step.
std::vector<Array> scan_jvp(Arrays x, Arrays t, Arrays, const Params& params, SourceLoc loc) {
  const Program& body = sub(params, "body");
  const size_t nc = count(params, "num_consts"), nk = count(params, "num_carry");
  const size_t n_body_out = body.outvars.size(), ny = n_body_out - nk;
  const int64_t length = params.get_int("length");
  const bool reverse = params.get_bool("reverse");
  std::vector<bool> mask;
  for (size_t i = 0; i < x.size(); ++i) mask.push_back(!is_zero(t[i]) && has_tangent_space(x[i].dtype()));
  std::vector<bool> out_nz;
  for (bool changed = true; changed;) {
    jvp_program(body, mask, &out_nz);
    changed = false;
    for (size_t i = 0; i < nk; ++i)
      if (out_nz[i] && !mask[nc + i] && has_tangent_space(x[nc + i].dtype())) changed = mask[nc + i] = true;
  }
  LinearizedPrograms lin = linearize_programs(body, mask, n_body_out);
  const size_t nr = lin.num_residuals;

  // Classify the residuals: a body const, a scanned input (both passed as they are), or stacked.
  enum class Res { constant, scanned, stacked };
  std::vector<Res> kind(nr, Res::stacked);
  std::vector<size_t> source(nr, 0);  // the operand of x a const/scanned residual is
  std::vector<size_t> fwd_out = range(0, n_body_out);
  for (size_t k = 0; k < nr; ++k) {
    const Atom& a = lin.forward.outvars[n_body_out + k];
    for (size_t i = 0; i < x.size() && !a.is_literal(); ++i)
      if (lin.forward.invars[i] == a.var && (i < nc || i >= nc + nk)) {
        kind[k] = i < nc ? Res::constant : Res::scanned;
        source[k] = i;
      }
    if (kind[k] == Res::stacked) fwd_out.push_back(n_body_out + k);
  }

  // The primal scan: outputs, then the stacked residuals.
  std::vector<Array> fwd_hoisted;
  Program fwd = hoist_consts(simplify(reorder(std::move(lin.forward), range(0, x.size()), fwd_out)), fwd_hoisted);
  std::vector<Array> operands = fwd_hoisted;
  operands.insert(operands.end(), x.begin(), x.end());
  std::vector<Array> primal = bind(Prim::scan, operands,
                                   Params{{"body", share(std::move(fwd))},
                                          {"num_consts", int64_t(fwd_hoisted.size() + nc)},
                                          {"num_carry", int64_t(nk)},
                                          {"length", length},
                                          {"reverse", reverse}},
                                   loc);

  // The tangent scan. The linear program's invars: residuals, then the tangents of the masked body
  // invars (consts, carry, xs order); its outputs: tangents of every body output.
  std::vector<size_t> const_in, carry_in, xs_in;
  std::vector<Array> const_ops, carry_ops, xs_ops;
  size_t stacked = nk + ny;
  for (size_t k = 0; k < nr; ++k) {
    if (kind[k] == Res::constant) {
      const_in.push_back(k);
      const_ops.push_back(x[source[k]]);
    }
  }
  for (size_t k = 0; k < nr; ++k) {
    if (kind[k] == Res::scanned) {
      xs_in.push_back(k);
      xs_ops.push_back(x[source[k]]);
    } else if (kind[k] == Res::stacked) {
      xs_in.push_back(k);
      xs_ops.push_back(primal[stacked++]);
    }
  }
  size_t pos = nr;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!mask[i]) continue;
    if (i < nc) {
      const_in.push_back(pos++);
      const_ops.push_back(t[i]);
    } else if (i < nc + nk) {
      carry_in.push_back(pos++);
      carry_ops.push_back(tangent_or_zeros(x[i], t[i], loc));
    } else {
      xs_in.push_back(pos++);
      xs_ops.push_back(t[i]);
    }
  }
  std::vector<size_t> order = const_in, lin_out;
  append(order, carry_in);
  append(order, xs_in);
  for (size_t i = 0; i < nk; ++i)
    if (mask[nc + i]) lin_out.push_back(i);
  for (size_t j = 0; j < ny; ++j)
    if (out_nz[nk + j]) lin_out.push_back(nk + j);
  std::vector<Array> lin_hoisted;
  Program lb = hoist_consts(simplify(reorder(std::move(lin.linear), order, lin_out)), lin_hoisted);
  std::vector<Array> lin_ops = lin_hoisted;
  lin_ops.insert(lin_ops.end(), const_ops.begin(), const_ops.end());
  lin_ops.insert(lin_ops.end(), carry_ops.begin(), carry_ops.end());
  lin_ops.insert(lin_ops.end(), xs_ops.begin(), xs_ops.end());
  std::vector<Array> tan = bind(Prim::scan, lin_ops,
                                Params{{"body", share(std::move(lb))},
                                       {"num_consts", int64_t(lin_hoisted.size() + const_ops.size())},
                                       {"num_carry", int64_t(carry_ops.size())},
                                       {"length", length},
                                       {"reverse", reverse}},
                                loc);

  std::vector<Array> result(primal.begin(), primal.begin() + long(nk + ny));
  size_t k = 0;
  for (size_t i = 0; i < nk; ++i) result.push_back(mask[nc + i] ? tan[k++] : Array());
  for (size_t j = 0; j < ny; ++j) result.push_back(out_nz[nk + j] ? tan[k++] : Array());
  return result;
}

// In a linear program, a scan is linear in its carries and in some consts and scanned inputs, given
// the others (the residuals). Its transpose is a scan in the opposite direction of the body's
// transpose: the carry holds the carries' cotangents and the accumulated cotangents of the linear
// consts; it scans over the known inputs and the nonzero ys cotangents and yields the cotangents of
// the linear scanned inputs. A carry whose initial value is known (a materialised zero tangent) is
// still linear in the body; its cotangent is simply not returned.
std::vector<Array> scan_transpose(Arrays cts, std::span<const LinearArg> a, const Params& params, SourceLoc loc) {
  const Program& body = sub(params, "body");
  const size_t nc = count(params, "num_consts"), nk = count(params, "num_carry");
  const int64_t length = params.get_int("length");
  const std::vector<AbstractArray> body_out = body.out_avals();
  const size_t ny = body_out.size() - nk;

  std::vector<bool> linear;  // over the body's invars
  std::vector<Array> known_consts, known_xs, lin_const_zero, nz_cts;
  std::vector<AbstractArray> known_const_types, known_x_types, lin_const_types, nz_ct_types;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool is_carry = i >= nc && i < nc + nk;
    linear.push_back(a[i].linear || is_carry);
    if (is_carry || a[i].linear) continue;
    if (i < nc) {
      known_consts.push_back(a[i].value);
      known_const_types.push_back(a[i].aval);
    } else {
      known_xs.push_back(a[i].value);
      known_x_types.push_back(row_type(a[i].aval));
    }
  }
  for (size_t i = 0; i < nc; ++i)
    if (a[i].linear) {
      lin_const_zero.push_back(zeros_for(a[i].aval, loc));
      lin_const_types.push_back(a[i].aval);
    }
  std::vector<Array> ct_carry;
  for (size_t i = 0; i < nk; ++i) ct_carry.push_back(materialised(cts[i], a[nc + i].aval, loc));
  for (size_t j = 0; j < ny; ++j)
    if (!is_zero(cts[nk + j])) {
      nz_cts.push_back(cts[nk + j]);
      nz_ct_types.push_back(body_out[nk + j]);
    }

  Program tb;
  {
    TraceScope scope;
    auto inputs = [&](const std::vector<AbstractArray>& types) {
      std::vector<Array> v;
      for (const AbstractArray& ty : types) v.push_back(scope.new_input(ty));
      return v;
    };
    std::vector<Array> kc = inputs(known_const_types);
    std::vector<AbstractArray> carry_types;
    for (size_t i = 0; i < nk; ++i) carry_types.push_back(a[nc + i].aval);
    std::vector<Array> ctc = inputs(carry_types);
    std::vector<Array> acc = inputs(lin_const_types);
    std::vector<Array> kx = inputs(known_x_types);
    std::vector<Array> cty = inputs(nz_ct_types);
    std::vector<Array> known = kc, body_cts = ctc;
    known.insert(known.end(), kx.begin(), kx.end());
    size_t m = 0;
    for (size_t j = 0; j < ny; ++j) body_cts.push_back(is_zero(cts[nk + j]) ? Array() : cty[m++]);
    std::vector<Array> g = transpose_eval(body, linear, known, body_cts);
    // g: cotangents of the linear consts, the carries, the linear xs (body invar order).
    std::vector<Array> outs;
    size_t gi = 0;
    std::vector<Array> const_g, xs_g;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!linear[i]) continue;
      const AbstractArray ty = i >= nc + nk ? row_type(a[i].aval) : a[i].aval;
      Array gv = materialised(g[gi++], ty, loc);
      if (i < nc)
        const_g.push_back(gv);
      else if (i < nc + nk)
        outs.push_back(gv);
      else
        xs_g.push_back(gv);
    }
    for (size_t j = 0; j < acc.size(); ++j) outs.push_back(add_tangents(acc[j], const_g[j], loc));
    outs.insert(outs.end(), xs_g.begin(), xs_g.end());
    tb = scope.finish(outs);
  }
  std::vector<Array> hoisted;
  tb = hoist_consts(simplify(std::move(tb)), hoisted);
  std::vector<Array> operands = hoisted;
  operands.insert(operands.end(), known_consts.begin(), known_consts.end());
  operands.insert(operands.end(), ct_carry.begin(), ct_carry.end());
  operands.insert(operands.end(), lin_const_zero.begin(), lin_const_zero.end());
  operands.insert(operands.end(), known_xs.begin(), known_xs.end());
  operands.insert(operands.end(), nz_cts.begin(), nz_cts.end());
  std::vector<Array> r = bind(Prim::scan, operands,
                              Params{{"body", share(std::move(tb))},
                                     {"num_consts", int64_t(hoisted.size() + known_consts.size())},
                                     {"num_carry", int64_t(nk + lin_const_zero.size())},
                                     {"length", length},
                                     {"reverse", !params.get_bool("reverse")}},
                              loc);
  std::vector<Array> result;
  size_t ci = nk, xi = nk + lin_const_zero.size();
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].linear)
      result.push_back(Array());
    else if (i < nc)
      result.push_back(r[ci++]);
    else if (i < nc + nk)
      result.push_back(r[i - nc]);
    else
      result.push_back(r[xi++]);
  }
  return result;
}


}  // namespace

void register_control_prims(RuleTable& t) {
  PrimitiveRules& c = t[size_t(Prim::cond)];
  c.shape = &cond_rule;
  c.impl = &cond_impl;
  PrimitiveRules& w = t[size_t(Prim::while_)];
  w.shape = &while_rule;
  w.impl = &while_impl;
  PrimitiveRules& s = t[size_t(Prim::scan)];
  s.shape = &scan_rule;
  s.impl = &scan_impl;

  // derivative rules
  c.jvp = &cond_jvp;
  c.transpose = &cond_transpose;
  w.jvp = &while_jvp;
  w.transpose = &while_transpose;
  s.jvp = &scan_jvp;
  s.jvp_computes_primal = true;
  s.transpose = &scan_transpose;
  // batching rules: prims/control_batching.cpp (register_control_batching)
}

}  // namespace fluxion
