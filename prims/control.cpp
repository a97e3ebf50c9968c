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
// values into explicit operands. Derivative and batching rules live next to these in this file as
// the transforms add them.
#include <algorithm>

#include "ir/trace.h"
#include "prims/registry.h"

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

// (end of derivatives)

// ---- batching -----------------------------------------------------------------------------------------

// (end of batching)

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

  // batching rules
}

}  // namespace fluxion
