// The shard_map primitive's params, read and written in one place, and the hook its eager
// evaluation runs through (prims/shard_map.cpp has the primitive's block).
//
//   shard_map[body, mesh_axes, mesh_devices, mesh_platform, in_specs, out_specs] ops...
//
// `body` is the per-device program (closed: what it captured is a leading operand, replicated),
// run on every device of the mesh with each mesh axis bound; operand i is a global array laid out
// by in_specs[i], whose block is body's invar i; output j is the global array whose blocks are
// the devices' results j, laid out by out_specs[j]. Running it on devices is the runtime's: the
// user floor (transforms/shard_map.cpp) registers the runner as the library loads.
#pragma once
#include <span>
#include <vector>

#include "ir/array.h"
#include "ir/program.h"
#include "ir/sharding.h"

namespace fluxion {

/// A shard_map eqn's mesh and specs.
struct ShardMapSpecs {
  Mesh mesh;
  std::vector<PartitionSpec> in, out;
};
ShardMapSpecs shard_map_specs(const Params& params);

/// The params that name a mesh (mesh_axes, mesh_devices, mesh_platform).
Params mesh_params(const Mesh& mesh);
/// The mesh those params name.
Mesh mesh_of(const Params& params);

/// Binds a shard_map of `body` over `ops` (recorded into the innermost trace, or run now).
/// Values the body captured become leading operands, replicated (P()).
std::vector<Array> bind_shard_map(std::span<const Array> ops, Program body, const Mesh& mesh,
                                  std::vector<PartitionSpec> in, std::vector<PartitionSpec> out, SourceLoc loc);

/// Runs a shard_map eqn on concrete operands: the impl of Prim::shard_map.
using ShardMapRunner = std::vector<Array> (*)(std::span<const Array> ops, const Params& params, SourceLoc loc);
void set_shard_map_runner(ShardMapRunner runner);

/// axis_index over a mesh axis of size n, bound without the trace-time environment.
Array mesh_axis_index(const std::string& axis, int64_t n, SourceLoc loc);
/// psum over a mesh axis of size n, likewise.
Array mesh_psum(const Array& x, const std::string& axis, int64_t n, SourceLoc loc);

}  // namespace fluxion
