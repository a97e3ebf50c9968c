#include "transforms/pmap.h"

#include <algorithm>
#include <cstring>
#include <variant>

#include "ir/spmd.h"
#include "memory/buffer.h"
#include "runtime/distributed.h"
#include "runtime/mesh.h"

namespace fluxion::pmap_detail {

Placement place(const std::vector<Device>& devices, const std::string& axis, SourceLoc loc) {
  const std::vector<Device> all = fluxion::devices("cpu");  // pmap's arrays are host arrays (no GPU arrays yet)
  const std::vector<Device>& chosen = devices.empty() ? all : devices;
  Placement at;
  at.axis_size = int64_t(chosen.size());
  for (const Device& d : chosen)
    if (is_local(d)) at.local.push_back(d);
  if (distributed::process_count() > 1 && chosen != all)
    throw DeviceError("DeviceError: pmap over '" + axis + "' at " + loc.str() +
                      ": across processes pmap runs on every device (fx::devices()); a subset is not supported yet");
  for (const Device& d : chosen)
    if (std::find(all.begin(), all.end(), d) == all.end()) runtime::check_local(d, "pmap over '" + axis + "'", loc);
  if (at.local.empty())
    throw DeviceError("DeviceError: pmap over '" + axis + "' at " + loc.str() + ": no devices");
  Mesh mesh{chosen, {int64_t(chosen.size())}, {axis}};
  at.positions = runtime::local_positions(mesh);
  at.mesh = std::make_shared<const Mesh>(std::move(mesh));
  at.local_mesh = std::make_shared<const Mesh>(Mesh{at.local, {int64_t(at.local.size())}, {axis}});
  return at;
}

void append_processes(std::string& key) {
  key += '@';
  key += std::to_string(distributed::process_count());
}

std::shared_ptr<const Signature> lookup(Cache& cache, const std::string& key) {
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.signatures.find(key);
  return it == cache.signatures.end() ? nullptr : it->second;
}

namespace {
// Whether running p meets the other devices: a collective's eqn (it names an axis by its key),
// also inside a sub-program (a cond branch, a loop body).
bool meets_other_devices(const Program& p) {
  for (const Eqn& e : p.eqns)
    if (e.params.has("axis_key") || any_sub_program(e, meets_other_devices)) return true;
  return false;
}
// The out_axes position of each output (kNotMapped for fx::none), checked before anything runs.
std::vector<int64_t> out_positions(const runtime::Executable& e, const OutAxes& out, SourceLoc loc) {
  const size_t nout = e.out_avals().size();
  if (out.specs.size() != 1 && out.specs.size() != nout)
    throw ValueError("ValueError: pmap at " + loc.str() + ": out_axes has " + std::to_string(out.specs.size()) +
                     " entries for " + std::to_string(nout) + " outputs");
  std::vector<int64_t> at(nout);
  for (size_t j = 0; j < nout; ++j) {
    const AxisSpec& spec = out.specs.size() == 1 ? out.specs[0] : out.specs[j];
    const Axis* a = std::get_if<Axis>(&spec);
    if (!a) throw ValueError("ValueError: pmap at " + loc.str() + ": out_axes takes an axis or fx::none per output");
    if (!a->mapped()) {
      at[j] = kNotMapped;
      continue;
    }
    const int64_t rank = int64_t(e.out_avals()[j].shape.size()) + 1;
    at[j] = a->value() < 0 ? a->value() + rank : a->value();
    if (at[j] < 0 || at[j] >= rank)
      throw ValueError("ValueError: pmap at " + loc.str() + ": out_axes " + std::to_string(a->value()) +
                       " is out of range for output " + std::to_string(j) + " of rank " + std::to_string(rank));
  }
  return at;
}
}  // namespace

std::shared_ptr<const Signature> compile(Cache& cache, const std::string& key, Program program,
                                         std::shared_ptr<const void> out_like, Placement at, std::vector<int64_t> dims,
                                         const OutAxes& out, SourceLoc loc) {
  // The devices run at once: each kernel gets its share of the cores.
  runtime::CompileTarget target = runtime::default_target();
  target.num_threads = std::max(1, target.num_threads / int(at.local.size()));
  auto sig = std::make_shared<Signature>();
  sig->compiled = jit_detail::compile_signature(cache.jit, key, std::move(program), std::move(out_like), target);
  sig->at = std::move(at);
  sig->dims = std::move(dims);
  sig->out_at = out_positions(*sig->compiled->executable, out, loc);
  sig->schedule = meets_other_devices(sig->compiled->program) ? runtime::Schedule::together : runtime::Schedule::any_thread;
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.signatures.try_emplace(key, std::move(sig)).first->second;
}

namespace {

// Outer blocks before `axis`, and the bytes of one index along it.
struct Split {
  size_t outer = 1, block = 0;
};
Split split_of(const AbstractArray& global, int64_t axis) {
  Split s;
  for (int64_t d = 0; d < axis; ++d) s.outer *= size_t(global.shape[size_t(d)]);
  const size_t n = size_t(global.shape[size_t(axis)]);
  s.block = n && s.outer ? global.nbytes() / s.outer / n : 0;
  return s;
}

// Device k's piece of x along `axis`, placed on `d`. Where the piece is one contiguous block (the
// axes before `axis` have size 1, as for the usual leading axis) it is a view of x's bytes, kept
// alive by x's buffer: CPU devices share host memory, and programs do not write their inputs.
Array shard_of(const Array& x, int64_t axis, size_t k, const Device& d) {
  AbstractArray piece = x.aval();
  const size_t n = size_t(piece.shape[size_t(axis)]);
  Shape rest;
  for (int64_t a = 0; a < int64_t(piece.shape.size()); ++a)
    if (a != axis) rest.push_back(piece.shape[size_t(a)]);
  piece.shape = rest;
  const Split s = split_of(x.aval(), axis);
  const char* src = static_cast<const char*>(x.data());
  std::shared_ptr<Buffer> buffer;
  if (s.outer == 1 && x.impl()->buffer) {
    buffer = Buffer::wrap(const_cast<char*>(src) + k * s.block, s.block, x.impl()->buffer);
  } else {
    buffer = Buffer::allocate(piece.nbytes());
    char* dst = static_cast<char*>(buffer->data);
    for (size_t o = 0; o < s.outer; ++o) std::memcpy(dst + o * s.block, src + (o * n + k) * s.block, s.block);
  }
  buffer->device = d;
  buffer->committed = true;
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = std::move(piece);
  impl->buffer = std::move(buffer);
  return Array(std::move(impl));
}

// x with another shape of the same size: a view of its buffer (a block of 1 along an axis, and the
// device's result without it).
Array reshaped_view(const Array& x, Shape shape) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = x.aval();
  impl->aval.shape = std::move(shape);
  impl->buffer = x.impl()->buffer;
  return Array(std::move(impl));
}

// The layout of a pmap's input or result along `axis`: the local devices' mesh, split at `axis`.
NamedSharding stacked_along(const Placement& at, int64_t axis) {
  PartitionSpec spec;
  spec.dims.resize(size_t(axis) + 1);
  spec.dims[size_t(axis)] = {at.local_mesh->axis_names[0]};
  return NamedSharding(at.local_mesh, std::move(spec));
}

// A sharded input that already lives on these devices, split along this axis, is used as it is.
bool reusable(const Array& x, int64_t axis, const Placement& at) {
  if (!x.is_sharded()) return false;
  const Sharding& s = *x.impl()->sharding;
  if (!(s.layout == stacked_along(at, axis)) || s.shards.size() != at.local.size()) return false;
  for (size_t k = 0; k < s.shards.size(); ++k)
    if (!(s.shards[k].impl()->buffer && s.shards[k].impl()->buffer->device == at.local[k])) return false;
  return true;
}

// Shard k of a reusable input, without its block's axis of 1.
Array squeezed(const Array& shard, int64_t axis) {
  Shape s;
  for (int64_t d = 0; d < shard.ndim(); ++d)
    if (d != axis) s.push_back(shard.shape()[size_t(d)]);
  return reshaped_view(shard, std::move(s));
}

// Device results stacked along `axis`: a sharded array over the local devices' mesh.
Array stacked(const Placement& at, std::vector<Array> results, int64_t axis) {
  AbstractArray global = results[0].aval();
  global.shape.insert(size_t(axis), int64_t(results.size()));
  for (Array& r : results) {
    Shape block = r.shape();
    block.insert(size_t(axis), 1);
    r = reshaped_view(r, std::move(block));
  }
  return runtime::sharded_array(global, stacked_along(at, axis), std::move(results));
}

}  // namespace

namespace {
// How device k gets leaf i.
enum class Feed : uint8_t { whole, shard, slice };
}  // namespace

std::vector<Array> run(const Signature& sig, std::span<const Array> leaves, const std::string& axis, SourceLoc loc) {
  const jit_detail::Compiled& c = *sig.compiled;
  const std::vector<Device>& local = sig.at.local;
  const size_t n = local.size(), per = leaves.size() + c.consts.size();
  const std::vector<int64_t>& positions = sig.out_at;
  std::vector<Feed> feed(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i)
    feed[i] = sig.dims[i] == kNotMapped                    ? Feed::whole
              : reusable(leaves[i], sig.dims[i], sig.at) ? Feed::shard
                                                           : Feed::slice;
  // Device k's arguments are args[k * per, (k + 1) * per), its results results[k]: each device
  // writes only its own, so nothing is locked.
  std::vector<Array> args(n * per);
  std::vector<std::vector<Array>> results(n);
  auto feed_and_run = [&](size_t k) {
    Array* in = args.data() + k * per;
    for (size_t i = 0; i < leaves.size(); ++i)
      in[i] = feed[i] == Feed::whole   ? leaves[i]
              : feed[i] == Feed::shard ? squeezed(leaves[i].impl()->sharding->shards[k], sig.dims[i])
                                       : shard_of(leaves[i], sig.dims[i], k, local[k]);
    std::copy(c.consts.begin(), c.consts.end(), in + leaves.size());
    results[k] = c.executable->run(std::span<const Array>(in, per));
    for (Array& o : results[k]) o.impl()->buffer->committed = true;
  };
  runtime::run_on_mesh(*sig.at.mesh, sig.at.positions, runtime::ShardTask(feed_and_run),
                       sig.schedule == runtime::Schedule::together, "pmap over '" + axis + "'", loc);
  // Each output leaf: sharded along its out axis, or (none) device 0's.
  std::vector<Array> placed;
  placed.reserve(positions.size());
  for (size_t j = 0; j < positions.size(); ++j) {
    if (positions[j] == kNotMapped) {
      placed.push_back(std::move(results[0][j]));
      continue;
    }
    std::vector<Array> shards(n);
    for (size_t k = 0; k < n; ++k) shards[k] = std::move(results[k][j]);
    placed.push_back(stacked(sig.at, std::move(shards), positions[j]));
  }
  return placed;
}

void check_processes_agree(const std::string& signature, const std::string& axis, SourceLoc loc) {
  if (distributed::process_count() == 1) return;
  // Each process's signature (truncated to a fixed size), gathered everywhere and compared.
  constexpr size_t kBytes = 512;
  const int procs = distributed::process_count(), me = distributed::process_index();
  std::vector<char> all(kBytes * size_t(procs), 0);
  std::memcpy(all.data() + kBytes * size_t(me), signature.data(), std::min(signature.size(), kBytes - 1));
  std::string why;
  if (!runtime::interprocess_all_gather(nullptr, all.data(), kBytes, why))
    throw DeviceError("DeviceError: pmap over '" + axis + "' at " + loc.str() + ": " + why);
  for (int p = 0; p < procs; ++p) {
    const std::string theirs(all.data() + kBytes * size_t(p));
    if (theirs != std::string(all.data() + kBytes * size_t(me)))
      throw DeviceError("DeviceError: pmap over '" + axis + "' at " + loc.str() + ": process " + std::to_string(p) +
                        " calls it with different arguments than process " + std::to_string(me) + " (process " +
                        std::to_string(p) + ": " + theirs + "; process " + std::to_string(me) + ": " +
                        std::string(all.data() + kBytes * size_t(me)) + ")");
  }
}

}  // namespace fluxion::pmap_detail
