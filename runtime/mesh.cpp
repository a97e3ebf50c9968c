#include "runtime/mesh.h"

#include <algorithm>
#include <cstring>

#include "ir/spmd.h"
#include "memory/buffer.h"
#include "runtime/collectives_local.h"
#include "runtime/devices.h"
#include "runtime/distributed.h"

namespace fluxion::runtime {

namespace {
std::string where(std::string_view what, SourceLoc loc) {
  return std::string(what) + (loc.known() ? " at " + loc.str() : std::string()) + ": ";
}

bool is_identifier(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}
}  // namespace

void check_mesh(const Mesh& mesh, std::string_view what, SourceLoc loc) {
  if (mesh.shape.size() != mesh.axis_names.size())
    throw ValueError("ValueError: " + where(what, loc) + "the mesh has " + std::to_string(mesh.shape.size()) +
                     " dimensions but " + std::to_string(mesh.axis_names.size()) + " axis names");
  int64_t n = 1;
  for (size_t a = 0; a < mesh.shape.size(); ++a) {
    if (mesh.shape[a] < 1)
      throw ValueError("ValueError: " + where(what, loc) + "mesh axis '" + mesh.axis_names[a] + "' has size " +
                       std::to_string(mesh.shape[a]));
    if (!is_identifier(mesh.axis_names[a]))
      throw ValueError("ValueError: " + where(what, loc) + "the mesh axis name '" + mesh.axis_names[a] +
                       "' is not an identifier (letters, digits, _)");
    for (size_t b = 0; b < a; ++b)
      if (mesh.axis_names[b] == mesh.axis_names[a])
        throw ValueError("ValueError: " + where(what, loc) + "the mesh names the axis '" + mesh.axis_names[a] + "' twice");
    n *= mesh.shape[a];
  }
  if (n != mesh.size())
    throw ValueError("ValueError: " + where(what, loc) + "a mesh of shape " + Shape(mesh.shape).str() + " holds " +
                     std::to_string(n) + " devices, given " + std::to_string(mesh.size()));
  for (size_t k = 0; k < mesh.devices.size(); ++k)
    for (size_t j = 0; j < k; ++j)
      if (mesh.devices[j] == mesh.devices[k])
        throw ValueError("ValueError: " + where(what, loc) + "the mesh holds " + mesh.devices[k].str() + " twice");
}

std::vector<int64_t> local_positions(const Mesh& mesh) {
  std::vector<int64_t> local;
  for (size_t k = 0; k < mesh.devices.size(); ++k)
    if (is_local(mesh.devices[k])) local.push_back(int64_t(k));
  return local;
}

namespace {
// x's shard on devices[k] when x is laid out by `s` already (same layout, shard on that device).
const Array* own_shard(const Array& x, const NamedSharding& s, int64_t k) {
  if (!x.is_sharded() || !(x.impl()->sharding->layout == s)) return nullptr;
  const Device& d = s.mesh->devices[size_t(k)];
  for (const Array& shard : x.impl()->sharding->shards)
    if (shard.impl()->buffer && shard.impl()->buffer->device == d) return &shard;
  return nullptr;
}

Array committed_array(AbstractArray aval, std::shared_ptr<Buffer> buffer, const Device& d) {
  buffer->device = d;
  buffer->committed = true;
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = std::move(aval);
  impl->buffer = std::move(buffer);
  return Array(std::move(impl));
}
}  // namespace

Array block_of(const Array& x, const NamedSharding& s, int64_t k) {
  if (const Array* mine = own_shard(x, s, k)) return *mine;
  const Mesh& mesh = *s.mesh;
  const Device& d = mesh.devices[size_t(k)];
  AbstractArray block = x.aval();
  block.shape = block_shape(mesh, s.spec, x.shape());
  // The whole array (nothing split): shared, not copied -- CPU devices share host memory and
  // programs do not write their inputs.
  if (block.shape == x.shape() && x.impl()->buffer && d.memory_kind() == MemoryKind::host &&
      x.impl()->buffer->memory == MemoryKind::host) {
    if (x.impl()->buffer->committed && x.impl()->buffer->device == d) return x;
    return committed_array(block, Buffer::wrap(x.impl()->buffer->data, block.nbytes(), x.impl()->buffer), d);
  }
  const std::vector<int64_t> idx = block_index(mesh, s.spec, k, x.shape().size());
  std::vector<int64_t> start(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) start[i] = idx[i] * block.shape[i];
  const char* src = static_cast<const char*>(x.data());
  // A leading block of a contiguous array is a view (the usual batch split).
  bool contiguous = x.impl()->buffer && x.impl()->buffer->memory == MemoryKind::host && d.memory_kind() == MemoryKind::host;
  for (size_t i = 1; i < idx.size() && contiguous; ++i) contiguous = block.shape[i] == x.shape()[i];
  if (contiguous && !idx.empty()) {
    const size_t bytes = block.nbytes();
    return committed_array(block, Buffer::wrap(const_cast<char*>(src) + size_t(idx[0]) * bytes, bytes, x.impl()->buffer), d);
  }
  std::shared_ptr<Buffer> host = Buffer::allocate(block.nbytes());
  copy_block_out(src, x.shape(), host->data, block.shape, start, itemsize(x.dtype()));
  if (d.memory_kind() == MemoryKind::host) return committed_array(block, std::move(host), d);
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = block;
  impl->buffer = std::move(host);
  return device_put(Array(std::move(impl)), d);
}

Array sharded_array(const AbstractArray& global, NamedSharding s, std::vector<Array> blocks) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = global;
  impl->aval.weak_type = false;
  impl->sharding = std::make_shared<Sharding>();
  impl->sharding->layout = std::move(s);
  impl->sharding->shards = std::move(blocks);
  return Array(std::move(impl));
}

Array put_sharded(const Array& x, const NamedSharding& s, std::string_view what, SourceLoc loc) {
  if (!x.valid()) throw ValueError("ValueError: " + where(what, loc) + "an empty Array handle");
  if (x.is_tracer()) return x;
  check_mesh(*s.mesh, what, loc);
  check_layout(*s.mesh, s.spec, x.aval(), what, loc);
  if (x.is_sharded() && x.impl()->sharding->layout == s) return x;
  for (const Device& d : s.mesh->devices)
    if (!is_local(d) && (d.platform != Platform::cpu || d.id >= int(fluxion::devices("cpu").size())))
      check_local(d, what, loc);
  std::vector<Array> blocks;
  for (int64_t k : local_positions(*s.mesh)) blocks.push_back(block_of(x, s, k));
  return sharded_array(x.aval(), s, std::move(blocks));
}

// ---- the groups of a launch -------------------------------------------------------------------------

struct MeshGroups::Group {
  LocalGroup local;
  Group(int n, int process_index, int processes) : local(n, process_index, processes) {}
};

MeshGroups::MeshGroups(const Mesh& mesh, std::span<const int64_t> local, std::string_view what, SourceLoc loc) {
  const int procs = distributed::process_count(), me = distributed::process_index();
  members_.resize(mesh.shape.size());
  for (size_t a = 0; a < mesh.shape.size(); ++a) {
    // Lines along axis a: the local devices keyed by their other coordinates.
    std::vector<std::pair<std::vector<int64_t>, std::vector<size_t>>> lines;
    for (size_t i = 0; i < local.size(); ++i) {
      std::vector<int64_t> key = mesh.coords(local[i]);
      key[a] = -1;
      auto it = std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == key; });
      if (it == lines.end()) it = lines.insert(lines.end(), {key, {}});
      it->second.push_back(i);
    }
    members_[a].resize(local.size());
    const int64_t n = mesh.shape[a];
    for (const auto& [key, members] : lines) {
      const int mine = int(members.size());
      // Within this process, or spanning every process in equal process-major blocks, with one
      // such line per process (its leader then talks to the others over MPI's world).
      const bool here = mine == n;
      const bool across = !here && procs > 1 && int64_t(mine) * procs == n && lines.size() == 1 &&
                          mesh.coords(local[members[0]])[a] == int64_t(me) * mine;
      if (!here && !across)
        throw DeviceError("DeviceError: " + where(what, loc) + "mesh axis '" + mesh.axis_names[a] +
                          "' groups devices of several processes in a layout not supported yet (each group must be "
                          "within one process, or span every process in equal blocks, one group per process)");
      groups_.push_back(std::make_unique<Group>(mine, here ? 0 : me, here ? 1 : procs));
      for (size_t r = 0; r < members.size(); ++r) members_[a][members[r]] = &groups_.back()->local.member(int(r));
    }
  }
}

MeshGroups::~MeshGroups() = default;

Communicator& MeshGroups::member(size_t axis, size_t local_index) { return *members_[axis][local_index]; }

void MeshGroups::abort(const std::string& why) {
  for (auto& g : groups_) g->local.abort(why);
}

void run_on_mesh(const Mesh& mesh, std::span<const int64_t> local, ShardTask task, bool meets, const std::string& what,
                 SourceLoc loc) {
  std::vector<Device> devs;
  for (int64_t k : local) devs.push_back(mesh.devices[size_t(k)]);
  if (!meets) return run_on_devices(devs, task, Schedule::any_thread);
  for (const Device& d : devs)
    if (d.platform != Platform::cpu)
      throw DeviceError("DeviceError: " + where(what, loc) + "the program meets the other devices in collectives, and "
                        "collectives over " + std::string(platform_name(d.platform)) +
                        " devices (NCCL) are not written yet; " + d.str() + " is one of the mesh's devices");
  MeshGroups groups(mesh, local, what, loc);
  std::vector<int64_t> keys;
  for (const std::string& a : mesh.axis_names) keys.push_back(axis_key(a));
  auto meet = [&](size_t i) {
    try {
      std::vector<std::unique_ptr<AxisBinding>> bound;
      for (size_t a = 0; a < keys.size(); ++a) bound.push_back(std::make_unique<AxisBinding>(keys[a], &groups.member(a, i)));
      task(i);
      if (std::optional<std::string> why = take_collective_failure()) {
        groups.abort(*why);
        throw DeviceError("DeviceError: " + where(what, loc) + "on " + devs[i].str() + ": " + *why);
      }
    } catch (...) {
      groups.abort("another device of the mesh raised an error");
      throw;
    }
  };
  run_on_devices(devs, ShardTask(meet), Schedule::together);
}

}  // namespace fluxion::runtime
