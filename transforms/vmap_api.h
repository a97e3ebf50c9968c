// The user API of vmap (jax.vmap):
//
//   fx::vmap(f)(xs...)                                   every argument batched along axis 0, outputs too
//   fx::vmap(f, fx::in_axes(fx::none, 0, 0))(p, xs, ys)  per argument: an axis, or fx::none (not batched)
//   fx::vmap(f, fx::in_axes(1), fx::out_axes(1))         one value applies to every argument / output
//   fx::in_axes(fx::leaf_axes({0, fx::none}), 0)         per leaf of a tree argument, in tree order
//   fx::vmap(f, fx::in_axes(fx::none), fx::out_axes(0), fx::axis_size(5))   no batched input
//   fx::vmap(f, fx::in_axes(0), fx::axis_name("i"))      names the axis: collectives over "i"
//                                                        (api/collectives.h) reduce over the batch
//
// Negative axes count from the end. The function is traced once on one example's types and the
// program is batched by vmap_eval (interpreters/vmap.h); inside another transformation the batched
// program is recorded into the outer trace, so vmap composes with grad, jit and itself.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <variant>
#include <vector>

#include "transforms/autodiff.h"
#include "interpreters/axis_env.h"
#include "transforms/make_ir.h"
#include "interpreters/vmap.h"

namespace fluxion {

/// "Not batched", for in_axes and out_axes.
struct NoneAxis {};
inline constexpr NoneAxis none{};

/// One axis or none.
class Axis {
 public:
  Axis(int axis) : axis_(axis) {}  // NOLINT
  Axis(int64_t axis) : axis_(axis) {}  // NOLINT
  Axis(NoneAxis) {}                // NOLINT
  bool mapped() const { return axis_.has_value(); }
  int64_t value() const { return *axis_; }

 private:
  std::optional<int64_t> axis_;
};

/// Per-leaf axes of a tree argument, in the order fx::tree::leaves gives its leaves.
struct LeafAxes {
  std::vector<Axis> axes;
};
inline LeafAxes leaf_axes(std::initializer_list<Axis> axes) { return LeafAxes{std::vector<Axis>(axes)}; }

using AxisSpec = std::variant<Axis, LeafAxes>;

struct InAxes {
  std::vector<AxisSpec> specs;  // one per argument, or a single one for all
};
struct OutAxes {
  std::vector<AxisSpec> specs;  // one per output leaf, or a single one for all
};
template <class... A>
InAxes in_axes(const A&... a) {
  return InAxes{{AxisSpec(a)...}};
}
template <class... A>
OutAxes out_axes(const A&... a) {
  return OutAxes{{AxisSpec(a)...}};
}
struct AxisSize {
  int64_t n;
};
inline AxisSize axis_size(int64_t n) { return AxisSize{n}; }
/// The name of the mapped axis, for collectives (JAX's vmap(axis_name=...)).
struct AxisName {
  std::string name;
};
inline AxisName axis_name(std::string name) { return AxisName{std::move(name)}; }

namespace detail {
/// Resolves in_axes against the flattened arguments: the batch dim of each leaf (normalised), the
/// batch size, and each leaf's per-example type. Errors name the argument, its axis and size.
struct VmapPlan {
  std::vector<int64_t> dims;
  int64_t axis_size = 0;
  std::vector<AbstractArray> example_avals;
};
VmapPlan plan_vmap(const ArgLeaves& args, const InAxes& in, std::optional<int64_t> size, SourceLoc loc);
/// Moves each output's batch dim to its out_axes position (broadcasting unbatched outputs).
std::vector<Array> place_outputs(std::vector<BatchedArray> outs, const OutAxes& out, int64_t size, SourceLoc loc);

/// Traces f on one example's types with the axis name (if any) bound to the batch size.
template <class F, class... Args>
auto trace_example(const F& f, const VmapPlan& plan, const std::string& name, const Args&... args) {
  if (name.empty()) return trace_with_avals(f, plan.example_avals, args...);
  AxisEnvScope bound(name, plan.axis_size);
  return trace_with_avals(f, plan.example_avals, args...);
}

template <class F>
auto vmap_impl(const F& f, const InAxes& in, const OutAxes& out, std::optional<int64_t> size, SourceLoc loc,
               std::string name = {}) {
  return [f, in, out, size, loc, name](const auto&... args) {
    ArgLeaves flat = flatten_args(args...);
    VmapPlan plan = plan_vmap(flat, in, size, loc);
    auto [program, out_like] = trace_example(f, plan, name, args...);
    std::vector<BatchedArray> batched;
    for (size_t i = 0; i < flat.leaves.size(); ++i) batched.push_back({flat.leaves[i], plan.dims[i]});
    BatchedAxisScope batching(name);
    std::vector<Array> results = place_outputs(vmap_eval(program, batched, plan.axis_size), out, plan.axis_size, loc);
    const Array* it = results.data();
    return tree::rebuild(out_like, it);
  };
}
}  // namespace detail

template <class F>
auto vmap(F f, SourceLoc loc = std::source_location::current()) {
  return detail::vmap_impl(f, in_axes(0), out_axes(0), std::nullopt, loc);
}
template <class F>
auto vmap(F f, InAxes in, SourceLoc loc = std::source_location::current()) {
  return detail::vmap_impl(f, std::move(in), out_axes(0), std::nullopt, loc);
}
template <class F>
auto vmap(F f, InAxes in, OutAxes out, SourceLoc loc = std::source_location::current()) {
  return detail::vmap_impl(f, std::move(in), std::move(out), std::nullopt, loc);
}
template <class F>
auto vmap(F f, InAxes in, OutAxes out, AxisSize n, SourceLoc loc = std::source_location::current()) {
  return detail::vmap_impl(f, std::move(in), std::move(out), n.n, loc);
}
template <class F>
auto vmap(F f, InAxes in, AxisName name, SourceLoc loc = std::source_location::current()) {
  return detail::vmap_impl(f, std::move(in), out_axes(0), std::nullopt, loc, std::move(name.name));
}
template <class F>
auto vmap(F f, InAxes in, OutAxes out, AxisName name, SourceLoc loc = std::source_location::current()) {
  return detail::vmap_impl(f, std::move(in), std::move(out), std::nullopt, loc, std::move(name.name));
}

}  // namespace fluxion
