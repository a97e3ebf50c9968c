// Timing shared by the benchmarks that run their own loops (not Google Benchmark's).
#pragma once
#include <algorithm>
#include <chrono>
#include <functional>

namespace fluxion_bench {

/// The best wall time of `repeats` calls of `f`, in milliseconds: on a shared machine the minimum
/// is the run least disturbed by others. No warm-up call: callers decide.
inline double best_ms(const std::function<void()>& f, int repeats) {
  using Clock = std::chrono::steady_clock;
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    auto t = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - t).count());
  }
  return best;
}

}  // namespace fluxion_bench
