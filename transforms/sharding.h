// Meshes and shardings as users write them (shared/api.md "Sharding"; jax.sharding):
//
//   auto mesh = fx::make_mesh({2, 2}, {"data", "model"});        // over fx::devices()
//   auto s    = fx::NamedSharding(mesh, fx::P("data", fx::none)); // dim 0 split over "data"
//   auto xs   = fx::device_put(x, s);        // one global array; xs.sharding(), xs.shards()
//   fx::debug::visualize_sharding(xs);       // which device holds which block
//   fx::P(fx::axes("data", "model"))         // dim 0 split over both axes, "data" major
//
// The vocabulary (Mesh, PartitionSpec, NamedSharding) is ir/sharding.h's; placing blocks is the
// runtime's (runtime/mesh.h). shard_map (transforms/shard_map.h) and sharded jit
// (transforms/jit.h: fx::in_shardings, fx::out_shardings) run programs over a mesh.
#pragma once
#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "ir/array.h"
#include "ir/sharding.h"
#include "transforms/vmap_api.h"

namespace fluxion {

/// A mesh of the given shape and axis names over the first devices of fx::devices() of the
/// default device's platform (every process's, after fx::distributed::initialize); or over
/// `devices`, in order. ValueError when there are too few devices, naming the shape, the axes and
/// the devices there are, and the user's line.
Mesh make_mesh(const std::vector<int64_t>& shape, const std::vector<std::string>& axis_names,
               std::source_location loc = std::source_location::current());
Mesh make_mesh(const std::vector<int64_t>& shape, const std::vector<std::string>& axis_names,
               const std::vector<Device>& devices, std::source_location loc = std::source_location::current());

/// One entry of fx::P: an axis name, fx::none (or nullptr: the dimension is not split), or several
/// axes (fx::axes("data", "model")).
struct SpecEntry {
  AxisList axes;
  SpecEntry(const char* a) : axes{a} {}                // NOLINT
  SpecEntry(std::string a) : axes{std::move(a)} {}     // NOLINT
  SpecEntry(NoneAxis) {}                               // NOLINT
  SpecEntry(std::nullptr_t) {}                         // NOLINT
  SpecEntry(AxisList a) : axes(std::move(a)) {}        // NOLINT
};
/// Several mesh axes splitting one dimension, major first.
template <class... S>
AxisList axes(const S&... names) {
  return AxisList{std::string(names)...};
}
/// A partition spec: one entry per leading dimension (jax.sharding.PartitionSpec).
template <class... E>
PartitionSpec P(const E&... entries) {
  return PartitionSpec{{SpecEntry(entries).axes...}};
}

/// The same whole array on every device of the mesh: NamedSharding(mesh, P()).
NamedSharding replicated(const Mesh& mesh);

/// x laid out over the mesh by `s`: x when it already is, else a sharded array holding copies of
/// this process's devices' blocks. Errors (ShapeError, ValueError) name the op, the dimension or
/// axis, and the user's line.
Array device_put(const Array& x, const NamedSharding& s, std::source_location loc = std::source_location::current());

/// Inside sharded jit: the partitioner must lay `x` out by `s` here. Eagerly: device_put.
Array with_sharding_constraint(const Array& x, const NamedSharding& s,
                               std::source_location loc = std::source_location::current());

namespace debug {
/// A text picture of which device holds which block of a 1-d or 2-d array (a higher rank: one
/// line per block); a block held by several devices lists them all.
std::string sharding_picture(const Array& x);
/// Prints sharding_picture(x) to `os` (standard output by default).
void visualize_sharding(const Array& x);
void visualize_sharding(const Array& x, std::ostream& os);
}  // namespace debug

}  // namespace fluxion
