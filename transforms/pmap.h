// fx::pmap(f, axis_name, in_axes, out_axes, devices): SPMD over devices (jax.pmap).
//
//   auto step = fx::pmap([](const fx::Array& x) { return fx::psum(x, "i"); }, "i");
//   fx::Array out = step(fx::reshape(fx::arange(8.f), {4, 2}));   // 4 devices: out is sharded
//   out.shards();                                                  // one per device
//
// The mapped axis of every mapped argument is split over the devices (its size must be the
// number of devices this process drives); f is traced once per signature on one device's types
// with the axis name bound (collectives: api/collectives.h), compiled once (transforms/jit_passes
// and the runtime's compile cache, as fx::jit does), and run on every device's worker thread at
// once, the collectives meeting through the communicators of a 1-d mesh over the devices -- the
// engine fx::shard_map runs on (runtime/mesh.h; across processes through MPI,
// runtime/distributed.h). Results stay on their devices as sharded Arrays laid out over the 1-d
// mesh of the local devices, NamedSharding(mesh, P at the out axis) (ir/array.h Sharding):
// printing or to_vector gathers them, and passing one back into a pmap over the same devices
// uses its shards as they are.
//
// Inside another transformation (grad of a pmapped loss, jit, vmap), pmap is traced as the vmap
// with the same axis name: the same values, computed in the enclosing computation rather than
// spread over devices (JAX keeps a pmap primitive there; docs/distributed.md says what that
// would take).
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/sharding.h"
#include "runtime/device_workers.h"
#include "runtime/devices.h"
#include "transforms/jit.h"
#include "transforms/vmap_api.h"

namespace fluxion {

namespace pmap_detail {

/// This process's part of a pmap over `devices` (all devices when empty), checked: the local
/// devices in axis order and the axis size; the 1-d mesh of every device the axis spans (what the
/// devices' communicators are made from: runtime/mesh.h), this process's positions in it, and the
/// 1-d mesh of the local devices (what the results are laid out over: pmap's results are this
/// process's rows, as in JAX).
struct Placement {
  std::vector<Device> local;
  int64_t axis_size = 0;
  MeshRef mesh, local_mesh;
  std::vector<int64_t> positions;
};
Placement place(const std::vector<Device>& devices, const std::string& axis, SourceLoc loc);

/// One compiled signature of a pmap and how it launches. Everything here follows from the call
/// signature (the argument trees and types, and the process count), so a cached call skips
/// placement and planning.
struct Signature {
  std::shared_ptr<const jit_detail::Compiled> compiled;
  Placement at;
  std::vector<int64_t> dims;  // each leaf's mapped axis, or kNotMapped
  std::vector<int64_t> out_at;  // each output's out_axes position, or kNotMapped (fx::none)
  runtime::Schedule schedule = runtime::Schedule::together;  // any_thread when no device meets another
};

/// A pmapped callable's signatures (shared by its copies).
struct Cache {
  jit_detail::JitCache jit;  // what was compiled, counted
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const Signature>> signatures;
};
std::shared_ptr<const Signature> lookup(Cache& cache, const std::string& key);

/// Compiles the traced per-device program for `at.local` devices running at once, and checks
/// out_axes against its outputs.
std::shared_ptr<const Signature> compile(Cache& cache, const std::string& key, Program program,
                                         std::shared_ptr<const void> out_like, Placement at, std::vector<int64_t> dims,
                                         const OutAxes& out, SourceLoc loc);

/// Runs a compiled pmap: gives each local device its part of the leaves (mapped: its slice, or its
/// shard of a sharded leaf; unmapped: all of it), launches every device, and returns each output
/// leaf placed by out_axes (sharded, or device 0's for none).
std::vector<Array> run(const Signature& s, std::span<const Array> leaves, const std::string& axis, SourceLoc loc);

/// The part of a call's signature that is not in its arguments: the process count (the axis
/// spans every process's devices).
void append_processes(std::string& key);

/// Across processes: every process must run the same signature; DeviceError naming what differs.
void check_processes_agree(const std::string& signature, const std::string& axis, SourceLoc loc);

}  // namespace pmap_detail

template <class F>
class Pmapped {
 public:
  Pmapped(F f, std::string axis, InAxes in, OutAxes out, std::vector<Device> devices, SourceLoc loc)
      : f_(std::move(f)), axis_(std::move(axis)), in_(std::move(in)), out_(std::move(out)),
        devices_(std::move(devices)), loc_(loc), cache_(std::make_shared<pmap_detail::Cache>()) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    if (is_tracing()) return detail::vmap_impl(f_, in_, out_, std::nullopt, loc_, axis_)(args...);
    using R = std::decay_t<decltype(std::apply(f_, std::tuple<Args...>{args...}))>;
    detail::ArgLeaves flat = detail::flatten_args(args...);
    std::string key;
    ((key += typeid(Args).name(), key += '|', jit_detail::signature(args, key)), ...);
    pmap_detail::append_processes(key);
    pmap_detail::check_processes_agree(key, axis_, loc_);
    std::shared_ptr<const pmap_detail::Signature> sig = pmap_detail::lookup(*cache_, key);
    if (!sig) {
      pmap_detail::Placement at = pmap_detail::place(devices_, axis_, loc_);
      detail::VmapPlan plan = detail::plan_vmap(flat, in_, std::nullopt, loc_);
      if (plan.axis_size != int64_t(at.local.size()))
        throw ValueError("ValueError: pmap over '" + axis_ + "' at " + loc_.str() + ": the mapped axis has size " +
                         std::to_string(plan.axis_size) + " but this process drives " + std::to_string(at.local.size()) +
                         " devices (FLUXION_CPU_DEVICES, or pmap's devices argument)");
      AxisEnvScope bound(axis_, at.axis_size);
      auto [program, out] = detail::trace_with_avals(f_, plan.example_avals, args...);
      sig = pmap_detail::compile(*cache_, key, std::move(program), jit_detail::structure_of<R>(out), std::move(at),
                                 std::move(plan.dims), out_, loc_);
    }
    return jit_detail::rebuild_results<R>(*sig->compiled, pmap_detail::run(*sig, flat.leaves, axis_, loc_));
  }

  /// How many signatures this callable compiled.
  int64_t compilations() const { return cache_->jit.count(); }

 private:
  F f_;
  std::string axis_;
  InAxes in_;
  OutAxes out_;
  std::vector<Device> devices_;
  SourceLoc loc_;
  std::shared_ptr<pmap_detail::Cache> cache_;
};

template <class F>
Pmapped<F> pmap(F f, std::string axis_name, SourceLoc loc = std::source_location::current()) {
  return Pmapped<F>(std::move(f), std::move(axis_name), in_axes(0), out_axes(0), {}, loc);
}
template <class F>
Pmapped<F> pmap(F f, std::string axis_name, InAxes in, SourceLoc loc = std::source_location::current()) {
  return Pmapped<F>(std::move(f), std::move(axis_name), std::move(in), out_axes(0), {}, loc);
}
template <class F>
Pmapped<F> pmap(F f, std::string axis_name, InAxes in, OutAxes out, SourceLoc loc = std::source_location::current()) {
  return Pmapped<F>(std::move(f), std::move(axis_name), std::move(in), std::move(out), {}, loc);
}
template <class F>
Pmapped<F> pmap(F f, std::string axis_name, InAxes in, OutAxes out, std::vector<Device> devices,
                SourceLoc loc = std::source_location::current()) {
  return Pmapped<F>(std::move(f), std::move(axis_name), std::move(in), std::move(out), std::move(devices), loc);
}

}  // namespace fluxion
