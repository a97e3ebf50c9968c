// Which mesh axes a value of a shard_map body may differ along (JAX's check_rep): an input laid out
// by P("data") differs between devices of different "data" index and is the same along every axis
// its spec does not name; psum, pmean, pmax, pmin and all_gather over an axis make their result
// the same along it; axis_index, ppermute, psum_scatter and all_to_all over an axis make it differ
// along it; every other eqn's results differ along the union of its operands' axes (control flow
// is followed into its sub-programs, loops to a fixpoint). fx::shard_map checks each output laid
// out replicated along an axis against this: an output claimed the same on every device that may
// differ is an error naming the output, the axis and the user's line.
#pragma once
#include <vector>

#include "ir/program.h"
#include "ir/sharding.h"

namespace fluxion {

/// For each output of `body`, the axes among `mesh_axes` it may differ along, given the axes each
/// input differs along (`in`, one list per invar). Sub-programs whose layout is not known are
/// taken conservatively (their results differ along the union of their operands and of every axis
/// a collective inside them introduces).
std::vector<AxisList> varying_axes(const Program& body, const std::vector<AxisList>& in, const AxisList& mesh_axes);

}  // namespace fluxion
