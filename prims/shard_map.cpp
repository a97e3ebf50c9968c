// shard_map (a per-device program over a mesh) and sharding_constraint (a layout fixed for the
// partitioner), one block each (prims/shard_map.h has shard_map's params; docs/distributed.md the
// whole story).
//
// shard_map's derivatives and batching follow cond's pattern (prims/cond.cpp): the body is
// transformed with the program transforms and bound as a new shard_map. Their semantics are those
// of named vmaps -- a mesh axis of size n behaves as a vmap of size n with that name, an output
// laid out replicated along an axis is member 0's value (check_rep makes every member's the same)
// -- so:
//  - JVP: the shard_map of the body's JVP, tangents laid out as their primals;
//  - transpose: the shard_map of the body's transpose, where the cotangent of an output that is
//    replicated along axes A goes to the devices at index 0 along A only, and the cotangent of an
//    operand that is replicated along axes B is summed over B (the transpose of a broadcast);
//  - batching: the shard_map of the batched body, the batch a leading dimension no axis splits.
#include "prims/shard_map.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "ir/spmd.h"
#include "interpreters/simplify.h"
#include "lax/lax.h"
#include "prims/registry.h"
#include "prims/subprograms.h"

namespace fluxion {

namespace {
std::mutex g_runner_mu;
ShardMapRunner g_runner = nullptr;
}  // namespace

void set_shard_map_runner(ShardMapRunner runner) {
  std::lock_guard<std::mutex> lock(g_runner_mu);
  g_runner = runner;
}

Params mesh_params(const Mesh& mesh) {
  const Platform p = mesh.devices.empty() ? Platform::cpu : mesh.devices[0].platform;
  return Params{{"mesh_axes", mesh_axes_text(mesh)},
                {"mesh_devices", mesh_device_ids(mesh)},
                {"mesh_platform", std::string(platform_name(p))}};
}

Mesh mesh_of(const Params& params) {
  return mesh_from_params(params.get<std::string>("mesh_axes"), params.get_ints("mesh_devices"),
                          params.get<std::string>("mesh_platform"));
}

ShardMapSpecs shard_map_specs(const Params& params) {
  return ShardMapSpecs{mesh_of(params), parse_specs(params.get<std::string>("in_specs")),
                       parse_specs(params.get<std::string>("out_specs"))};
}

std::vector<Array> bind_shard_map(std::span<const Array> ops, Program body, const Mesh& mesh,
                                  std::vector<PartitionSpec> in, std::vector<PartitionSpec> out, SourceLoc loc) {
  std::vector<Array> captured;
  body = hoist_consts(simplify(std::move(body)), captured);
  std::vector<Array> operands = captured;
  operands.insert(operands.end(), ops.begin(), ops.end());
  in.insert(in.begin(), captured.size(), PartitionSpec{});
  Params params = mesh_params(mesh);
  params.set("body", subprograms::share(std::move(body)));
  params.set("in_specs", specs_text(in));
  params.set("out_specs", specs_text(out));
  return bind(Prim::shard_map, operands, params, loc);
}

namespace {
Params axis_params(const std::string& axis, int64_t n) {
  return Params{{"axis_name", axis}, {"axis_size", n}, {"axis_key", axis_key(axis)}};
}
}  // namespace

Array mesh_axis_index(const std::string& axis, int64_t n, SourceLoc loc) {
  return bind1(Prim::axis_index, {}, axis_params(axis, n), loc);
}
Array mesh_psum(const Array& x, const std::string& axis, int64_t n, SourceLoc loc) {
  return bind1(Prim::psum, {x}, axis_params(axis, n), loc);
}

namespace {
using namespace subprograms;

// ---- shard_map ------------------------------------------------------------------------------------

std::vector<AbstractArray> shard_map_shape(std::span<const AbstractArray> in, const Params& params) {
  const Program& body = sub(params, "body");
  ShardMapSpecs s;
  try {
    s = shard_map_specs(params);
  } catch (const ValueError& e) {
    rule_error(ErrorKind::Value, e.what());
  }
  if (s.in.size() != in.size() || s.out.size() != body.outvars.size())
    rule_error(ErrorKind::Value, "has " + std::to_string(s.in.size()) + " in_specs and " + std::to_string(s.out.size()) +
                                     " out_specs for " + std::to_string(in.size()) + " operands and " +
                                     std::to_string(body.outvars.size()) + " outputs");
  int64_t devices = 1;
  for (int64_t n : s.mesh.shape) devices *= n;
  if (devices != s.mesh.size()) rule_error(ErrorKind::Value, "the mesh's shape does not match its device count");
  std::vector<AbstractArray> blocks;
  for (size_t i = 0; i < in.size(); ++i) {
    if (const auto p = layout_problem(s.mesh, s.in[i], in[i])) rule_error(p->kind, "operand " + std::to_string(i) + ": " + p->detail);
    AbstractArray b = in[i];
    b.shape = block_shape(s.mesh, s.in[i], in[i].shape);
    blocks.push_back(b);
  }
  check_inputs(blocks, body, "the body");
  std::vector<AbstractArray> outs = body.out_avals();
  for (size_t j = 0; j < outs.size(); ++j) {
    outs[j].shape = global_shape(s.mesh, s.out[j], outs[j].shape);
    if (const auto p = layout_problem(s.mesh, s.out[j], outs[j])) rule_error(p->kind, "output " + std::to_string(j) + ": " + p->detail);
    outs[j].weak_type = false;
  }
  return outs;
}

std::vector<Array> shard_map_impl(Arrays in, const Params& params, SourceLoc loc) {
  ShardMapRunner runner;
  {
    std::lock_guard<std::mutex> lock(g_runner_mu);
    runner = g_runner;
  }
  if (!runner) throw DeviceError("DeviceError: shard_map at " + loc.str() + ": no runner is registered (internal)");
  return runner(in, params, loc);
}

// Tangents are laid out as their primals; the new shard_map recomputes the body's primal part
// (the original, bound by jvp_eval, gives the primal outputs), as cond's JVP does.
std::vector<Array> shard_map_jvp(Arrays x, Arrays t, Arrays outs, const Params& params, SourceLoc loc) {
  const ShardMapSpecs s = shard_map_specs(params);
  std::vector<bool> nonzero;
  std::vector<Array> ops(x.begin(), x.end());
  std::vector<PartitionSpec> in = s.in;
  for (size_t i = 0; i < x.size(); ++i) {
    nonzero.push_back(!is_zero(t[i]) && has_tangent_space(x[i].dtype()));
    if (!nonzero.back()) continue;
    ops.push_back(t[i]);
    in.push_back(s.in[i]);
  }
  std::vector<bool> nz;
  Program j = jvp_program(sub(params, "body"), nonzero, &nz);
  const size_t no = outs.size();
  std::vector<size_t> keep;
  std::vector<PartitionSpec> out;
  for (size_t k = 0; k < no; ++k)
    if (nz[k] && has_tangent_space(outs[k].dtype())) {
      keep.push_back(no + k);
      out.push_back(s.out[k]);
    }
  std::vector<Array> tangents(no);
  if (keep.empty()) return tangents;
  j = drop_effects(reorder(std::move(j), range(0, j.invars.size()), keep));
  std::vector<Array> r = bind_shard_map(ops, std::move(j), s.mesh, std::move(in), std::move(out), loc);
  size_t m = 0;
  for (size_t k = 0; k < no; ++k)
    if (nz[k] && has_tangent_space(outs[k].dtype())) tangents[k] = r[m++];
  return tangents;
}

// The cotangent of an output replicated along `axes`, kept on the devices at index 0 along them.
Array on_first_members(const Array& ct, const Mesh& mesh, const AxisList& axes, SourceLoc loc) {
  if (axes.empty()) return ct;
  Array first;
  for (const std::string& a : axes) {
    Array at0 = bind1(Prim::eq, {mesh_axis_index(a, mesh.axis_size(a), loc), literal_array(Literal::of_int(0, DType::int32))},
                      {}, loc);
    first = first.valid() ? bind1(Prim::and_, {first, at0}, {}, loc) : at0;
  }
  Array keep = lax::convert(first, ct.dtype());
  return bind1(Prim::mul, {ct, keep}, {}, loc);
}

// The transposed body, traced on blocks: (known operands..., nonzero cotangents...) -> cotangents
// of the linear operands.
Program transposed_body(const Program& body, const ShardMapSpecs& s, std::span<const LinearArg> a, Arrays cts,
                        const std::vector<AbstractArray>& op_types, size_t nk, SourceLoc loc) {
  TraceScope scope;
  std::vector<Array> in;
  for (const AbstractArray& ty : op_types) in.push_back(scope.new_input(ty));
  std::vector<bool> linear;
  for (const LinearArg& x : a) linear.push_back(x.linear);
  std::vector<Array> body_cts;
  size_t k = nk;
  for (size_t j = 0; j < cts.size(); ++j)
    body_cts.push_back(is_zero(cts[j]) ? Array() : on_first_members(in[k++], s.mesh, replicated_axes(s.mesh, s.out[j]), loc));
  std::vector<Array> g = transpose_eval(body, linear, std::span(in).first(nk), body_cts);
  std::vector<Array> outs;
  size_t m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].linear) continue;
    Array ct = materialised(g[m++], body.type(body.invars[i]), loc);
    for (const std::string& ax : replicated_axes(s.mesh, s.in[i])) ct = mesh_psum(ct, ax, s.mesh.axis_size(ax), loc);
    outs.push_back(ct);
  }
  return scope.finish(outs);
}

std::vector<Array> shard_map_transpose(Arrays cts, std::span<const LinearArg> a, const Params& params, SourceLoc loc) {
  const ShardMapSpecs s = shard_map_specs(params);
  const Program& body = sub(params, "body");
  std::vector<Array> ops;
  std::vector<AbstractArray> op_types;
  std::vector<PartitionSpec> in, out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].linear) {
      out.push_back(s.in[i]);
      continue;
    }
    ops.push_back(a[i].value);
    op_types.push_back(body.type(body.invars[i]));
    in.push_back(s.in[i]);
  }
  const size_t nk = ops.size();
  for (size_t j = 0; j < cts.size(); ++j)
    if (!is_zero(cts[j])) {
      ops.push_back(cts[j]);
      op_types.push_back(body.out_avals()[j]);
      in.push_back(s.out[j]);
    }
  Program t = transposed_body(body, s, a, cts, op_types, nk, loc);
  std::vector<Array> g = bind_shard_map(ops, std::move(t), s.mesh, std::move(in), std::move(out), loc);
  std::vector<Array> result;
  size_t m = 0;
  for (const LinearArg& x : a) result.push_back(x.linear ? g[m++] : Array());
  return result;
}

// A leading dimension that no axis splits.
PartitionSpec with_batch(const PartitionSpec& p, size_t rank) {
  PartitionSpec r;
  r.dims.push_back({});
  for (size_t d = 0; d < rank; ++d) r.dims.push_back(p.dim(d));
  return r;
}

std::vector<BatchedArray> shard_map_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  const ShardMapSpecs s = shard_map_specs(params);
  const Program& body = sub(params, "body");
  Operands ops = at_front(a, loc);
  std::vector<AbstractArray> blocks;
  std::vector<PartitionSpec> in;
  for (size_t i = 0; i < ops.size(); ++i) {
    AbstractArray b = body.type(body.invars[i]);
    const bool batched = ops.dims[i] != kNotMapped;
    if (batched) b.shape.insert(0, n);
    blocks.push_back(b);
    in.push_back(batched ? with_batch(s.in[i], size_t(a[i].value.ndim() - 1)) : s.in[i]);
  }
  const std::vector<bool> out_batched = batched_outputs(body, blocks, ops.dims, n);
  Closed built = trace_sub(blocks, [&](Arrays inputs) {
    std::vector<BatchedArray> r = call_batched(body, inputs, ops.dims, n);
    std::vector<Array> outs;
    for (size_t j = 0; j < r.size(); ++j) outs.push_back(out_batched[j] ? batch_at(r[j], 0, n, loc) : r[j].value);
    return outs;
  });
  std::vector<PartitionSpec> out;
  const std::vector<AbstractArray> body_outs = body.out_avals();
  for (size_t j = 0; j < body_outs.size(); ++j)
    out.push_back(out_batched[j] ? with_batch(s.out[j], body_outs[j].shape.size()) : s.out[j]);
  // The values the batched body captured lead, replicated (bind_shard_map hoists the program's own).
  std::vector<Array> operands = built.consts;
  operands.insert(operands.end(), ops.values.begin(), ops.values.end());
  in.insert(in.begin(), built.consts.size(), PartitionSpec{});
  std::vector<Array> r = bind_shard_map(operands, std::move(built.program), s.mesh, std::move(in), std::move(out), loc);
  std::vector<BatchedArray> outs;
  for (size_t j = 0; j < r.size(); ++j) outs.push_back({r[j], out_batched[j] ? 0 : kNotMapped});
  return outs;
}

const Registration shard_map_registration = PrimitiveRules{
    .prim = Prim::shard_map,
    .shape = &shard_map_shape,
    .impl = &shard_map_impl,
    .jvp = &shard_map_jvp,
    .transpose = &shard_map_transpose,
    .linear = kLinearByParams,  // in the operands its body is linear in
    .batch = &shard_map_batch,
    .eager_only = true,  // jit runs it through the runner: its body is compiled per device
};

// ---- sharding_constraint --------------------------------------------------------------------------

PartitionSpec constraint_spec(const Params& params) { return parse_specs(params.get<std::string>("spec")).at(0); }

std::vector<AbstractArray> constraint_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand, got " + std::to_string(in.size()));
  if (const auto p = layout_problem(mesh_of(params), constraint_spec(params), in[0])) rule_error(p->kind, p->detail);
  return {in[0]};
}

void constraint_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  std::memcpy(out[0].data, in[0].data, in[0].aval->nbytes());
}

Array constrained(const Array& x, const Params& params, SourceLoc loc) {
  return bind1(Prim::sharding_constraint, {x}, params, loc);
}
std::vector<Array> constraint_jvp(Arrays, Arrays t, Arrays, const Params& params, SourceLoc loc) {
  return {constrained(t[0], params, loc)};
}
std::vector<Array> constraint_transpose(Arrays cts, std::span<const LinearArg>, const Params& params, SourceLoc loc) {
  return {constrained(cts[0], params, loc)};
}
std::vector<BatchedArray> constraint_batch(BatchedArgs a, const Params& params, int64_t, SourceLoc loc) {
  Array x = move_batch_dim(a[0].value, a[0].dim, 0, loc);
  Params p = params;
  p.set("spec", specs_text({with_batch(constraint_spec(params), size_t(x.ndim() - 1))}));
  return {{constrained(x, p, loc), 0}};
}

// sharding_constraint[mesh, spec] x: x, whose layout the partitioner of a sharded jit must make
// `spec` here (fx::with_sharding_constraint). Outside sharded jit it changes nothing. It has no
// sharding rule: it is not computed per device but read by the partitioner itself, which moves
// its operand to `spec` there (interpreters/partition.cpp, Partitioner::constrain).
const Registration sharding_constraint_registration = PrimitiveRules{
    .prim = Prim::sharding_constraint,
    .shape = &constraint_shape,
    .kernel = &constraint_kernel,
    .jvp = &constraint_jvp,
    .transpose = &constraint_transpose,
    .linear = kLinear,
    .batch = &constraint_batch,
    .eager_only = true,  // an unsharded jit drops it (interpreters/partition.h)
};

}  // namespace
}  // namespace fluxion
