// (a) Eager dispatch overhead: one op (a + b) on a 4-element float32 array, where the arithmetic is
// negligible and what is measured is the op path itself (operand conversion, promotion, bind, the
// shape rule, allocating the result, the kernel call). Target: <= 0.5 us per op.
#include <benchmark/benchmark.h>
#include <fluxion.h>

#include <cmath>
#include <optional>
#include <vector>

#include "compile/eager_cpu.h"

namespace fx = fluxion;

static void eager_add_f32x4(benchmark::State& state) {
  fx::Array a = fx::array({1.f, 2.f, 3.f, 4.f});
  fx::Array b = fx::array({5.f, 6.f, 7.f, 8.f});
  for (auto _ : state) {
    fx::Array c = a + b;
    benchmark::DoNotOptimize(c.impl().get());
  }
}
BENCHMARK(eager_add_f32x4);

// Baselines in the same run: the same four additions written by hand into a fresh std::vector
// (an allocation, as an op's result needs one), and the bare cost of a new concrete Array handle
// (ArrayImpl + 64-byte aligned buffer), which every eager op pays once.
static void baseline_hand_add_f32x4(benchmark::State& state) {
  std::vector<float> a{1, 2, 3, 4}, b{5, 6, 7, 8};
  for (auto _ : state) {
    benchmark::DoNotOptimize(a.data());
    benchmark::DoNotOptimize(b.data());
    std::vector<float> c(4);
    for (size_t i = 0; i < 4; ++i) c[i] = a[i] + b[i];
    benchmark::DoNotOptimize(c.data());
  }
}
BENCHMARK(baseline_hand_add_f32x4);

static void baseline_new_array_f32x4(benchmark::State& state) {
  const fx::AbstractArray aval{fx::Shape{4}, fx::float32, false};
  for (auto _ : state) {
    fx::Array c = fx::make_uninitialized(aval);
    benchmark::DoNotOptimize(c.impl().get());
  }
}
BENCHMARK(baseline_new_array_f32x4);

// (a') Eager transcendental ops on a large array (compile/eager_cpu.h): tanh of 1M float32 as the
// reference kernel runs it (scalar std::tanh per element, FLUXION_EAGER_COMPILE=off) against the
// compiled one-op program (vectorized, threaded; compiled once, before the timing) and a hand
// loop of std::tanh -- the ratio compiled / reference is the speed-up docs/performance.md states.
static void eager_tanh_f32_1M(benchmark::State& state, fluxion::runtime::EagerCompile mode) {
  fluxion::runtime::override_eager_compile(mode);
  const fx::Array x = fx::linspace(-3.f, 3.f, 1 << 20);
  (void)fx::tanh(x);  // the compile, when there is one
  for (auto _ : state) {
    fx::Array y = fx::tanh(x);
    benchmark::DoNotOptimize(y.impl().get());
  }
  fluxion::runtime::override_eager_compile(std::nullopt);
  state.SetItemsProcessed(state.iterations() * (int64_t(1) << 20));
}
BENCHMARK_CAPTURE(eager_tanh_f32_1M, reference, fluxion::runtime::EagerCompile::off)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(eager_tanh_f32_1M, compiled, fluxion::runtime::EagerCompile::auto_)->Unit(benchmark::kMillisecond);

static void baseline_hand_tanh_f32_1M(benchmark::State& state) {
  std::vector<float> x(1 << 20);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -3.f + 6.f * float(i) / float(x.size() - 1);
  for (auto _ : state) {
    std::vector<float> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = std::tanh(x[i]);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * (int64_t(1) << 20));
}
BENCHMARK(baseline_hand_tanh_f32_1M)->Unit(benchmark::kMillisecond);
