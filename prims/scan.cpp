// scan[body=B num_consts=nc num_carry=nk length=n reverse=False] consts... carry... xs...:
// for t in 0..n-1 (or n-1..0): carry, y_t = B(consts, carry, xs[t]); returns carry, stacked ys.
// One block (the pattern of prims/unary.cpp); the user API is fx::scan (transforms/control_flow.h),
// the helpers prims/subprograms.h.
#include "ir/dim_expr.h"
#include "prims/registry.h"
#include "prims/subprograms.h"
#include "interpreters/simplify.h"
#include "interpreters/vjp.h"

namespace fluxion {
namespace {
using namespace subprograms;

std::vector<AbstractArray> scan_shape(std::span<const AbstractArray> in, const Params& params) {
  const Program& body = sub(params, "body");
  size_t nc = count(params, "num_consts"), nk = count(params, "num_carry");
  int64_t length = params.get_int("length");
  if (length < 0 && !is_symbolic_dim(length)) rule_error(ErrorKind::Value, "negative length");  // a symbol is >= 1
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

/// Binds a scan of `body` (simplified, its captured values hoisted into leading consts) over
/// consts, carry and xs.
std::vector<Array> bind_scan_of(Program body, std::span<const Array> consts, std::span<const Array> carry,
                                std::span<const Array> xs, int64_t length, bool reverse, SourceLoc loc) {
  std::vector<Array> operands;
  body = hoist_consts(simplify(std::move(body)), operands);
  const int64_t num_consts = int64_t(operands.size() + consts.size());
  operands.insert(operands.end(), consts.begin(), consts.end());
  operands.insert(operands.end(), carry.begin(), carry.end());
  operands.insert(operands.end(), xs.begin(), xs.end());
  return bind(Prim::scan, operands,
              Params{{"body", share(std::move(body))},
                     {"num_consts", num_consts},
                     {"num_carry", int64_t(carry.size())},
                     {"length", length},
                     {"reverse", reverse}},
              loc);
}
std::vector<Array> joined(std::vector<Array> a, const std::vector<Array>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ---- jvp --------------------------------------------------------------------------------------------
// The body is linearized once (linearize_programs with the carry mask at its fixpoint). The rule
// emits two scans: a primal scan whose body is the forward program, stacking the body's residuals of
// every step as extra ys, and a linear tangent scan whose body is the linear program, scanning over
// those residuals. Partial evaluation then keeps the primal scan in the forward pass and the tangent
// scan in the linear program, whose transpose is a reverse scan. Residuals that are the body's
// consts or scanned inputs are passed as they are, not stacked again: with checkpoint on the body,
// only the carries are stored per step.

/// Which body inputs carry nonzero tangents: the operands with one, and the carries whose tangent a
/// step can make nonzero (a fixpoint). `out_nz` receives which body outputs have nonzero tangents.
std::vector<bool> tangent_mask(const Program& body, Arrays x, Arrays t, size_t nc, size_t nk, std::vector<bool>& out_nz) {
  std::vector<bool> mask;
  for (size_t i = 0; i < x.size(); ++i) mask.push_back(!is_zero(t[i]) && has_tangent_space(x[i].dtype()));
  for (bool changed = true; changed;) {
    jvp_program(body, mask, &out_nz);
    changed = false;
    for (size_t i = 0; i < nk; ++i)
      if (out_nz[i] && !mask[nc + i] && has_tangent_space(x[nc + i].dtype())) changed = mask[nc + i] = true;
  }
  return mask;
}

/// Where each residual of the linearized body comes from: a body const or a scanned input (passed
/// to the tangent scan as it is: `source` is its operand), or stacked by the primal scan.
enum class Res { constant, scanned, stacked };
struct Residuals {
  std::vector<Res> kind;
  std::vector<size_t> source;
};
Residuals classify_residuals(const Program& forward, size_t n_body_out, size_t nr, size_t n_in, size_t nc, size_t nk) {
  Residuals r{std::vector<Res>(nr, Res::stacked), std::vector<size_t>(nr, 0)};
  for (size_t k = 0; k < nr; ++k) {
    const Atom& a = forward.outvars[n_body_out + k];
    for (size_t i = 0; i < n_in && !a.is_literal(); ++i)
      if (forward.invars[i] == a.var && (i < nc || i >= nc + nk)) {
        r.kind[k] = i < nc ? Res::constant : Res::scanned;
        r.source[k] = i;
      }
  }
  return r;
}

/// The tangent scan's operands, sorted into consts, carries and xs; `order` lists the linear
/// program's invars (residuals, then the tangents of the masked body invars) in that layout.
struct TangentScan {
  std::vector<size_t> order;
  std::vector<Array> consts, carry, xs;
};
TangentScan tangent_scan(const Residuals& r, Arrays x, Arrays t, const std::vector<bool>& mask,
                         std::span<const Array> stacked, size_t nc, size_t nk, SourceLoc loc) {
  const size_t nr = r.kind.size();
  TangentScan s;
  std::vector<size_t> const_in, carry_in, xs_in;
  for (size_t k = 0; k < nr; ++k)
    if (r.kind[k] == Res::constant) {
      const_in.push_back(k);
      s.consts.push_back(x[r.source[k]]);
    }
  size_t next_stacked = 0;
  for (size_t k = 0; k < nr; ++k) {
    if (r.kind[k] == Res::constant) continue;
    xs_in.push_back(k);
    s.xs.push_back(r.kind[k] == Res::scanned ? x[r.source[k]] : stacked[next_stacked++]);
  }
  size_t pos = nr;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!mask[i]) continue;
    if (i < nc) {
      const_in.push_back(pos++);
      s.consts.push_back(t[i]);
    } else if (i < nc + nk) {
      carry_in.push_back(pos++);
      s.carry.push_back(tangent_or_zeros(x[i], t[i], loc));
    } else {
      xs_in.push_back(pos++);
      s.xs.push_back(t[i]);
    }
  }
  s.order = const_in;
  append(s.order, carry_in);
  append(s.order, xs_in);
  return s;
}

std::vector<Array> scan_jvp(Arrays x, Arrays t, Arrays, const Params& params, SourceLoc loc) {
  const Program& body = sub(params, "body");
  const size_t nc = count(params, "num_consts"), nk = count(params, "num_carry");
  const size_t n_body_out = body.outvars.size(), ny = n_body_out - nk;
  const int64_t length = params.get_int("length");
  const bool reverse = params.get_bool("reverse");
  std::vector<bool> out_nz;
  const std::vector<bool> mask = tangent_mask(body, x, t, nc, nk, out_nz);
  LinearizedPrograms lin = linearize_programs(body, mask, n_body_out);
  const Residuals res = classify_residuals(lin.forward, n_body_out, lin.num_residuals, x.size(), nc, nk);

  // The primal scan: outputs, then the stacked residuals.
  std::vector<size_t> fwd_out = range(0, n_body_out);
  for (size_t k = 0; k < lin.num_residuals; ++k)
    if (res.kind[k] == Res::stacked) fwd_out.push_back(n_body_out + k);
  std::vector<Array> primal = bind_scan_of(reorder(std::move(lin.forward), range(0, x.size()), fwd_out), x.first(nc),
                                           x.subspan(nc, nk), x.subspan(nc + nk), length, reverse, loc);

  // The tangent scan, yielding the nonzero tangents of the carries and ys.
  const TangentScan ts = tangent_scan(res, x, t, mask, std::span(primal).subspan(nk + ny), nc, nk, loc);
  std::vector<size_t> lin_out;
  for (size_t i = 0; i < nk; ++i)
    if (mask[nc + i]) lin_out.push_back(i);
  for (size_t j = 0; j < ny; ++j)
    if (out_nz[nk + j]) lin_out.push_back(nk + j);
  std::vector<Array> tan = bind_scan_of(reorder(std::move(lin.linear), ts.order, lin_out), ts.consts, ts.carry, ts.xs,
                                        length, reverse, loc);

  std::vector<Array> result(primal.begin(), primal.begin() + long(nk + ny));
  size_t k = 0;
  for (size_t i = 0; i < nk; ++i) result.push_back(mask[nc + i] ? tan[k++] : Array());
  for (size_t j = 0; j < ny; ++j) result.push_back(out_nz[nk + j] ? tan[k++] : Array());
  return result;
}

// ---- transpose --------------------------------------------------------------------------------------
// In a linear program, a scan is linear in its carries and in some consts and scanned inputs, given
// the others (the residuals). Its transpose is a scan in the opposite direction of the body's
// transpose: the carry holds the carries' cotangents and the accumulated cotangents of the linear
// consts; it scans over the known inputs and the nonzero ys cotangents and yields the cotangents of
// the linear scanned inputs. A carry whose initial value is known (a materialised zero tangent) is
// still linear in the body; its cotangent is simply not returned.

/// The transposed scan's operands, and the types its body takes them in.
struct TransposedScan {
  std::vector<bool> linear;  // over the body's invars: the linear operands and every carry
  std::vector<Array> known_consts, ct_carry, lin_const_zero, known_xs, nz_cts;
  std::vector<AbstractArray> known_const_types, carry_types, lin_const_types, known_x_types, nz_ct_types;
};
TransposedScan transposed_scan(Arrays cts, std::span<const LinearArg> a, const std::vector<AbstractArray>& body_out,
                               size_t nc, size_t nk, SourceLoc loc) {
  TransposedScan s;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool is_carry = i >= nc && i < nc + nk;
    s.linear.push_back(a[i].linear || is_carry);
    if (is_carry || a[i].linear) continue;
    if (i < nc) {
      s.known_consts.push_back(a[i].value);
      s.known_const_types.push_back(a[i].aval);
    } else {
      s.known_xs.push_back(a[i].value);
      s.known_x_types.push_back(row_type(a[i].aval));
    }
  }
  for (size_t i = 0; i < nc; ++i)
    if (a[i].linear) {
      s.lin_const_zero.push_back(zeros_for(a[i].aval, loc));
      s.lin_const_types.push_back(a[i].aval);
    }
  for (size_t i = 0; i < nk; ++i) {
    s.ct_carry.push_back(materialised(cts[i], a[nc + i].aval, loc));
    s.carry_types.push_back(a[nc + i].aval);
  }
  for (size_t j = nk; j < body_out.size(); ++j)
    if (!is_zero(cts[j])) {
      s.nz_cts.push_back(cts[j]);
      s.nz_ct_types.push_back(body_out[j]);
    }
  return s;
}

/// The transposed body: (known consts; carry cotangents, accumulated const cotangents; known xs, ys
/// cotangents) -> (carry cotangents, accumulated const cotangents; xs cotangents).
Program transposed_body(const Program& body, Arrays cts, std::span<const LinearArg> a, const TransposedScan& s,
                        size_t nc, size_t nk, SourceLoc loc) {
  TraceScope scope;
  auto inputs = [&](const std::vector<AbstractArray>& types) {
    std::vector<Array> v;
    for (const AbstractArray& ty : types) v.push_back(scope.new_input(ty));
    return v;
  };
  std::vector<Array> known = inputs(s.known_const_types), body_cts = inputs(s.carry_types);
  std::vector<Array> acc = inputs(s.lin_const_types);
  known = joined(known, inputs(s.known_x_types));
  std::vector<Array> cty = inputs(s.nz_ct_types);
  size_t m = 0;
  for (size_t j = nk; j < cts.size(); ++j) body_cts.push_back(is_zero(cts[j]) ? Array() : cty[m++]);
  std::vector<Array> g = transpose_eval(body, s.linear, known, body_cts);
  // g: cotangents of the linear consts, the carries, the linear xs (body invar order).
  std::vector<Array> outs, const_g, xs_g;
  size_t gi = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!s.linear[i]) continue;
    Array gv = materialised(g[gi++], i >= nc + nk ? row_type(a[i].aval) : a[i].aval, loc);
    (i < nc ? const_g : i < nc + nk ? outs : xs_g).push_back(gv);
  }
  for (size_t j = 0; j < acc.size(); ++j) outs.push_back(add_tangents(acc[j], const_g[j], loc));
  return scope.finish(joined(outs, xs_g));
}

std::vector<Array> scan_transpose(Arrays cts, std::span<const LinearArg> a, const Params& params, SourceLoc loc) {
  const Program& body = sub(params, "body");
  const size_t nc = count(params, "num_consts"), nk = count(params, "num_carry");
  const TransposedScan s = transposed_scan(cts, a, body.out_avals(), nc, nk, loc);
  std::vector<Array> r = bind_scan_of(transposed_body(body, cts, a, s, nc, nk, loc), s.known_consts,
                                      joined(s.ct_carry, s.lin_const_zero), joined(s.known_xs, s.nz_cts),
                                      params.get_int("length"), !params.get_bool("reverse"), loc);
  std::vector<Array> result;
  size_t ci = nk, xi = nk + s.lin_const_zero.size();
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

// Batching: a scan over the batched body; ys come out with the batch dim at 1.
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
  Params p{{"body", share(std::move(body_p.program))},
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

const Registration scan_registration = PrimitiveRules{
    .prim = Prim::scan,
    .shape = &scan_shape,
    .impl = &scan_impl,
    .jvp = &scan_jvp,
    .jvp_computes_primal = true,  // the primal scan also stacks the residuals
    .transpose = &scan_transpose,
    .linear = kLinearByParams,  // in its carries and the consts and xs its body is linear in
    .batch = &scan_batch,
};

}  // namespace
}  // namespace fluxion
