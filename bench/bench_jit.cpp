// Benchmarks of fx::jit with their baselines measured in the same run (best of N wall-clock runs;
// this file is compiled with -O3 -march=native -ffast-math, so the hand loops are the fast-math
// baselines the targets name). Run: build/bench/fluxion_bench_jit [repeats]
#include <fluxion.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "runtime/executable.h"

namespace fx = fluxion;
using Clock = std::chrono::steady_clock;

namespace {

int g_repeats = 10;

double best_ms(const std::function<void()>& f) {
  double best = 1e300;
  for (int r = 0; r < g_repeats; ++r) {
    auto t = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - t).count());
  }
  return best;
}

// Runs body(lo, hi) over [0, n) on `threads` std::threads.
void parallel(int threads, int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  if (threads <= 1) return body(0, n);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back(body, n * t / threads, n * (t + 1) / threads);
  for (auto& t : ts) t.join();
}

fx::Array filled(fx::Shape s, float lo, float hi) {
  fx::Array a = fx::zeros(s, fx::float32);
  float* p = static_cast<float*>(const_cast<void*>(a.data()));
  const int64_t n = a.size();
  for (int64_t i = 0; i < n; ++i) p[i] = lo + (hi - lo) * float((i * 7919) % 10007) / 10007.f;
  return a;
}

float* ptr(const fx::Array& a) { return static_cast<float*>(const_cast<void*>(a.data())); }

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_repeats = std::max(1, std::atoi(argv[1]));
  const int threads = fx::runtime::cpu_device().num_threads;
  std::printf("fluxion jit benchmarks: %d kernel threads (FLUXION_NUM_THREADS), best of %d runs\n\n", threads, g_repeats);

  // ---- fused y = sin(a*b) + exp(c), 16M f32 -------------------------------------------------------
  {
    const int64_t n = int64_t(16) << 20;
    fx::Array a = filled({n}, -3, 3), b = filled({n}, 0.5, 2), c = filled({n}, -4, 2);
    auto f = fx::jit([](const fx::Array& a, const fx::Array& b, const fx::Array& c) { return fx::sin(a * b) + fx::exp(c); });
    fx::Array y = f(a, b, c);
    double jit_ms = best_ms([&] { y = f(a, b, c); });
    std::vector<float> out(static_cast<size_t>(n)), src(static_cast<size_t>(2 * n)), dst(static_cast<size_t>(2 * n));
    std::memset(src.data(), 1, src.size() * 4);
    std::memset(dst.data(), 1, dst.size() * 4);
    double memcpy_ms = best_ms([&] {
      parallel(threads, 2 * n, [&](int64_t lo, int64_t hi) { std::memcpy(dst.data() + lo, src.data() + lo, size_t(hi - lo) * 4); });
    });
    const float *pa = ptr(a), *pb = ptr(b), *pc = ptr(c);
    float* po = out.data();
    auto hand = [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) po[i] = std::sin(pa[i] * pb[i]) + std::exp(pc[i]);
    };
    double hand_ms = best_ms([&] { parallel(threads, n, hand); });
    double hand1_ms = best_ms([&] { hand(0, n); });
    float err = 0;
    const float* py = ptr(y);
    for (int64_t i = 0; i < n; i += 997) err = std::max(err, std::fabs(py[i] - po[i]) / std::max(1.f, std::fabs(po[i])));
    std::printf("fused sin(a*b)+exp(c), 16M f32 (256 MiB of traffic)\n");
    std::printf("  jit                              %8.2f ms  (%.1f GB/s)\n", jit_ms, 4.0 * n * 4 / jit_ms / 1e6);
    std::printf("  memcpy of the same bytes         %8.2f ms  jit reaches %.2fx of memcpy (target >= 0.75)\n", memcpy_ms,
                memcpy_ms / jit_ms);
    std::printf("  hand loop -O3 -ffast-math, %d thr %8.2f ms  jit is %.2fx faster (target > 1)\n", threads, hand_ms,
                hand_ms / jit_ms);
    std::printf("  hand loop, 1 thread              %8.2f ms\n", hand1_ms);
    std::printf("  max relative difference jit vs hand: %.2e\n\n", err);
  }

  // ---- row sums of 4096 x 4096 f32 ----------------------------------------------------------------
  {
    const int64_t R = 4096, C = 4096;
    fx::Array m = filled({R, C}, -1, 1);
    auto f = fx::jit([](const fx::Array& m) { return fx::sum(m, {1}); });
    fx::Array s = f(m);
    double jit_ms = best_ms([&] { s = f(m); });
    std::vector<float> out(static_cast<size_t>(R));
    const float* pm = ptr(m);
    auto hand = [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        float acc = 0;
        const float* row = pm + r * C;
        for (int64_t j = 0; j < C; ++j) acc += row[j];
        out[size_t(r)] = acc;
      }
    };
    double hand_ms = best_ms([&] { parallel(threads, R, hand); });
    double hand1_ms = best_ms([&] { hand(0, R); });
    float err = 0;
    for (int64_t r = 0; r < R; ++r) err = std::max(err, std::fabs(ptr(s)[r] - out[size_t(r)]));
    std::printf("row sums 4096x4096 f32 (64 MiB)\n");
    std::printf("  jit                              %8.2f ms  (%.1f GB/s)\n", jit_ms, double(R * C * 4) / jit_ms / 1e6);
    std::printf("  hand loop -O3 -ffast-math, %d thr %8.2f ms  jit is %.2fx of it (target >= 1.0)\n", threads, hand_ms,
                hand_ms / jit_ms);
    std::printf("  hand loop, 1 thread              %8.2f ms\n", hand1_ms);
    std::printf("  max abs difference: %.2e\n\n", err);
  }

  // ---- cached call of a tiny function -------------------------------------------------------------
  {
    fx::Array x = filled({8}, -1, 1);
    auto f = fx::jit([](const fx::Array& x) { return fx::sin(x) * 2.f + 1.f; });
    fx::Array y = f(x);
    const int calls = 200000;
    double jit_us = best_ms([&] {
                      for (int i = 0; i < calls; ++i) y = f(x);
                    }) * 1e3 / calls;
    double alloc_us = best_ms([&] {
                        for (int i = 0; i < calls; ++i) y = fx::zeros({8}, fx::float32);
                      }) * 1e3 / calls;
    std::printf("cached call, 3 ops on f32[8]\n");
    std::printf("  jit call                         %8.3f us  (target <= 0.3 us; JAX ~7 us)\n", jit_us);
    std::printf("  allocating one f32[8] Array      %8.3f us\n\n", alloc_us);
  }

  // ---- compile time -------------------------------------------------------------------------------
  {
    const int n = 20;
    std::vector<double> ms;
    double lower = 0, passes = 0, llvm = 0;
    for (int i = 0; i < n; ++i) {
      // A distinct literal per function, so each one is a new fingerprint and really compiles.
      fx::Program p = fx::make_ir([i](const fx::Array& x) { return x * float(i + 2); })(filled({1024}, 0, 1));
      auto t = Clock::now();
      auto exe = fx::runtime::compile(p);
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
      lower += exe->lower_ms(), passes += exe->passes_ms(), llvm += exe->llvm_ms();
    }
    std::sort(ms.begin(), ms.end());
    std::printf("compile time of a one-op function (f32[1024] * c), %d compiles\n", n);
    std::printf("  median %.2f ms, best %.2f ms (target <= 10 ms); mean split: build MLIR %.2f, passes %.2f, LLVM %.2f ms\n",
                ms[ms.size() / 2], ms[0], lower / n, passes / n, llvm / n);
  }
  return 0;
}
