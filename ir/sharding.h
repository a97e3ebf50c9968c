// Meshes and partition specs: how one global array is laid out over devices (shared/api.md
// "Sharding"; docs/distributed.md "Meshes and shardings"). The vocabulary sits at the ir floor
// because a concrete Array carries its layout (ir/array.h `Sharding`) and the shard_map primitive
// and the partitioner (interpreters/partition.h) read it; making meshes over the process's devices,
// placing arrays and running programs on a mesh are the runtime's (runtime/mesh.h) and the user
// floor's (transforms/sharding.h).
//
// A mesh is the devices as an N-d array with a name per dimension: make_mesh({2, 2}, {"data",
// "model"}) over cpu:0..3 puts cpu:(2d + m) at coordinates (d, m). A partition spec gives, per
// dimension of an array, the mesh axes it is split over (major first) or none: P("data", none)
// splits dimension 0 into 2 blocks along "data" and keeps dimension 1 whole, so the array is
// replicated along "model". Device k then holds the block at, for every dimension, the index its
// coordinates along that dimension's axes spell (mixed radix, major first).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/error.h"
#include "ir/shape.h"
#include "memory/device.h"

namespace fluxion {

struct Buffer;
class Array;

/// One dimension's entry of a partition spec: the mesh axes it is split over, major first (empty:
/// the dimension is not split).
using AxisList = std::vector<std::string>;

/// Devices as an N-d array with a name per dimension (jax.sharding.Mesh).
struct Mesh {
  std::vector<Device> devices;  // row-major over `shape`
  std::vector<int64_t> shape;
  std::vector<std::string> axis_names;

  int64_t size() const { return int64_t(devices.size()); }
  int rank() const { return int(shape.size()); }
  /// The position of the named axis, or -1.
  int axis(std::string_view name) const;
  /// The size of the named axis (1 for a name the mesh does not have).
  int64_t axis_size(std::string_view name) const;
  /// The coordinates of devices[k].
  std::vector<int64_t> coords(int64_t k) const;
  /// Where d sits in `devices`, or -1.
  int64_t position(const Device& d) const;
  /// "Mesh('data': 2, 'model': 2)".
  std::string str() const;
  friend bool operator==(const Mesh&, const Mesh&) = default;
};
using MeshRef = std::shared_ptr<const Mesh>;

/// Per dimension of an array, the mesh axes it is split over (jax.sharding.PartitionSpec). Missing
/// trailing dimensions are not split.
struct PartitionSpec {
  std::vector<AxisList> dims;
  /// "P('data', None)", "P(('data', 'model'),)", "P()".
  std::string str() const;
  /// Every axis the spec names, in order of appearance.
  AxisList axes() const;
  /// The entry of dimension d (empty beyond the spec's length).
  const AxisList& dim(size_t d) const;
  friend bool operator==(const PartitionSpec& a, const PartitionSpec& b);
};

/// A mesh and a partition spec: where every block of an array lives (jax.sharding.NamedSharding).
struct NamedSharding {
  MeshRef mesh;
  PartitionSpec spec;
  NamedSharding() = default;
  NamedSharding(const Mesh& m, PartitionSpec s) : mesh(std::make_shared<const Mesh>(m)), spec(std::move(s)) {}
  NamedSharding(MeshRef m, PartitionSpec s) : mesh(std::move(m)), spec(std::move(s)) {}
  /// "NamedSharding(Mesh('data': 2), P('data',))".
  std::string str() const;
  friend bool operator==(const NamedSharding& a, const NamedSharding& b);
};

/// Why `spec` cannot lay out an array of type `aval` over `mesh`, or nullopt when it can: more
/// entries than the rank (Shape), an axis the mesh does not have (Value, naming the mesh's axes),
/// an axis named twice (Value), a dimension its blocks do not divide (Shape, naming the dimension,
/// its size, the axes and their sizes).
struct LayoutProblem {
  ErrorKind kind;
  std::string detail;
};
std::optional<LayoutProblem> layout_problem(const Mesh& mesh, const PartitionSpec& spec, const AbstractArray& aval);
/// layout_problem as an error: "ShapeError: <op> at <loc>: <what> <detail>".
void check_layout(const Mesh& mesh, const PartitionSpec& spec, const AbstractArray& aval, std::string_view op,
                  SourceLoc loc, std::string_view what = "");

/// How many blocks dimension d is cut into.
int64_t blocks_along(const Mesh& mesh, const PartitionSpec& spec, size_t d);
/// The shape of one device's block.
Shape block_shape(const Mesh& mesh, const PartitionSpec& spec, const Shape& global);
/// The global shape whose blocks have shape `block`.
Shape global_shape(const Mesh& mesh, const PartitionSpec& spec, const Shape& block);
/// The block index of devices[k] along every dimension (rank entries).
std::vector<int64_t> block_index(const Mesh& mesh, const PartitionSpec& spec, int64_t k, size_t rank);
/// The mesh axes the spec does not name: the array is the same on the devices that differ only
/// there.
AxisList replicated_axes(const Mesh& mesh, const PartitionSpec& spec);

/// Copies a block out of, or into, a row-major array of type `global` at the block's element
/// offsets `start` (one per dimension).
void copy_block_out(const void* global, const Shape& global_shape, void* block, const Shape& block_shape,
                    const std::vector<int64_t>& start, size_t itemsize);
void copy_block_in(void* global, const Shape& global_shape, const void* block, const Shape& block_shape,
                   const std::vector<int64_t>& start, size_t itemsize);

/// The specs as a param value ("P(data,None) P()": dims split by ',', axes of one dim by '+',
/// specs by ' ') and back; the mesh likewise ("data=2,model=2" and the devices' ids).
std::string specs_text(const std::vector<PartitionSpec>& specs);
std::vector<PartitionSpec> parse_specs(std::string_view text);
std::string mesh_axes_text(const Mesh& mesh);
std::vector<int64_t> mesh_device_ids(const Mesh& mesh);
Mesh mesh_from_params(std::string_view axes_text, const std::vector<int64_t>& ids, std::string_view platform);

}  // namespace fluxion
