#include "runtime/executable.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "ir/error.h"
#include "ir/trace.h"
#include "lowering/compile.h"
#include "lowering/object_cache.h"
#include "lowering/target.h"
#include "runtime/buffer.h"

namespace fluxion::runtime {

const Device& cpu_device() {
  static const Device d = [] {
    Device dev{"cpu", int(std::max(1u, std::thread::hardware_concurrency()))};
    if (const char* n = std::getenv("FLUXION_NUM_THREADS")) dev.num_threads = std::max(1, std::atoi(n));
    return dev;
  }();
  return d;
}

Executable::Executable(std::shared_ptr<lowering::CompiledKernel> kernel, std::vector<AbstractArray> in_avals,
                       std::vector<AbstractArray> out_avals, std::string fingerprint)
    : kernel_(std::move(kernel)), in_avals_(std::move(in_avals)), out_avals_(std::move(out_avals)),
      fingerprint_(std::move(fingerprint)) {}

double Executable::lower_ms() const { return kernel_->lower_ms; }
double Executable::passes_ms() const { return kernel_->passes_ms; }
double Executable::llvm_ms() const { return kernel_->llvm_ms; }
double Executable::link_ms() const { return kernel_->link_ms; }
bool Executable::from_disk_cache() const { return kernel_->from_disk_cache; }

std::vector<Array> Executable::run(std::span<const Array> inputs) const {
  if (inputs.size() != in_avals_.size())
    throw TypeError("TypeError: jit: the executable takes " + std::to_string(in_avals_.size()) + " arrays, got " +
                    std::to_string(inputs.size()));
  std::vector<Array> outs;
  outs.reserve(out_avals_.size());
  for (const AbstractArray& a : out_avals_) outs.push_back(make_uninitialized(a));
  // The packed ABI: args[i] points at the i-th bare pointer.
  const size_t n = inputs.size() + outs.size();
  constexpr size_t kSmall = 16;
  void* small_ptrs[kSmall];
  void* small_args[kSmall];
  std::vector<void*> big_ptrs, big_args;
  void** ptrs = small_ptrs;
  void** args = small_args;
  if (n > kSmall) {
    big_ptrs.resize(n);
    big_args.resize(n);
    ptrs = big_ptrs.data();
    args = big_args.data();
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid() || !inputs[i].aval().same_type(in_avals_[i]))
      throw TypeError("TypeError: jit: argument " + std::to_string(i) + " has type " +
                      (inputs[i].valid() ? inputs[i].aval().str() : std::string("<empty>")) +
                      ", the executable expects " + in_avals_[i].str());
    ptrs[i] = const_cast<void*>(inputs[i].data());
  }
  for (size_t i = 0; i < outs.size(); ++i) ptrs[inputs.size() + i] = outs[i].impl()->buffer->data;
  for (size_t i = 0; i < n; ++i) args[i] = &ptrs[i];
  kernel_->packed(args);
  return outs;
}

std::string fingerprint(const Program& p, const Device& device) {
  return device.name + "/t" + std::to_string(device.num_threads) + "/mm-" + device.matmul + "/" +
         lowering::cpu_target().id() + "\n" + p.str();
}

namespace {

struct Entry {
  std::once_flag once;
  std::shared_ptr<const Executable> exe;
  std::exception_ptr error;
};

struct Cache {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries;
  CacheStats stats;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: kernels may run during static destruction
  return *c;
}


}  // namespace

std::shared_ptr<const Executable> compile(const Program& p, const Device& device) {
  std::string key = fingerprint(p, device);
  Cache& c = cache();
  std::shared_ptr<Entry> e;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto [it, inserted] = c.entries.try_emplace(key);
    if (inserted) {
      it->second = std::make_shared<Entry>();
      ++c.stats.compiles;
    } else {
      ++c.stats.hits;
    }
    e = it->second;
  }
  std::call_once(e->once, [&] {
    try {
      lowering::CompileOptions options;
      options.num_threads = device.num_threads;
      options.matmul = device.matmul == "eigen"       ? lowering::MatmulPath::eigen
                       : device.matmul == "generated" ? lowering::MatmulPath::generated
                                                      : lowering::MatmulPath::automatic;
      if (const char* dir = std::getenv("FLUXION_DUMP")) options.dump_dir = dir;
      options.dump_name = lowering::hex_hash(key);
      if (const char* dir = std::getenv("FLUXION_CACHE_DIR"); dir && *dir) {
        options.cache_dir = dir;
        options.cache_key = key;
      }
      std::shared_ptr<lowering::CompiledKernel> k = lowering::compile_cpu(p, options);
      if (k->from_disk_cache) {
        std::lock_guard<std::mutex> lock(c.mutex);
        ++c.stats.disk_hits;
      }
      std::vector<AbstractArray> in = p.in_avals();
      for (int32_t v : p.constvars) in.push_back(p.type(v));
      e->exe = std::make_shared<Executable>(std::move(k), std::move(in), p.out_avals(), key);
    } catch (...) {
      e->error = std::current_exception();
    }
  });
  if (e->error) std::rethrow_exception(e->error);
  return e->exe;
}

void clear_cache() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  cache().entries.clear();
}

CacheStats cache_stats() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().stats;
}

}  // namespace fluxion::runtime
