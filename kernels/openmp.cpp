// parallel_chunks over libomp's GNU-compatible entry point GOMP_parallel (libomp implements
// libgomp's ABI on top of its own thread pool, the one __kmpc_fork_call in the kernels uses).
#include "kernels/openmp.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "ir/settings.h"

namespace fluxion::runtime {

namespace {

using GompParallel = void (*)(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);

// GOMP_parallel of the libomp at kLibOmpPath (by handle: a libgomp that something else loaded into
// the process exports the same name and would start a second pool). Threads are bound as the
// kernels' are (lowering/pipeline_cpu.cpp asks for the same default before it loads libomp).
GompParallel gomp_parallel() {
  static const GompParallel fn = []() -> GompParallel {
    default_openmp_binding();
    void* lib = dlopen(kLibOmpPath, RTLD_NOW | RTLD_GLOBAL);
    return lib ? reinterpret_cast<GompParallel>(dlsym(lib, "GOMP_parallel")) : nullptr;
  }();
  return fn;
}

struct Chunks {
  const std::function<void(int64_t)>* body;
  int64_t n;
  std::atomic<int64_t> next{0};
};

void run_chunks(void* data) {
  Chunks& c = *static_cast<Chunks*>(data);
  for (int64_t i = c.next.fetch_add(1, std::memory_order_relaxed); i < c.n; i = c.next.fetch_add(1, std::memory_order_relaxed))
    (*c.body)(i);
}

}  // namespace

void default_openmp_binding() { setenv("OMP_PROC_BIND", cpu_devices_setting() > 1 ? "false" : "true", 0); }

void parallel_chunks(int threads, int64_t n, const std::function<void(int64_t)>& body) {
  const GompParallel parallel = threads > 1 && n > 1 ? gomp_parallel() : nullptr;
  if (!parallel) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  Chunks c{&body, n};
  parallel(&run_chunks, &c, unsigned(std::min<int64_t>(threads, n)), 0);
}

}  // namespace fluxion::runtime
