#include "transforms/shard_map.h"

#include <algorithm>

#include "interpreters/replication.h"
#include "memory/buffer.h"
#include "runtime/mesh.h"

namespace fluxion::shard_map_detail {

namespace {
std::string at(SourceLoc loc) { return "shard_map at " + loc.str() + ": "; }

// Whether running p meets the other devices: a collective (an eqn with an axis key), at any depth.
bool meets_other_devices(const Program& p) {
  for (const Eqn& e : p.eqns)
    if (e.params.has("axis_key") || any_sub_program(e, meets_other_devices)) return true;
  return false;
}
}  // namespace

std::vector<PartitionSpec> leaf_in_specs(const InSpecs& in, const detail::ArgLeaves& flat, SourceLoc loc) {
  const size_t nargs = flat.start.size() - 1;
  if (in.specs.size() != 1 && in.specs.size() != nargs)
    throw ValueError("ValueError: " + at(loc) + "in_specs has " + std::to_string(in.specs.size()) + " entries for " +
                     std::to_string(nargs) + " arguments");
  std::vector<PartitionSpec> specs;
  for (size_t a = 0; a < nargs; ++a) {
    const SpecTree& s = in.specs.size() == 1 ? in.specs[0] : in.specs[a];
    const size_t leaves = flat.start[a + 1] - flat.start[a];
    if (const auto* each = std::get_if<LeafSpecs>(&s)) {
      if (each->specs.size() != leaves)
        throw ValueError("ValueError: " + at(loc) + "leaf_specs gives " + std::to_string(each->specs.size()) +
                         " specs for argument " + std::to_string(a) + ", which has " + std::to_string(leaves) + " leaves");
      specs.insert(specs.end(), each->specs.begin(), each->specs.end());
    } else {
      specs.insert(specs.end(), leaves, std::get<PartitionSpec>(s));
    }
  }
  return specs;
}

std::vector<AbstractArray> block_avals(const Mesh& mesh, const std::vector<PartitionSpec>& specs,
                                       std::span<const Array> leaves, SourceLoc loc) {
  runtime::check_mesh(mesh, "shard_map", loc);
  std::vector<AbstractArray> blocks;
  for (size_t i = 0; i < leaves.size(); ++i) {
    check_layout(mesh, specs[i], leaves[i].aval(), "shard_map", loc, "argument leaf " + std::to_string(i) + ":");
    AbstractArray b = leaves[i].aval();
    b.shape = block_shape(mesh, specs[i], b.shape);
    blocks.push_back(b);
  }
  return blocks;
}

MeshAxesScope::MeshAxesScope(const Mesh& mesh) {
  for (size_t a = 0; a < mesh.shape.size(); ++a)
    scopes_.push_back(std::make_unique<AxisEnvScope>(mesh.axis_names[a], mesh.shape[a]));
}
MeshAxesScope::~MeshAxesScope() {
  while (!scopes_.empty()) scopes_.pop_back();  // innermost first
}

namespace {
std::vector<PartitionSpec> leaf_out_specs(const OutSpecs& out, size_t nout, SourceLoc loc) {
  std::vector<PartitionSpec> specs;
  if (out.specs.size() == 1 && std::holds_alternative<PartitionSpec>(out.specs[0]))
    return std::vector<PartitionSpec>(nout, std::get<PartitionSpec>(out.specs[0]));
  for (const SpecTree& s : out.specs) {
    if (const auto* each = std::get_if<LeafSpecs>(&s))
      specs.insert(specs.end(), each->specs.begin(), each->specs.end());
    else
      specs.push_back(std::get<PartitionSpec>(s));
  }
  if (specs.size() != nout)
    throw ValueError("ValueError: " + at(loc) + "out_specs gives " + std::to_string(specs.size()) + " specs for " +
                     std::to_string(nout) + " output leaves");
  return specs;
}

// check_rep: an output laid out replicated along an axis must not differ along it.
void check_replication(const Program& body, const Mesh& mesh, const std::vector<PartitionSpec>& in,
                       const std::vector<PartitionSpec>& out, SourceLoc loc) {
  std::vector<AxisList> varying;
  for (const PartitionSpec& s : in) varying.push_back(s.axes());
  const std::vector<AxisList> outs = varying_axes(body, varying, mesh.axis_names);
  for (size_t j = 0; j < out.size(); ++j)
    for (const std::string& a : replicated_axes(mesh, out[j]))
      if (std::find(outs[j].begin(), outs[j].end(), a) != outs[j].end())
        throw ValueError("ValueError: " + at(loc) + "output " + std::to_string(j) + " (" + body.out_avals()[j].str() +
                         " per device) is laid out by " + out[j].str() + ", which claims it is the same on every device "
                         "along mesh axis '" + a + "', but it may differ along '" + a + "'; reduce it over '" + a +
                         "' first (fx::psum, fx::pmean, fx::all_gather), name '" + a + "' in its out spec, or pass "
                         "fx::check_rep(false)");
}
}  // namespace

std::shared_ptr<const Traced> finish(Program body, std::shared_ptr<const void> out_like, const Mesh& mesh,
                                     std::vector<PartitionSpec> in, const OutSpecs& out, bool check, SourceLoc loc) {
  auto t = std::make_shared<Traced>();
  t->out = leaf_out_specs(out, body.outvars.size(), loc);
  const std::vector<AbstractArray> outs = body.out_avals();
  for (size_t j = 0; j < outs.size(); ++j) {
    AbstractArray global = outs[j];
    global.shape = global_shape(mesh, t->out[j], global.shape);
    check_layout(mesh, t->out[j], global, "shard_map", loc, "output " + std::to_string(j) + ":");
  }
  if (check) {
    std::vector<PartitionSpec> with_captured(body.constvars.size(), PartitionSpec{});
    with_captured.insert(with_captured.end(), in.begin(), in.end());
    Program closed = body;
    std::vector<Array> ignored;
    check_replication(hoist_consts(std::move(closed), ignored), mesh, with_captured, t->out, loc);
  }
  body = hoist_consts(std::move(body), t->captured);
  for (const Array& c : t->captured) t->reusable = t->reusable && !c.is_tracer();
  in.insert(in.begin(), t->captured.size(), PartitionSpec{});
  t->in = std::move(in);
  t->body = std::make_shared<const Program>(std::move(body));
  t->out_like = std::move(out_like);
  return t;
}

// ---- running on the mesh ----------------------------------------------------------------------------

struct Prepared {
  MeshRef mesh;
  std::vector<NamedSharding> in, out;
  std::vector<AbstractArray> out_global;
  std::vector<int64_t> local;
  std::shared_ptr<const jit_detail::Compiled> compiled;
  bool meets = false;
};

namespace {

std::shared_ptr<const Prepared> prepare(jit_detail::JitCache& jit, const std::string& key, const Program& body,
                                        const Mesh& mesh, const std::vector<PartitionSpec>& in,
                                        const std::vector<PartitionSpec>& out) {
  auto p = std::make_shared<Prepared>();
  p->mesh = std::make_shared<const Mesh>(mesh);
  for (const PartitionSpec& s : in) p->in.emplace_back(p->mesh, s);
  const std::vector<AbstractArray> outs = body.out_avals();
  for (size_t j = 0; j < out.size(); ++j) {
    p->out.emplace_back(p->mesh, out[j]);
    AbstractArray g = outs[j];
    g.shape = global_shape(mesh, out[j], g.shape);
    p->out_global.push_back(g);
  }
  p->local = runtime::local_positions(mesh);
  // The devices run at once: each kernel gets its share of the cores.
  runtime::CompileTarget target = runtime::default_target();
  target.num_threads = std::max(1, target.num_threads / std::max<int>(1, int(p->local.size())));
  p->compiled = jit_detail::compile_signature(jit, key, body, nullptr, target);
  p->meets = meets_other_devices(p->compiled->program);
  return p;
}

std::vector<Array> launch(const Prepared& p, std::span<const Array> ops, SourceLoc loc) {
  const jit_detail::Compiled& c = *p.compiled;
  const size_t n = p.local.size(), per = ops.size() + c.consts.size();
  std::vector<Array> args(n * per);
  std::vector<std::vector<Array>> results(n);
  auto task = [&](size_t i) {
    Array* in = args.data() + i * per;
    for (size_t j = 0; j < ops.size(); ++j) in[j] = runtime::block_of(ops[j], p.in[j], p.local[i]);
    std::copy(c.consts.begin(), c.consts.end(), in + ops.size());
    results[i] = c.executable->run(std::span<const Array>(in, per));
    for (Array& o : results[i]) o.impl()->buffer->committed = true;
  };
  runtime::run_on_mesh(*p.mesh, p.local, runtime::ShardTask(task), p.meets, "shard_map", loc);
  std::vector<Array> outs;
  for (size_t j = 0; j < p.out.size(); ++j) {
    std::vector<Array> blocks(n);
    for (size_t i = 0; i < n; ++i) blocks[i] = std::move(results[i][j]);
    outs.push_back(runtime::sharded_array(p.out_global[j], p.out[j], std::move(blocks)));
  }
  return outs;
}

}  // namespace

std::vector<Array> call(Cache& cache, const std::string& key, const Traced& t, const Mesh& mesh,
                        std::span<const Array> leaves, SourceLoc loc) {
  std::vector<Array> ops = t.captured;
  ops.insert(ops.end(), leaves.begin(), leaves.end());
  if (is_tracing()) return bind_shard_map(ops, *t.body, mesh, t.in, t.out, loc);
  std::shared_ptr<const Prepared> p;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (auto it = cache.prepared.find(&t); it != cache.prepared.end()) p = it->second;
  }
  if (!p) {
    p = prepare(cache.jit, key, *t.body, mesh, t.in, t.out);
    std::lock_guard<std::mutex> lock(cache.mutex);
    p = cache.prepared.try_emplace(&t, p).first->second;
  }
  return launch(*p, ops, loc);
}

// ---- the primitive's runner (prims/shard_map.h) --------------------------------------------------------

namespace {

// shard_map eqns evaluated op by op (jit's programs that hold one, derivatives run eagerly): their
// bodies prepared once, by the body's address while the entry holds it, else by its text.
struct RunnerCache {
  std::mutex mutex;
  std::unordered_map<const Program*, std::pair<ProgramRef, std::shared_ptr<const Prepared>>> by_address;
  std::unordered_map<std::string, std::shared_ptr<const Prepared>> by_text;
  jit_detail::JitCache jit;
};
RunnerCache& runner_cache() {
  static auto* c = new RunnerCache;
  return *c;
}

std::vector<Array> run_eqn(std::span<const Array> ops, const Params& params, SourceLoc loc) {
  RunnerCache& rc = runner_cache();
  const ProgramRef& body = params.get<ProgramRef>("body");
  const std::string layout = params.get<std::string>("mesh_axes") + "|" + params.get<std::string>("in_specs") + "|" +
                             params.get<std::string>("out_specs");
  std::shared_ptr<const Prepared> p;
  {
    std::lock_guard<std::mutex> lock(rc.mutex);
    if (auto it = rc.by_address.find(body.get()); it != rc.by_address.end()) p = it->second.second;
  }
  if (!p) {
    const ShardMapSpecs s = shard_map_specs(params);
    std::string ids;
    for (int64_t id : params.get_ints("mesh_devices")) ids += std::to_string(id) + ",";
    const std::string text = layout + "|" + ids + "|" + body->str();
    {
      std::lock_guard<std::mutex> lock(rc.mutex);
      if (auto it = rc.by_text.find(text); it != rc.by_text.end()) p = it->second;
    }
    if (!p) p = prepare(rc.jit, text, *body, s.mesh, s.in, s.out);
    std::lock_guard<std::mutex> lock(rc.mutex);
    if (rc.by_address.size() > 1024) rc.by_address.clear();  // bodies of programs long gone
    rc.by_text.try_emplace(text, p);
    rc.by_address.try_emplace(body.get(), body, p);
  }
  return launch(*p, ops, loc);
}

const bool registered = [] {
  set_shard_map_runner(&run_eqn);
  return true;
}();

}  // namespace

}  // namespace fluxion::shard_map_detail
