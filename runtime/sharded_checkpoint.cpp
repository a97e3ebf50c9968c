#include "runtime/sharded_checkpoint.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <set>

#include "ir/spmd.h"
#include "runtime/checkpoint_manifest.h"
#include "runtime/devices.h"
#include "runtime/distributed.h"
#include "runtime/mesh.h"
#include "train/file_io.h"
#include "train/json.h"
#include "train/sharded_io.h"

namespace fluxion::runtime {

namespace {
namespace fs = std::filesystem;
using checkpoint_io::Entries;
using checkpoint_io::Entry;

std::string join(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }

std::string shard_file(int process, int64_t generation) {
  return "shards-" + std::to_string(process) + "." + std::to_string(generation) + ".safetensors";
}

std::string ints_json(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// ---- writing ----------------------------------------------------------------------------------------

// One distinct block of a leaf: where it starts, its shape, and the mesh position of the device
// whose copy is written (-1: the leaf is not sharded).
struct BlockPlan {
  std::vector<int64_t> start;
  Shape shape;
  int64_t owner = -1;
};

std::vector<BlockPlan> distinct_blocks(const Array& a) {
  const size_t rank = a.shape().size();
  if (!a.is_sharded()) return {BlockPlan{std::vector<int64_t>(rank, 0), a.shape(), -1}};
  const NamedSharding& s = a.impl()->sharding->layout;
  const Shape b = block_shape(*s.mesh, s.spec, a.shape());
  std::vector<BlockPlan> out;
  std::set<std::vector<int64_t>> seen;
  for (int64_t k = 0; k < s.mesh->size(); ++k) {
    std::vector<int64_t> idx = block_index(*s.mesh, s.spec, k, rank);
    if (!seen.insert(idx).second) continue;
    for (size_t d = 0; d < rank; ++d) idx[d] *= b[d];
    out.push_back(BlockPlan{idx, b, k});
  }
  return out;
}

// The process that writes a block: its owner device's (process p owns cpu:(p*N)..; a GPU belongs
// to the one process that drives GPUs).
int process_of(const Array& a, int64_t owner) {
  if (owner < 0) return 0;
  const Device& d = a.impl()->sharding->layout.mesh->devices[size_t(owner)];
  return d.platform == Platform::cpu ? d.id / cpu_devices_per_process() : distributed::process_index();
}

// The owner device's block, which this process holds.
Array owned_block(const Array& a, int64_t owner) {
  if (owner < 0) return a;
  const Sharding& s = *a.impl()->sharding;
  const std::vector<int64_t> local = local_positions(*s.layout.mesh);
  return s.shards[size_t(std::find(local.begin(), local.end(), owner) - local.begin())];
}

std::string tensor_name(const std::string& leaf, size_t block) { return leaf + "#" + std::to_string(block); }

std::string array_json(const Entry& e, int64_t generation) {
  const Array& a = e.array;
  std::string s = json::quote(e.name) + ":{\"dtype\":" + json::quote(dtype_name(a.dtype())) +
                  ",\"shape\":" + ints_json(a.shape().dims());
  if (a.is_sharded()) {
    const NamedSharding& l = a.impl()->sharding->layout;
    s += ",\"mesh\":{\"axes\":" + json::quote(mesh_axes_text(*l.mesh)) + ",\"devices\":" + ints_json(mesh_device_ids(*l.mesh)) +
         ",\"platform\":" + json::quote(platform_name(l.mesh->devices.at(0).platform)) + "},\"spec\":" +
         json::quote(specs_text({l.spec}));
  }
  s += ",\"blocks\":[";
  const std::vector<BlockPlan> blocks = distinct_blocks(a);
  for (size_t j = 0; j < blocks.size(); ++j)
    s += std::string(j ? "," : "") + "{\"file\":" + json::quote(shard_file(process_of(a, blocks[j].owner), generation)) +
         ",\"tensor\":" + json::quote(tensor_name(e.name, j)) + ",\"start\":" + ints_json(blocks[j].start) +
         ",\"shape\":" + ints_json(blocks[j].shape.dims()) + "}";
  return s + "]}";
}

std::string manifest_text(const Entries& entries, int64_t generation) {
  std::string s = std::string("{\"format\":\"") + manifest::kFormat + "\",\"version\":1,\"generation\":" +
                  std::to_string(generation) + ",\"arrays\":{";
  for (size_t i = 0; i < entries.size(); ++i) s += (i ? ",\n" : "\n") + array_json(entries[i], generation);
  return s + "\n}}\n";
}

// The maximum of v over every process (v in a single process). Every process calls it: it is
// also the barrier between the steps of a save.
int64_t agree_max(int64_t v, const std::string& dir) {
  if (distributed::process_count() == 1) return v;
  int64_t out = v;
  std::string why;
  if (!interprocess_all_reduce(ReduceOp::max, DType::int64, &v, &out, 1, why))
    throw DeviceError("DeviceError: save(" + dir + "): the processes did not meet: " + why);
  return out;
}

// Runs `step` and agrees with the other processes that it succeeded everywhere: rethrows this
// process's failure, or an IOError when another process failed.
template <class F>
void everywhere(const std::string& dir, const std::string& what, F step) {
  std::exception_ptr failed;
  try {
    step();
  } catch (...) {
    failed = std::current_exception();
  }
  const bool all = agree_max(failed ? 1 : 0, dir) == 0;
  if (failed) std::rethrow_exception(failed);
  if (!all) io::fail(dir, "another process failed to " + what + "; the checkpoint was left as it was");
}

void remove_other_generations(const std::string& dir, int64_t generation) {
  std::set<std::string> keep;
  for (int p = 0; p < distributed::process_count(); ++p) keep.insert(shard_file(p, generation));
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir, ec)) {
    const std::string name = f.path().filename().string();
    if (name.starts_with("shards-") && name.ends_with(".safetensors") && !keep.count(name)) fs::remove(f.path(), ec);
  }
}

void check_savable(const std::string& dir, const Entries& entries) {
  for (const Entry& e : entries) {
    if (!e.array.valid() || e.array.is_tracer())
      throw ValueError("ValueError: save(" + dir + "): leaf '" + e.name + "' is not a concrete array");
    if (is_complex(e.array.dtype()))
      throw TypeError("TypeError: save(" + dir + "): leaf '" + e.name + "' is " + e.array.aval().str() +
                      "; checkpoints hold real and integer arrays (save the real and imaginary parts)");
  }
}

}  // namespace

void write_sharded_checkpoint(const std::string& dir, const Entries& entries) {
  check_savable(dir, entries);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) io::fail(dir, "cannot create the checkpoint directory: " + ec.message());
  const int me = distributed::process_index();
  const int64_t generation = agree_max(manifest::generation(dir) + 1, dir);
  everywhere(dir, "write its blocks", [&] {
    Entries mine;
    for (const Entry& e : entries) {
      const std::vector<BlockPlan> blocks = distinct_blocks(e.array);
      for (size_t j = 0; j < blocks.size(); ++j)
        if (process_of(e.array, blocks[j].owner) == me)
          mine.push_back({tensor_name(e.name, j), owned_block(e.array, blocks[j].owner)});
    }
    if (!mine.empty()) checkpoint_io::write_safetensors(join(dir, shard_file(me, generation)), mine);
  });
  // Every block is on disk: the manifest makes the new generation the checkpoint.
  everywhere(dir, "commit the manifest", [&] {
    if (me != 0) return;
    io::AtomicFile m(join(dir, manifest::kFileName));
    m.write(manifest_text(entries, generation));
    m.commit();
    remove_other_generations(dir, generation);
  });
}

namespace {

// ---- reading ----------------------------------------------------------------------------------------

// The layout an array was saved in, when its mesh's devices all exist here.
std::optional<NamedSharding> saved_layout_here(const manifest::SavedArray& a) {
  if (!a.layout) return std::nullopt;
  const Mesh& m = *a.layout->mesh;
  if (m.devices.empty() || m.shape.size() != m.axis_names.size()) return std::nullopt;
  for (const Device& d : m.devices)
    if (d.id < 0 || (d.platform == Platform::cpu ? d.id >= int(fluxion::devices("cpu").size()) : !is_local(d)))
      return std::nullopt;
  try {
    check_mesh(m, "load", {});
  } catch (const Error&) {
    return std::nullopt;
  }
  if (layout_problem(m, a.layout->spec, AbstractArray{a.shape, a.dtype})) return std::nullopt;
  return a.layout;
}

// `a` laid out by `s`: each of this process's devices gets its block, read from the saved blocks
// that overlap it (a block several local devices hold is read once).
Array laid_out(manifest::BlockReader& r, const manifest::SavedArray& a, const NamedSharding& s) {
  const Shape b = block_shape(*s.mesh, s.spec, a.shape);
  std::map<std::vector<int64_t>, Array> read;
  std::vector<Array> blocks;
  for (int64_t k : local_positions(*s.mesh)) {
    std::vector<int64_t> start = block_index(*s.mesh, s.spec, k, a.shape.size());
    for (size_t d = 0; d < start.size(); ++d) start[d] *= b[d];
    auto it = read.find(start);
    if (it == read.end()) it = read.emplace(start, r.region(a, start, b)).first;
    blocks.push_back(fluxion::device_put(it->second, s.mesh->devices[size_t(k)]));
  }
  return sharded_array(AbstractArray{a.shape, a.dtype}, s, std::move(blocks));
}

}  // namespace

Entries read_sharded_checkpoint(const std::string& dir) {
  const manifest::Manifest m = manifest::read(dir);
  manifest::BlockReader reader(dir);
  Entries out;
  for (const auto& [name, a] : m.arrays) {
    const std::optional<NamedSharding> s = saved_layout_here(a);
    out.push_back({name, s ? laid_out(reader, a, *s) : reader.whole(a)});
  }
  return out;
}

std::vector<Array> lay_out_sharded_checkpoint(const std::string& dir, std::vector<Array> found,
                                              const std::vector<std::string>& names, const std::vector<Array>& like) {
  std::optional<manifest::Manifest> m;
  std::optional<manifest::BlockReader> reader;
  for (size_t i = 0; i < found.size(); ++i) {
    const bool want_sharded = like[i].valid() && like[i].is_sharded();
    if (want_sharded ? found[i].is_sharded() && found[i].impl()->sharding->layout == like[i].impl()->sharding->layout
                     : !found[i].is_sharded())
      continue;  // already laid out as asked
    if (!m) {
      m = manifest::read(dir);
      reader.emplace(dir);
    }
    auto saved = m->arrays.find(names[i]);
    if (saved == m->arrays.end()) io::fail(dir, "the manifest changed while it was read: '" + names[i] + "' is gone");
    const manifest::SavedArray& a = saved->second;
    if (!want_sharded) {
      found[i] = reader->whole(a);
      continue;
    }
    const NamedSharding& s = like[i].impl()->sharding->layout;
    check_mesh(*s.mesh, "load", {});
    found[i] = laid_out(*reader, a, s);
  }
  return found;
}

namespace {
const bool registered = [] {
  checkpoint_io::set_sharded_format({&write_sharded_checkpoint, &read_sharded_checkpoint, &lay_out_sharded_checkpoint});
  return true;
}();
}  // namespace

}  // namespace fluxion::runtime
