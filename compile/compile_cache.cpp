#include "compile/compile_cache.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "ir/error.h"
#include "ir/poly_shapes.h"
#include "ir/eval_rules.h"
#include "ir/profiler.h"
#include "ir/settings.h"
#include "runtime/cpu_executable.h"
#include "runtime/gpu_executable.h"
#include "lowering/compile.h"
#include "lowering/compile_cuda.h"
#include "lowering/object_cache.h"
#include "lowering/target.h"

namespace fluxion::runtime {

std::string fingerprint(const Program& p, const CompileTarget& target) {
  if (target.platform == Platform::cuda) return "cuda" + target.label + "/" + lowering::gpu_chip() + "\n" + p.str();
  return "cpu" + target.label + "/t" + std::to_string(target.num_threads) + "/mm-" + target.matmul + "/" +
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

lowering::CompileOptions options_for(const CompileTarget& target, const std::string& key, const std::string& dump_stem) {
  lowering::CompileOptions options;
  options.num_threads = target.num_threads;
  options.matmul = target.matmul == "eigen"       ? lowering::MatmulPath::eigen
                   : target.matmul == "generated" ? lowering::MatmulPath::generated
                                                  : lowering::MatmulPath::automatic;
  if (const char* dir = std::getenv("FLUXION_DUMP")) {
    options.dump_dir = dir;
    std::error_code ignored;  // unwritable: no dumps, never a failed compile
    std::filesystem::create_directories(options.dump_dir, ignored);
  }
  options.dump_name = dump_stem.empty() ? lowering::hex_hash(key) : dump_stem;
  return options;
}

// The backend of the target's platform: its stage list, and the executable that runs its output.
std::shared_ptr<const Executable> build(const Program& p, const CompileTarget& target, const std::string& key,
                                        const std::string& dump_stem) {
  lowering::CompileOptions options = options_for(target, key, dump_stem);
  std::vector<AbstractArray> in = p.in_avals();
  for (int32_t v : p.constvars) in.push_back(p.type(v));
  if (target.platform == Platform::cuda) {
    const auto start = std::chrono::steady_clock::now();
    GpuProgram g = lowering::compile_cuda(p, options);
    CompileTimes times;  // the MLIR passes and PTX generation together
    times.passes_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return std::make_shared<GpuExecutable>(std::move(g), std::move(in), p.out_avals(), key, times);
  }
  // Not for programs with host callbacks: their ids mean something only in this process.
  if (!has_effect(p))
    if (std::optional<std::string> dir = lowering::kernel_cache_dir()) {
      options.cache_dir = *dir;
      options.cache_key = key;
    }
  std::shared_ptr<Kernel> k = lowering::compile_cpu(p, options);
  if (k->from_disk_cache) {
    std::lock_guard<std::mutex> lock(cache().mutex);
    ++cache().stats.disk_hits;
  }
  return std::make_shared<CpuExecutable>(std::move(k), std::move(in), p.out_avals(), key);
}

}  // namespace

std::shared_ptr<const Executable> compile(const Program& p, const CompileTarget& target, const std::string& dump_stem) {
  check_settings();  // before the cache: a bad value is raised, not cached with the program
  // Symbolic dims (ir/dim_expr.h): the CPU pipeline compiles them as dynamic extents (sizes as
  // kernel arguments); the GPU pipeline does not yet, and would read their codes as sizes.
  if (target.platform == Platform::cuda)
    for (const AbstractArray& t : p.types)
      if (has_symbolic_dim(std::span(&t, 1)))
        throw CompileError("compile: the program has the symbolic type " + t.str() +
                           "; the GPU pipeline does not compile symbolic dimensions yet (docs/shape_polymorphism.md)");
  std::string key = fingerprint(p, target);
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
    profiler::instant("cache", inserted ? "compile cache miss" : "compile cache hit");
  }
  std::call_once(e->once, [&] {
    profiler::Scope prof("compile", [&] { return "compile " + (dump_stem.empty() ? std::string("program") : dump_stem); });
    try {
      e->exe = build(p, target, key, dump_stem);
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
