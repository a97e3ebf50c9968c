// Collectives over a named axis (jax.lax names; shared/api.md "Devices, pmap and collectives").
// They run inside fx::pmap, where the axis spans devices, or inside fx::vmap given
// fx::axis_name, where they become reductions over the batch -- the same values either way. An
// axis name that no enclosing pmap/vmap binds is a ValueError at trace time naming the axis and
// the caller's line. Semantics per primitive: prims/collectives.cpp; the whole story:
// docs/distributed.md.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/elementwise.h"
#include "ir/array.h"

namespace fluxion {

/// The sum over the axis, on every member.
Array psum(const Array& x, const std::string& axis_name, FLUXION_LOC);
/// The mean over the axis (floating x).
Array pmean(const Array& x, const std::string& axis_name, FLUXION_LOC);
/// The elementwise maximum / minimum over the axis.
Array pmax(const Array& x, const std::string& axis_name, FLUXION_LOC);
Array pmin(const Array& x, const std::string& axis_name, FLUXION_LOC);
/// Every member's x, stacked along a new dimension `axis` (tiled: concatenated along `axis`).
Array all_gather(const Array& x, const std::string& axis_name, int64_t axis = 0, bool tiled = false, FLUXION_LOC);
/// The psum, of which member r keeps block r along `scatter_dimension` (which has the axis size
/// and disappears; tiled: a multiple of it).
Array psum_scatter(const Array& x, const std::string& axis_name, int64_t scatter_dimension = 0, bool tiled = false,
                   FLUXION_LOC);
/// Member dst receives member src's x for each {src, dst}; members that are no destination
/// receive zeros.
Array ppermute(const Array& x, const std::string& axis_name, const std::vector<std::pair<int64_t, int64_t>>& perm,
               FLUXION_LOC);
/// x is cut along split_axis (of the axis size) into a piece per member; member r receives piece r
/// of every member, stacked along a new dimension concat_axis.
Array all_to_all(const Array& x, const std::string& axis_name, int64_t split_axis, int64_t concat_axis, FLUXION_LOC);
/// This member's position along the axis (int32[]).
Array axis_index(const std::string& axis_name, FLUXION_LOC);
/// The size of the axis (a trace-time constant).
int64_t axis_size(std::string_view axis_name, FLUXION_LOC);

// Over several axes at once (shard_map's mesh axes: fx::psum(x, {"data", "model"})): the group of
// every member of all of them, ranked with the first axis major. Each is the single-axis
// collectives composed -- the last axis first -- so a sum over a 2-d mesh is a sum along each of
// its axes in turn.
using AxisNames = std::vector<std::string>;
Array psum(const Array& x, std::initializer_list<std::string> axes, FLUXION_LOC);
Array psum(const Array& x, const AxisNames& axes, FLUXION_LOC);
Array pmean(const Array& x, std::initializer_list<std::string> axes, FLUXION_LOC);
Array pmean(const Array& x, const AxisNames& axes, FLUXION_LOC);
Array pmax(const Array& x, std::initializer_list<std::string> axes, FLUXION_LOC);
Array pmax(const Array& x, const AxisNames& axes, FLUXION_LOC);
Array pmin(const Array& x, std::initializer_list<std::string> axes, FLUXION_LOC);
Array pmin(const Array& x, const AxisNames& axes, FLUXION_LOC);
Array all_gather(const Array& x, std::initializer_list<std::string> axes, int64_t axis = 0, bool tiled = false, FLUXION_LOC);
Array all_gather(const Array& x, const AxisNames& axes, int64_t axis = 0, bool tiled = false, FLUXION_LOC);
Array psum_scatter(const Array& x, std::initializer_list<std::string> axes, int64_t scatter_dimension = 0,
                   bool tiled = false, FLUXION_LOC);
Array psum_scatter(const Array& x, const AxisNames& axes, int64_t scatter_dimension = 0, bool tiled = false, FLUXION_LOC);
Array axis_index(std::initializer_list<std::string> axes, FLUXION_LOC);
Array axis_index(const AxisNames& axes, FLUXION_LOC);
int64_t axis_size(std::initializer_list<std::string> axes, FLUXION_LOC);
int64_t axis_size(const AxisNames& axes, FLUXION_LOC);

}  // namespace fluxion
