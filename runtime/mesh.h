// Running on a mesh (ir/sharding.h): placing arrays' blocks on the mesh's devices, and launching
// one program per device of this process with a communicator per mesh axis -- what fx::shard_map,
// sharded jit and fx::pmap (a 1-d mesh) run through (docs/distributed.md "Meshes and shardings").
//
// The communicator of mesh axis a, for a device, is the group of devices that differ from it only
// in their coordinate along a (a row or a column of a 2-d mesh): a collective over "model" meets
// the devices of the same "data" index. Inside one process a group is a runtime::LocalGroup of
// the devices' threads. Across processes (after fx::distributed::initialize) a group that spans
// every process, each holding the same number of its devices in a block (the global device list is
// process-major, so a 1-d mesh over fx::devices() is one), goes through MPI as pmap's axis does;
// other layouts across processes are a DeviceError for now.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/array.h"
#include "ir/sharding.h"
#include "ir/spmd.h"
#include "runtime/device_workers.h"

namespace fluxion::runtime {

/// Checks that a mesh can be used here: its shape holds its devices, every device exists and
/// appears once, and its axis names are distinct identifiers (ValueError / DeviceError naming
/// `what` and `loc`).
void check_mesh(const Mesh& mesh, std::string_view what, SourceLoc loc);

/// The positions in mesh.devices of this process's devices, in mesh order.
std::vector<int64_t> local_positions(const Mesh& mesh);

/// devices[k]'s block of x laid out by `s`: x's own shard when x already is laid out so, else a
/// copy of that block, committed to the device. (x is a global value: the same in every process.)
Array block_of(const Array& x, const NamedSharding& s, int64_t k);

/// A sharded Array of type `global` from this process's blocks (in local_positions order).
Array sharded_array(const AbstractArray& global, NamedSharding s, std::vector<Array> blocks);

/// x laid out by `s` (fx::device_put(x, sharding)): x when it already is, else a sharded array of
/// copies of its blocks. Errors (a spec of the wrong rank, an axis not in the mesh, an uneven
/// split) name `what` and `loc`.
Array put_sharded(const Array& x, const NamedSharding& s, std::string_view what, SourceLoc loc);

/// The per-device groups of a mesh for one launch: member(a, i) is the communicator of mesh axis
/// a for the i-th local device.
class MeshGroups {
 public:
  MeshGroups(const Mesh& mesh, std::span<const int64_t> local, std::string_view what, SourceLoc loc);
  ~MeshGroups();
  Communicator& member(size_t axis, size_t local_index);
  /// Wakes every member of every group waiting in a collective; they fail with `why`.
  void abort(const std::string& why);

 private:
  struct Group;
  std::vector<std::unique_ptr<Group>> groups_;
  std::vector<std::vector<Communicator*>> members_;  // [axis][local index]
};

/// Runs task(i) for every local device i of the mesh (`local`: local_positions): at once, each on
/// its own thread with every mesh axis's communicator bound (AxisBinding by axis_key(name)), when
/// `meets` (the program holds a collective); otherwise on the pool's threads in any order. A
/// failed collective or a raising device ends the launch with a DeviceError naming `what`, the
/// device and `loc`.
void run_on_mesh(const Mesh& mesh, std::span<const int64_t> local, ShardTask task, bool meets, const std::string& what,
                 SourceLoc loc);

}  // namespace fluxion::runtime
