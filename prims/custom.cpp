// Primitives that carry sub-programs for user-defined derivatives and rematerialization. They have
// no kernel: their impl interprets the sub-program. Operands start with the values the user's
// functions closed over (hoisted into explicit inputs), then the arguments.
//
//   custom_jvp_call[call jvp num_consts num_jvp_consts]  (call consts, jvp consts, args)
//       evaluates `call`; its JVP evaluates the user's `jvp` program: (jvp consts, primals, tangents)
//       -> (outputs, output tangents).
//   custom_vjp_call[fwd bwd num_outs num_consts num_bwd_consts]  (fwd consts, bwd consts, args)
//       evaluates `fwd` and keeps its first num_outs outputs; its JVP runs `fwd` for the residuals and
//       emits custom_vjp_linear, whose transpose is the user's `bwd`.
//   custom_vjp_linear[fwd bwd num_outs num_bwd_consts num_res]  (bwd consts, residuals, tangents)
//       linear in the tangents; only ever transposed (forward mode through custom_vjp is an error,
//       as in JAX).
//   checkpoint[program num_consts]  (consts, args)
//       evaluates `program`. Its JVP is another checkpoint holding the JVP program, so linearize puts
//       the whole recomputation in the linear program; transposing it re-runs the primal from the
//       inputs: only inputs are saved as residuals.
#include <algorithm>

#include "ir/trace.h"
#include "prims/registry.h"
#include "prims/subprograms.h"

namespace fluxion {
namespace {

using Arrays = std::span<const Array>;
using subprograms::count;
using subprograms::sub;

void check_types(std::span<const AbstractArray> in, const Program& prog, const char* what) {
  if (in.size() != prog.invars.size())
    rule_error(ErrorKind::Type, std::string("expects ") + std::to_string(prog.invars.size()) + " operands for its " + what +
                                    " program, got " + std::to_string(in.size()));
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].same_type(prog.type(prog.invars[i])))
      rule_error(ErrorKind::Type, "operand " + std::to_string(i) + " has type " + in[i].str() + " but the " + what +
                                      " program expects " + prog.type(prog.invars[i]).str());
}
std::vector<Array> tangents_or_zeros(Arrays x, Arrays t, size_t from, SourceLoc loc) {
  std::vector<Array> out;
  for (size_t i = from; i < x.size(); ++i) out.push_back(is_zero(t[i]) ? zeros_for(x[i].aval(), loc) : t[i]);
  return out;
}
void reject_closure_tangents(Arrays t, size_t n, const char* which, SourceLoc loc) {
  for (size_t i = 0; i < n; ++i)
    if (!is_zero(t[i]))
      throw TypeError(std::string("TypeError: differentiation of a ") + which + " function at " + loc.str() +
                      " with respect to a value it closes over. The custom rule only says how to differentiate "
                      "with respect to the function's explicit arguments: pass the value as an argument.");
}
std::vector<Array> concat(std::initializer_list<std::span<const Array>> parts) {
  std::vector<Array> out;
  for (auto p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// ---- batching, shared by the four blocks ----------------------------------------------------------
// The batched call is the same primitive holding batched sub-programs, so a later jvp or transpose
// of it still runs the user's rule (on batched values). Mapped operands are materialised with the
// batch at 0; each sub-program is re-traced through vmap_eval with those batch dims.
using BatchedArgs = std::span<const BatchedArray>;

/// How a batched sub-program delivers each output.
enum class OutBatch {
  at_zero,   // batched at dim 0 (broadcast if the computation left it unbatched)
  as_is,     // wherever vmap_eval left it
  unbatched  // without a batch dim (summed over the batch): the cotangent of an unmapped argument
};

struct BatchedSub {
  ProgramRef program;
  std::vector<Array> consts;  // values the re-trace closed over: new leading operands, never batched
  std::vector<int64_t> out_dims;
};

/// The inputs of a sub-program under vmap: each one's (batched) type and batch dim.
struct SubInputs {
  std::vector<AbstractArray> avals;
  std::vector<int64_t> dims;
  SubInputs& operator+=(const SubInputs& o) {
    avals.insert(avals.end(), o.avals.begin(), o.avals.end());
    dims.insert(dims.end(), o.dims.begin(), o.dims.end());
    return *this;
  }
};
SubInputs operator+(SubInputs a, const SubInputs& b) { return a += b; }

/// Inputs of the given per-example types, batched at 0 (residuals and cotangents, which the
/// batched call produces at 0).
SubInputs batched_at_zero(std::span<const AbstractArray> avals, int64_t n) {
  SubInputs s;
  for (const AbstractArray& a : avals) {
    IntList shape = a.shape.dims();
    shape.insert(shape.begin(), n);
    s.avals.push_back(AbstractArray{Shape(shape), a.dtype, a.weak_type});
    s.dims.push_back(0);
  }
  return s;
}

BatchedSub batch_sub(const Program& p, const SubInputs& in, std::span<const OutBatch> want, int64_t n, SourceLoc loc) {
  TraceScope scope;
  std::vector<BatchedArray> args;
  for (size_t i = 0; i < in.avals.size(); ++i) args.push_back({scope.new_input(in.avals[i]), in.dims[i]});
  std::vector<BatchedArray> r = vmap_eval(p, args, n);
  std::vector<Array> outs;
  BatchedSub b;
  for (size_t j = 0; j < r.size(); ++j) {
    switch (want[j]) {
      case OutBatch::at_zero:
        outs.push_back(batch_at(r[j], 0, n, loc));
        b.out_dims.push_back(0);
        break;
      case OutBatch::as_is:
        outs.push_back(r[j].value);
        b.out_dims.push_back(r[j].dim);
        break;
      case OutBatch::unbatched:
        outs.push_back(r[j].dim == kNotMapped
                           ? r[j].value
                           : bind1(Prim::reduce_sum, {r[j].value}, Params{{"axes", IntList{r[j].dim}}}, loc));
        b.out_dims.push_back(kNotMapped);
        break;
    }
  }
  b.program = std::make_shared<const Program>(hoist_consts(scope.finish(outs), b.consts));
  return b;
}

/// The operands with every mapped one's batch dim at 0, and their batch dims (0 or kNotMapped).
struct Materialised {
  std::vector<Array> values;
  std::vector<int64_t> dims;
  Materialised slice(size_t from, size_t n) const {
    return {{values.begin() + long(from), values.begin() + long(from + n)},
            {dims.begin() + long(from), dims.begin() + long(from + n)}};
  }
  SubInputs inputs() const {
    SubInputs s{{}, dims};
    for (const Array& v : values) s.avals.push_back(v.aval());
    return s;
  }
};
Materialised materialise(BatchedArgs a, SourceLoc loc) {
  Materialised m;
  for (const BatchedArray& x : a) {
    m.values.push_back(x.dim == kNotMapped ? x.value : move_batch_dim(x.value, x.dim, 0, loc));
    m.dims.push_back(x.dim == kNotMapped ? kNotMapped : 0);
  }
  return m;
}
std::vector<OutBatch> all(size_t n, OutBatch w) { return std::vector<OutBatch>(n, w); }
std::vector<BatchedArray> at_dims(std::vector<Array> outs, const std::vector<int64_t>& dims) {
  std::vector<BatchedArray> r;
  for (size_t i = 0; i < outs.size(); ++i) r.push_back({std::move(outs[i]), dims[i]});
  return r;
}

// ---- custom_jvp_call --------------------------------------------------------------------------------
std::vector<AbstractArray> custom_jvp_shape(std::span<const AbstractArray> in, const Params& params) {
  const Program& call = sub(params, "call");
  size_t nc = count(params, "num_consts"), nj = count(params, "num_jvp_consts");
  if (in.size() < nc + nj) rule_error(ErrorKind::Type, "too few operands");
  std::vector<AbstractArray> call_in(in.begin(), in.begin() + long(nc));
  call_in.insert(call_in.end(), in.begin() + long(nc + nj), in.end());
  check_types(call_in, call, "call");
  return call.out_avals();
}
std::vector<Array> custom_jvp_impl(Arrays in, const Params& params, SourceLoc) {
  size_t nc = count(params, "num_consts"), nj = count(params, "num_jvp_consts");
  std::vector<Array> args = concat({in.subspan(0, nc), in.subspan(nc + nj)});
  return eval_program(sub(params, "call"), args);
}
std::vector<Array> custom_jvp_jvp(Arrays x, Arrays t, Arrays outs, const Params& params, SourceLoc loc) {
  size_t nc = count(params, "num_consts"), nj = count(params, "num_jvp_consts");
  reject_closure_tangents(t, nc + nj, "custom_jvp", loc);
  std::vector<Array> ts = tangents_or_zeros(x, t, nc + nj, loc);
  std::vector<Array> in = concat({x.subspan(nc, nj), x.subspan(nc + nj), ts});
  std::vector<Array> r = eval_program(sub(params, "jvp"), in);
  return std::vector<Array>(r.begin() + long(outs.size()), r.end());
}

// custom_jvp_call: batched call and JVP programs; tangents batch like their primals, and every
// output (and output tangent) is batched at 0 so the two programs agree.
std::vector<BatchedArray> custom_jvp_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  size_t nc = count(params, "num_consts"), nj = count(params, "num_jvp_consts");
  const Program &call = sub(params, "call"), &jvp = sub(params, "jvp");
  Materialised m = materialise(a, loc);
  Materialised consts = m.slice(0, nc), jvp_consts = m.slice(nc, nj), args = m.slice(nc + nj, a.size() - nc - nj);
  BatchedSub c = batch_sub(call, consts.inputs() + args.inputs(), all(call.outvars.size(), OutBatch::at_zero), n, loc);
  BatchedSub j = batch_sub(jvp, jvp_consts.inputs() + args.inputs() + args.inputs(), all(jvp.outvars.size(), OutBatch::at_zero), n, loc);
  std::vector<Array> operands = concat({c.consts, consts.values, j.consts, jvp_consts.values, args.values});
  Params p{{"call", c.program},
           {"jvp", j.program},
           {"num_consts", int64_t(c.consts.size() + nc)},
           {"num_jvp_consts", int64_t(j.consts.size() + nj)}};
  return at_dims(bind(Prim::custom_jvp_call, operands, p, loc), c.out_dims);
}

const Registration custom_jvp_call_registration = PrimitiveRules{
    .prim = Prim::custom_jvp_call,
    .shape = &custom_jvp_shape,
    .impl = &custom_jvp_impl,
    .jvp = &custom_jvp_jvp,
    .batch = &custom_jvp_batch,
    .eager_only = true,  // jit inlines its `call` program
};

// ---- custom_vjp_call --------------------------------------------------------------------------------
std::vector<AbstractArray> custom_vjp_shape(std::span<const AbstractArray> in, const Params& params) {
  const Program& fwd = sub(params, "fwd");
  size_t nf = count(params, "num_consts"), nb = count(params, "num_bwd_consts"), no = count(params, "num_outs");
  if (in.size() < nf + nb) rule_error(ErrorKind::Type, "too few operands");
  std::vector<AbstractArray> fwd_in(in.begin(), in.begin() + long(nf));
  fwd_in.insert(fwd_in.end(), in.begin() + long(nf + nb), in.end());
  check_types(fwd_in, fwd, "fwd");
  std::vector<AbstractArray> outs = fwd.out_avals();
  outs.resize(no);
  return outs;
}
std::vector<Array> custom_vjp_impl(Arrays in, const Params& params, SourceLoc) {
  size_t nf = count(params, "num_consts"), nb = count(params, "num_bwd_consts"), no = count(params, "num_outs");
  std::vector<Array> r = eval_program(sub(params, "fwd"), concat({in.subspan(0, nf), in.subspan(nf + nb)}));
  r.resize(no);
  return r;
}
std::vector<Array> custom_vjp_jvp(Arrays x, Arrays t, Arrays, const Params& params, SourceLoc loc) {
  size_t nf = count(params, "num_consts"), nb = count(params, "num_bwd_consts"), no = count(params, "num_outs");
  reject_closure_tangents(t, nf + nb, "custom_vjp", loc);
  std::vector<Array> r = eval_program(sub(params, "fwd"), concat({x.subspan(0, nf), x.subspan(nf + nb)}));
  std::vector<Array> residuals(r.begin() + long(no), r.end());
  std::vector<Array> ts = tangents_or_zeros(x, t, nf + nb, loc);
  Params lp{{"fwd", params.get<ProgramRef>("fwd")},
            {"bwd", params.get<ProgramRef>("bwd")},
            {"num_outs", int64_t(no)},
            {"num_bwd_consts", int64_t(nb)},
            {"num_res", int64_t(residuals.size())}};
  return bind(Prim::custom_vjp_linear, concat({x.subspan(nf, nb), residuals, ts}), lp, loc);
}

/// The batched bwd program: (bwd consts, residuals, output cotangents) -> argument cotangents,
/// batched at 0 for mapped arguments and summed over the batch for unmapped ones.
BatchedSub batch_bwd(const Program& bwd, const SubInputs& bwd_consts_and_residuals, std::span<const AbstractArray> outs,
                     const std::vector<int64_t>& arg_dims, int64_t n, SourceLoc loc) {
  std::vector<OutBatch> want;
  for (int64_t d : arg_dims) want.push_back(d == kNotMapped ? OutBatch::unbatched : OutBatch::at_zero);
  return batch_sub(bwd, bwd_consts_and_residuals + batched_at_zero(outs, n), want, n, loc);
}

// custom_vjp_call: fwd batched with everything it returns (outputs, residuals) at 0; bwd batched
// for those residuals and cotangents.
std::vector<BatchedArray> custom_vjp_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  size_t nf = count(params, "num_consts"), nb = count(params, "num_bwd_consts"), no = count(params, "num_outs");
  const Program &fwd = sub(params, "fwd"), &bwd = sub(params, "bwd");
  Materialised m = materialise(a, loc);
  Materialised consts = m.slice(0, nf), bwd_consts = m.slice(nf, nb), args = m.slice(nf + nb, a.size() - nf - nb);
  BatchedSub f = batch_sub(fwd, consts.inputs() + args.inputs(), all(fwd.outvars.size(), OutBatch::at_zero), n, loc);
  const std::vector<AbstractArray> fwd_out = fwd.out_avals();  // per example: outputs, then residuals
  const std::span<const AbstractArray> outs = std::span(fwd_out).first(no), residuals = std::span(fwd_out).subspan(no);
  BatchedSub b = batch_bwd(bwd, bwd_consts.inputs() + batched_at_zero(residuals, n), outs, args.dims, n, loc);
  std::vector<Array> operands = concat({f.consts, consts.values, b.consts, bwd_consts.values, args.values});
  Params p{{"fwd", f.program},
           {"bwd", b.program},
           {"num_outs", int64_t(no)},
           {"num_consts", int64_t(f.consts.size() + nf)},
           {"num_bwd_consts", int64_t(b.consts.size() + nb)}};
  return at_dims(bind(Prim::custom_vjp_call, operands, p, loc), std::vector<int64_t>(no, 0));
}

const Registration custom_vjp_call_registration = PrimitiveRules{
    .prim = Prim::custom_vjp_call,
    .shape = &custom_vjp_shape,
    .impl = &custom_vjp_impl,
    .jvp = &custom_vjp_jvp,
    .batch = &custom_vjp_batch,
    .eager_only = true,  // jit inlines its `fwd` program
};

// ---- custom_vjp_linear: linear in its tangents, for fixed residuals ------------------------------------
std::vector<AbstractArray> custom_vjp_linear_shape(std::span<const AbstractArray> in, const Params& params) {
  std::vector<AbstractArray> outs = sub(params, "fwd").out_avals();
  outs.resize(count(params, "num_outs"));
  const Program& bwd = sub(params, "bwd");
  size_t nb = count(params, "num_bwd_consts"), nr = count(params, "num_res");
  if (in.size() < nb + nr || bwd.out_avals().size() != in.size() - nb - nr)
    rule_error(ErrorKind::Type, "the bwd program returns " + std::to_string(bwd.out_avals().size()) +
                                    " cotangents for " + std::to_string(in.size() - nb - nr) + " arguments");
  return outs;
}
std::vector<Array> custom_vjp_linear_impl(Arrays, const Params&, SourceLoc loc) {
  throw TypeError("TypeError: forward-mode differentiation (jvp, jacfwd) of a custom_vjp function at " + loc.str() +
                  " is not supported: its rule only gives the VJP. Use fx::custom_jvp, or reverse mode.");
}
// Linear in its tangents for fixed residuals: the JVP applies the same map to their tangents.
std::vector<Array> custom_vjp_linear_jvp(Arrays x, Arrays t, Arrays, const Params& params, SourceLoc loc) {
  size_t nb = count(params, "num_bwd_consts"), nr = count(params, "num_res");
  reject_closure_tangents(t, nb + nr, "custom_vjp (through its residuals)", loc);
  std::vector<Array> in(x.begin(), x.begin() + long(nb + nr));
  std::vector<Array> ts = tangents_or_zeros(x, t, nb + nr, loc);
  in.insert(in.end(), ts.begin(), ts.end());
  return bind(Prim::custom_vjp_linear, in, params, loc);
}
std::vector<Array> custom_vjp_linear_transpose(Arrays cts, std::span<const LinearArg> a, const Params& params,
                                               SourceLoc loc) {
  size_t nb = count(params, "num_bwd_consts"), nr = count(params, "num_res");
  for (size_t i = 0; i < nb + nr; ++i)
    if (a[i].linear) throw TypeError("TypeError: transpose of custom_vjp_linear: a residual is linear");
  std::vector<Array> in;
  for (size_t i = 0; i < nb + nr; ++i) in.push_back(a[i].value);
  const Program& fwd = sub(params, "fwd");
  std::vector<AbstractArray> out_avals = fwd.out_avals();
  for (size_t i = 0; i < cts.size(); ++i) in.push_back(is_zero(cts[i]) ? zeros_for(out_avals[i], loc) : cts[i]);
  std::vector<Array> g = eval_program(sub(params, "bwd"), in);
  std::vector<Array> out(nb + nr);
  out.insert(out.end(), g.begin(), g.end());
  return out;
}

// custom_vjp_linear: its fwd only gives the output types (now batched at 0); its bwd is batched
// for the residuals and tangents it is given.
std::vector<BatchedArray> custom_vjp_linear_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  size_t nb = count(params, "num_bwd_consts"), nr = count(params, "num_res"), no = count(params, "num_outs");
  const Program &fwd = sub(params, "fwd"), &bwd = sub(params, "bwd");
  Materialised m = materialise(a, loc);
  Materialised known = m.slice(0, nb + nr), tangents = m.slice(nb + nr, a.size() - nb - nr);
  SubInputs example;
  for (int32_t v : fwd.invars) {
    example.avals.push_back(fwd.type(v));
    example.dims.push_back(kNotMapped);
  }
  BatchedSub f = batch_sub(fwd, example, all(fwd.outvars.size(), OutBatch::at_zero), n, loc);
  const std::vector<AbstractArray> fwd_out = fwd.out_avals();
  BatchedSub b = batch_bwd(bwd, known.inputs(), std::span(fwd_out).first(no), tangents.dims, n, loc);
  std::vector<Array> operands = concat({b.consts, known.values, tangents.values});
  Params p{{"fwd", f.program},
           {"bwd", b.program},
           {"num_outs", int64_t(no)},
           {"num_bwd_consts", int64_t(b.consts.size() + nb)},
           {"num_res", int64_t(nr)}};
  return at_dims(bind(Prim::custom_vjp_linear, operands, p, loc), std::vector<int64_t>(no, 0));
}

const Registration custom_vjp_linear_registration = PrimitiveRules{
    .prim = Prim::custom_vjp_linear,
    .shape = &custom_vjp_linear_shape,
    .impl = &custom_vjp_linear_impl,
    .jvp = &custom_vjp_linear_jvp,
    .transpose = &custom_vjp_linear_transpose,
    .linear = kLinearByParams,  // the operands after num_bwd_consts + num_res
    .batch = &custom_vjp_linear_batch,
    .eager_only = true,  // only ever transposed; jit refuses it with a CompileError
};

// ---- checkpoint ---------------------------------------------------------------------------------------
std::vector<AbstractArray> checkpoint_shape(std::span<const AbstractArray> in, const Params& params) {
  const Program& p = sub(params, "program");
  check_types(in, p, "checkpointed");
  return p.out_avals();
}
std::vector<Array> checkpoint_impl(Arrays in, const Params& params, SourceLoc) {
  return eval_program(sub(params, "program"), in);
}
std::vector<Array> checkpoint_jvp(Arrays x, Arrays t, Arrays outs, const Params& params, SourceLoc loc) {
  const Program& p = sub(params, "program");
  std::vector<bool> nonzero;
  std::vector<Array> in(x.begin(), x.end());
  for (size_t i = 0; i < x.size(); ++i) {
    nonzero.push_back(!is_zero(t[i]));
    if (!is_zero(t[i])) in.push_back(t[i]);
  }
  auto j = std::make_shared<const Program>(jvp_program(p, nonzero));
  std::vector<Array> r = bind(Prim::checkpoint, in, Params{{"program", ProgramRef(j)}, {"num_consts", int64_t(0)}}, loc);
  return std::vector<Array>(r.begin() + long(outs.size()), r.end());
}
// In a linear program a checkpoint holds a JVP program: linear in its tangent inputs, given the
// primal inputs. Its transpose recomputes the primal part from those inputs (the remat) and
// transposes the tangent part.
std::vector<Array> checkpoint_transpose(Arrays cts, std::span<const LinearArg> a, const Params& params, SourceLoc) {
  const Program& j = sub(params, "program");
  std::vector<bool> linear;
  std::vector<Array> known;
  for (const LinearArg& arg : a) {
    linear.push_back(arg.linear);
    if (!arg.linear) known.push_back(arg.value);
  }
  std::vector<Array> g = transpose_eval(j, linear, known, cts);
  std::vector<Array> out;
  size_t k = 0;
  for (const LinearArg& arg : a) out.push_back(arg.linear ? g[k++] : Array());
  return out;
}

// checkpoint: the batched program, its outputs' batch dims as vmap_eval leaves them.
std::vector<BatchedArray> checkpoint_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  const Program& program = sub(params, "program");
  Materialised m = materialise(a, loc);
  BatchedSub c = batch_sub(program, m.inputs(), all(program.outvars.size(), OutBatch::as_is), n, loc);
  std::vector<Array> operands = concat({c.consts, m.values});
  Params p{{"program", c.program}, {"num_consts", int64_t(c.consts.size() + count(params, "num_consts"))}};
  return at_dims(bind(Prim::checkpoint, operands, p, loc), c.out_dims);
}

const Registration checkpoint_registration = PrimitiveRules{
    .prim = Prim::checkpoint,
    .shape = &checkpoint_shape,
    .impl = &checkpoint_impl,
    .jvp = &checkpoint_jvp,
    .transpose = &checkpoint_transpose,
    .linear = kLinearByParams,  // the tangent inputs of the JVP program it holds
    .batch = &checkpoint_batch,
    .eager_only = true,  // jit inlines its program
};

}  // namespace
}  // namespace fluxion
