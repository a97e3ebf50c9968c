#include "prims/library_threads.h"

#include <atomic>

#include "ir/error.h"
#include "ir/settings.h"

namespace fluxion {

int library_threads() {
  static const int threads = [] {
    try {
      return thread_setting();
    } catch (const Error&) {
      return 1;  // a kernel never throws for it: the jit and devices raise the ValueError
    }
  }();
  return threads;
}

namespace {
std::atomic<ParallelChunks> g_parallel{nullptr};
}  // namespace

void library_parallel(int threads, int64_t n, const std::function<void(int64_t)>& body) {
  if (ParallelChunks parallel = g_parallel.load(std::memory_order_acquire)) return parallel(threads, n, body);
  for (int64_t i = 0; i < n; ++i) body(i);
}
void set_library_parallel(ParallelChunks parallel) { g_parallel.store(parallel, std::memory_order_release); }

}  // namespace fluxion
