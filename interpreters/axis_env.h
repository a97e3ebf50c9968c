// Named axes while tracing. fx::pmap and fx::vmap given an axis name bind the name to the size of
// the axis they map over while they trace the user's function; collectives (api/collectives.h)
// look the name up there -- an unbound name is an error at trace time, naming the axis and the
// user's line -- and record the size in their params, so a recorded program is self-contained.
//
// While vmap_eval batches a program, batched_axis_name() is the name of the axis it batches (empty
// for an unnamed vmap): the batching rules of collectives over that axis turn them into
// reductions over the batch dimension (JAX's semantics), and vmap_eval sends such eqns to their
// rule even when no operand is batched (axis_index has none; psum of an unbatched value is n·x).
//
// A future shard_map over a 2-D mesh binds one name per mesh axis the same way
// (docs/architecture.md "Meshes and axis names").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/program.h"

namespace fluxion {

/// Binds `name` to `size` while alive (on this thread; the innermost binding of a name wins).
class AxisEnvScope {
 public:
  AxisEnvScope(std::string name, int64_t size);
  ~AxisEnvScope();
  AxisEnvScope(const AxisEnvScope&) = delete;
  AxisEnvScope& operator=(const AxisEnvScope&) = delete;
};
/// The size bound to `name`, or nullopt.
std::optional<int64_t> bound_axis_size(std::string_view name);
/// The bound names, innermost last (for error messages).
std::vector<std::string> bound_axis_names();

/// Sets the axis vmap_eval is batching while alive ("" for an unnamed vmap).
class BatchedAxisScope {
 public:
  explicit BatchedAxisScope(std::string name);
  ~BatchedAxisScope();
  BatchedAxisScope(const BatchedAxisScope&) = delete;
  BatchedAxisScope& operator=(const BatchedAxisScope&) = delete;

 private:
  std::string saved_;
};
const std::string& batched_axis_name();
/// Whether `e` is a collective over the axis being batched (its `axis_name` param).
bool over_batched_axis(const Eqn& e);
bool over_batched_axis(const Params& params);

}  // namespace fluxion
