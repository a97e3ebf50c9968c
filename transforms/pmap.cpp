#include "transforms/pmap.h"

#include <algorithm>
#include <cstring>

#include "ir/spmd.h"
#include "memory/buffer.h"
#include "runtime/collectives_local.h"
#include "runtime/distributed.h"

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
  return at;
}

std::shared_ptr<const jit_detail::Compiled> compile(jit_detail::JitCache& cache, const std::string& key, Program program,
                                                    std::shared_ptr<const void> out_like, size_t local_devices) {
  // The devices run at once: each kernel gets its share of the cores.
  runtime::Device target = runtime::cpu_device();
  target.num_threads = std::max(1, target.num_threads / int(local_devices));
  return jit_detail::compile_signature(cache, key, std::move(program), std::move(out_like), target);
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

// Device k's piece of x along `axis`, placed on `d`.
Array shard_of(const Array& x, int64_t axis, size_t k, const Device& d) {
  AbstractArray piece = x.aval();
  const size_t n = size_t(piece.shape[size_t(axis)]);
  Shape rest;
  for (int64_t d = 0; d < int64_t(piece.shape.size()); ++d)
    if (d != axis) rest.push_back(piece.shape[size_t(d)]);
  piece.shape = rest;
  Array out = make_uninitialized(piece);
  const Split s = split_of(x.aval(), axis);
  const char* src = static_cast<const char*>(x.data());
  char* dst = static_cast<char*>(out.impl()->buffer->data);
  for (size_t o = 0; o < s.outer; ++o) std::memcpy(dst + o * s.block, src + (o * n + k) * s.block, s.block);
  out.impl()->buffer->device = d;
  out.impl()->buffer->committed = true;
  return out;
}

// A sharded input that already lives on these devices, split along this axis, is used as it is.
bool reusable(const Array& x, int64_t axis, const std::vector<Device>& local) {
  if (!x.is_sharded() || x.impl()->sharding->axis != axis) return false;
  const std::vector<Array>& s = x.impl()->sharding->shards;
  if (s.size() != local.size()) return false;
  for (size_t k = 0; k < s.size(); ++k)
    if (!(s[k].impl()->buffer && s[k].impl()->buffer->device == local[k])) return false;
  return true;
}

Array sharded(std::vector<Array> shards, int64_t axis) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = shards[0].aval();
  impl->aval.shape.insert(size_t(axis), int64_t(shards.size()));
  impl->sharding = std::make_shared<Sharding>();
  impl->sharding->shards = std::move(shards);
  impl->sharding->axis = int(axis);
  return Array(std::move(impl));
}

}  // namespace

std::vector<Array> run(const jit_detail::Compiled& c, std::span<const Array> leaves, const std::vector<int64_t>& dims,
                       const Placement& at, const std::string& axis, const OutAxes& out, SourceLoc loc) {
  const size_t n = at.local.size();
  std::vector<bool> reuse(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) reuse[i] = dims[i] != kNotMapped && reusable(leaves[i], dims[i], at.local);
  if (!c.executable)  // complex values: fx::jit interprets such programs (transforms/jit.cpp); pmap runs kernels
    throw CompileError("CompileError: pmap over '" + axis + "' at " + loc.str() +
                       ": programs with complex values are not compiled yet (docs/linalg.md)");
  runtime::LocalGroup group(int(n), distributed::process_index(), distributed::process_count());
  const int64_t key = axis_key(axis);
  std::vector<std::vector<Array>> outs(n);
  runtime::run_on_devices(at.local, [&](size_t k) {
    try {
      std::vector<Array> in;
      in.reserve(leaves.size() + c.consts.size());
      for (size_t i = 0; i < leaves.size(); ++i)
        in.push_back(dims[i] == kNotMapped ? leaves[i]
                     : reuse[i]            ? leaves[i].impl()->sharding->shards[k]
                                           : shard_of(leaves[i], dims[i], k, at.local[k]));
      in.insert(in.end(), c.consts.begin(), c.consts.end());
      AxisBinding bound(key, &group.member(int(k)));
      outs[k] = c.executable->run(in);
      if (std::optional<std::string> why = take_collective_failure()) {
        group.abort(*why);
        throw DeviceError("DeviceError: pmap over '" + axis + "' at " + loc.str() + " on " + at.local[k].str() + ": " + *why);
      }
      for (Array& o : outs[k]) o.impl()->buffer->committed = true;
    } catch (...) {
      group.abort("another device of the axis raised an error");
      throw;
    }
  });
  // Each output leaf: sharded along its out axis, or (none) device 0's copy.
  const size_t nout = outs[0].size();
  if (out.specs.size() != 1 && out.specs.size() != nout)
    throw ValueError("ValueError: pmap at " + loc.str() + ": out_axes has " + std::to_string(out.specs.size()) +
                     " entries for " + std::to_string(nout) + " outputs");
  std::vector<Array> results;
  for (size_t j = 0; j < nout; ++j) {
    const AxisSpec& spec = out.specs.size() == 1 ? out.specs[0] : out.specs[j];
    const Axis* a = std::get_if<Axis>(&spec);
    if (!a) throw ValueError("ValueError: pmap at " + loc.str() + ": out_axes takes an axis or fx::none per output");
    if (!a->mapped()) {
      results.push_back(outs[0][j]);
      continue;
    }
    const int64_t rank = outs[0][j].ndim() + 1;
    const int64_t d = a->value() < 0 ? a->value() + rank : a->value();
    if (d < 0 || d >= rank)
      throw ValueError("ValueError: pmap at " + loc.str() + ": out_axes " + std::to_string(a->value()) +
                       " is out of range for output " + std::to_string(j) + " of rank " + std::to_string(rank));
    std::vector<Array> shards;
    for (size_t k = 0; k < n; ++k) shards.push_back(outs[k][j]);
    results.push_back(sharded(std::move(shards), d));
  }
  return results;
}

void check_processes_agree(const std::string& signature, const std::string& axis, SourceLoc loc) {
  if (distributed::process_count() == 1) return;
  // Each process's signature (truncated to a fixed size), gathered everywhere and compared.
  constexpr size_t kBytes = 512;
  const int procs = distributed::process_count(), me = distributed::process_index();
  std::vector<char> all(kBytes * size_t(procs), 0);
  std::memcpy(all.data() + kBytes * size_t(me), signature.data(), std::min(signature.size(), kBytes - 1));
  std::string why;
  if (!runtime::interprocess_all_gather(all.data(), kBytes, why))
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
