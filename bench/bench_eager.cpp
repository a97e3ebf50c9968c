// (a) Eager dispatch overhead: one op (a + b) on a 4-element float32 array, where the arithmetic is
// negligible and what is measured is the op path itself (operand conversion, promotion, bind, the
// shape rule, allocating the result, the kernel call). Target: <= 0.5 us per op.
#include <benchmark/benchmark.h>
#include <fluxion.h>

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
