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
// once (runtime/devices.h), the collectives meeting through the launch's communicator
// (runtime/collectives_local.h; across processes through MPI, runtime/distributed.h). Results
// stay on their devices as a sharded Array (ir/array.h Sharding): printing or to_vector gathers
// them, and passing one back into a pmap over the same devices uses its shards as they are.
//
// Inside another transformation (grad of a pmapped loss, jit, vmap), pmap is traced as the vmap
// with the same axis name: the same values, computed in the enclosing computation rather than
// spread over devices (JAX keeps a pmap primitive there; docs/distributed.md says what that
// would take).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/devices.h"
#include "transforms/jit.h"
#include "transforms/vmap_api.h"

namespace fluxion {

namespace pmap_detail {

/// This process's part of a pmap over `devices` (all devices when empty), checked: the local
/// devices in axis order, the axis size, and this process's first rank.
struct Placement {
  std::vector<Device> local;
  int64_t axis_size = 0;
};
Placement place(const std::vector<Device>& devices, const std::string& axis, SourceLoc loc);

/// Compiles the traced per-device program for `local_devices` devices running at once.
std::shared_ptr<const jit_detail::Compiled> compile(jit_detail::JitCache& cache, const std::string& key, Program program,
                                                    std::shared_ptr<const void> out_like, size_t local_devices);

/// Runs a compiled pmap: splits the mapped leaves (dims[i], or kNotMapped), launches every local
/// device, and returns each output leaf placed by out_axes (sharded, or device 0's for none).
std::vector<Array> run(const jit_detail::Compiled& c, std::span<const Array> leaves, const std::vector<int64_t>& dims,
                       const Placement& at, const std::string& axis, const OutAxes& out, SourceLoc loc);

/// Across processes: every process must run the same signature; DeviceError naming what differs.
void check_processes_agree(const std::string& signature, const std::string& axis, SourceLoc loc);

}  // namespace pmap_detail

template <class F>
class Pmapped {
 public:
  Pmapped(F f, std::string axis, InAxes in, OutAxes out, std::vector<Device> devices, SourceLoc loc)
      : f_(std::move(f)), axis_(std::move(axis)), in_(std::move(in)), out_(std::move(out)),
        devices_(std::move(devices)), loc_(loc), cache_(std::make_shared<jit_detail::JitCache>()) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    if (is_tracing()) return detail::vmap_impl(f_, in_, out_, std::nullopt, loc_, axis_)(args...);
    using R = std::decay_t<decltype(std::apply(f_, std::tuple<Args...>{args...}))>;
    const pmap_detail::Placement at = pmap_detail::place(devices_, axis_, loc_);
    detail::ArgLeaves flat = detail::flatten_args(args...);
    detail::VmapPlan plan = detail::plan_vmap(flat, in_, std::nullopt, loc_);
    if (plan.axis_size != int64_t(at.local.size()))
      throw ValueError("ValueError: pmap over '" + axis_ + "' at " + loc_.str() + ": the mapped axis has size " +
                       std::to_string(plan.axis_size) + " but this process drives " + std::to_string(at.local.size()) +
                       " devices (FLUXION_CPU_DEVICES, or pmap's devices argument)");
    std::string key;
    ((key += typeid(Args).name(), key += '|', jit_detail::signature(args, key)), ...);
    for (int64_t d : plan.dims) key += std::to_string(d) + ',';
    pmap_detail::check_processes_agree(key, axis_, loc_);
    std::shared_ptr<const jit_detail::Compiled> compiled = jit_detail::lookup(*cache_, key);
    if (!compiled) {
      AxisEnvScope bound(axis_, at.axis_size);
      auto [program, out] = detail::trace_with_avals(f_, plan.example_avals, args...);
      compiled = pmap_detail::compile(*cache_, key, std::move(program), jit_detail::structure_of<R>(out), at.local.size());
    }
    return jit_detail::rebuild_results<R>(*compiled, pmap_detail::run(*compiled, flat.leaves, plan.dims, at, axis_, out_, loc_));
  }

  /// How many signatures this callable compiled.
  int64_t compilations() const { return cache_->count(); }

 private:
  F f_;
  std::string axis_;
  InAxes in_;
  OutAxes out_;
  std::vector<Device> devices_;
  SourceLoc loc_;
  std::shared_ptr<jit_detail::JitCache> cache_;
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
