// fx::shard_map(f, mesh, in_specs, out_specs): per-device code over a mesh (jax.shard_map).
//
//   auto mesh = fx::make_mesh({4, 2}, {"data", "model"});
//   auto g = fx::shard_map([](const fx::Array& x, const fx::Array& w) {   // x: a [B/4, D] block
//              return fx::psum(fx::matmul(x, w), "model");                // w: a [D/2, H] block
//            }, mesh, fx::in_specs(fx::P("data", fx::none), fx::P("model", fx::none)),
//            fx::out_specs(fx::P("data", fx::none)));
//   fx::Array y = g(x, w);     // one global [B, H] array, laid out over the mesh
//
// Each argument's leaves are global arrays laid out by its spec (fx::leaf_specs gives one spec per
// leaf of a tree argument); f is traced once per signature on one device's blocks with every mesh
// axis bound (collectives take mesh axis names: fx::psum(v, "data"), fx::all_gather(v, "model"),
// or a list of names, fx::psum(v, {"data", "model"})), compiled once, and run on every device of
// the mesh at once by the device workers, one communicator per mesh axis (runtime/mesh.h). Output
// leaf j is the global array whose blocks are the devices' results j, laid out by its out spec:
// an axis the spec does not name claims the result is the same along it, which is checked on the
// traced program (interpreters/replication.h; fx::check_rep(false) turns the check off, and then
// member 0's value stands for all).
//
// Inside another transformation shard_map is recorded as the shard_map primitive
// (prims/shard_map.h): grad differentiates it (its JVP and transpose are shard_maps of the body's),
// vmap batches it, and jit runs it on the mesh's devices, its body compiled per device.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "prims/shard_map.h"
#include "transforms/jit.h"
#include "transforms/sharding.h"
#include "transforms/vmap_api.h"

namespace fluxion {

/// One spec per leaf of a tree argument or output, in fx::tree::leaves order.
struct LeafSpecs {
  std::vector<PartitionSpec> specs;
};
inline LeafSpecs leaf_specs(std::vector<PartitionSpec> specs) { return LeafSpecs{std::move(specs)}; }
using SpecTree = std::variant<PartitionSpec, LeafSpecs>;

/// One spec per argument (for every leaf of it), or a single one for all.
struct InSpecs {
  std::vector<SpecTree> specs;
};
/// One spec per output leaf, or a single one for all.
struct OutSpecs {
  std::vector<SpecTree> specs;
};
template <class... S>
InSpecs in_specs(const S&... s) {
  return InSpecs{{SpecTree(s)...}};
}
template <class... S>
OutSpecs out_specs(const S&... s) {
  return OutSpecs{{SpecTree(s)...}};
}
/// Whether shard_map checks that outputs laid out replicated are the same on every device.
struct CheckRep {
  bool on = true;
};
inline CheckRep check_rep(bool on) { return CheckRep{on}; }

namespace shard_map_detail {

/// A traced signature: the closed body (captured values lead its inputs, replicated) and layouts.
struct Traced {
  ProgramRef body;
  std::vector<Array> captured;
  std::vector<PartitionSpec> in, out;  // in: the captured values' P() first
  std::shared_ptr<const void> out_like;
  bool reusable = true;  // false when it captured tracers (valid only in the trace that made it)
};
/// The compiled body and its launch plan (runtime/mesh.h), made on the first eager call.
struct Prepared;

struct Cache {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const Traced>> traced;
  std::unordered_map<const Traced*, std::shared_ptr<const Prepared>> prepared;
  jit_detail::JitCache jit;
};

/// Each leaf's spec (in_specs resolved against the argument trees); errors name shard_map and loc.
std::vector<PartitionSpec> leaf_in_specs(const InSpecs& in, const detail::ArgLeaves& flat, SourceLoc loc);
/// Each leaf's block type; checks each layout (rank, axes, even splits).
std::vector<AbstractArray> block_avals(const Mesh& mesh, const std::vector<PartitionSpec>& specs,
                                       std::span<const Array> leaves, SourceLoc loc);
/// Binds every mesh axis's name to its size while alive (the trace of the body).
class MeshAxesScope {
 public:
  explicit MeshAxesScope(const Mesh& mesh);
  ~MeshAxesScope();

 private:
  std::vector<std::unique_ptr<AxisEnvScope>> scopes_;
};
/// Checks the out specs against the traced body (their count, rank, and check_rep), closes it.
std::shared_ptr<const Traced> finish(Program body, std::shared_ptr<const void> out_like, const Mesh& mesh,
                                     std::vector<PartitionSpec> in, const OutSpecs& out, bool check, SourceLoc loc);
/// Records (inside a trace) or runs (eagerly, compiling once per signature) a traced signature.
std::vector<Array> call(Cache& cache, const std::string& key, const Traced& t, const Mesh& mesh,
                        std::span<const Array> leaves, SourceLoc loc);

}  // namespace shard_map_detail

template <class F>
class ShardMapped {
 public:
  ShardMapped(F f, Mesh mesh, InSpecs in, OutSpecs out, bool check, SourceLoc loc)
      : f_(std::move(f)), mesh_(std::move(mesh)), in_(std::move(in)), out_(std::move(out)), check_(check), loc_(loc),
        cache_(std::make_shared<shard_map_detail::Cache>()) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    using namespace shard_map_detail;
    using R = std::decay_t<decltype(std::apply(f_, std::tuple<Args...>{args...}))>;
    detail::ArgLeaves flat = detail::flatten_args(args...);
    std::string key;
    ((key += typeid(Args).name(), key += '|', jit_detail::signature(args, key)), ...);
    std::shared_ptr<const Traced> traced;
    {
      std::lock_guard<std::mutex> lock(cache_->mutex);
      if (auto it = cache_->traced.find(key); it != cache_->traced.end()) traced = it->second;
    }
    if (!traced) {
      std::vector<PartitionSpec> in = leaf_in_specs(in_, flat, loc_);
      const std::vector<AbstractArray> blocks = block_avals(mesh_, in, flat.leaves, loc_);
      MeshAxesScope bound(mesh_);
      auto [program, out] = detail::trace_with_avals(f_, blocks, args...);
      traced = finish(std::move(program), jit_detail::structure_of<R>(out), mesh_, std::move(in), out_, check_, loc_);
      if (traced->reusable) {
        std::lock_guard<std::mutex> lock(cache_->mutex);
        traced = cache_->traced.try_emplace(key, traced).first->second;
      }
    }
    const std::vector<Array> results = call(*cache_, key, *traced, mesh_, flat.leaves, loc_);
    const Array* it = results.data();
    return tree::rebuild(*static_cast<const R*>(traced->out_like.get()), it);
  }

  /// How many signatures this callable compiled (eager calls only; inside jit the jit's count).
  int64_t compilations() const { return cache_->jit.count(); }

 private:
  F f_;
  Mesh mesh_;
  InSpecs in_;
  OutSpecs out_;
  bool check_;
  SourceLoc loc_;
  std::shared_ptr<shard_map_detail::Cache> cache_;
};

/// jax.shard_map: see the top of this file.
template <class F>
ShardMapped<F> shard_map(F f, const Mesh& mesh, InSpecs in, OutSpecs out,
                         std::source_location loc = std::source_location::current()) {
  return ShardMapped<F>(std::move(f), mesh, std::move(in), std::move(out), true, loc);
}
template <class F>
ShardMapped<F> shard_map(F f, const Mesh& mesh, InSpecs in, OutSpecs out, CheckRep check,
                         std::source_location loc = std::source_location::current()) {
  return ShardMapped<F>(std::move(f), mesh, std::move(in), std::move(out), check.on, loc);
}

}  // namespace fluxion
