// The timing the standalone benchmarks share: the best of `repeats` wall-clock runs, in ms (the
// minimum is the run least disturbed by the other work on a shared machine). bench_conv, bench_jit
// and bench_optim carry their own copies of this loop; new benchmarks include this header.
#pragma once
#include <algorithm>
#include <chrono>
#include <functional>

namespace fluxion_bench {

inline double best_ms(const std::function<void()>& f, int repeats) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto t = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
  }
  return best;
}

}  // namespace fluxion_bench
