// (c) Eager elementwise throughput on 16M float32 elements against hand-written loops in the same
// run. Target: Fluxion at >= 0.8x the hand loop's throughput.
#include <benchmark/benchmark.h>
#include <fluxion.h>

#include <cmath>
#include <vector>

namespace fx = fluxion;

constexpr int64_t kN = int64_t(1) << 24;  // 16M

static void set_bytes(benchmark::State& state, int arrays) {
  state.SetBytesProcessed(int64_t(state.iterations()) * kN * int64_t(sizeof(float)) * arrays);
}

// a*b + c: two eager ops, two passes over memory and one 64 MB temporary.
static void eager_fma_16m(benchmark::State& state) {
  fx::Array a = fx::full({kN}, 1.5f), b = fx::full({kN}, 2.f), c = fx::full({kN}, 0.25f);
  for (auto _ : state) {
    fx::Array r = a * b + c;
    benchmark::DoNotOptimize(r.impl().get());
  }
  set_bytes(state, 4);
}
BENCHMARK(eager_fma_16m)->Unit(benchmark::kMillisecond);

// The hand loop a user would write: one fused pass into a fresh output.
static void baseline_hand_fma_16m(benchmark::State& state) {
  std::vector<float> a(kN, 1.5f), b(kN, 2.f), c(kN, 0.25f);
  std::unique_ptr<float[]> r(new float[kN]());  // allocated and touched once: the loop's best case
  for (auto _ : state) {
    const float *pa = a.data(), *pb = b.data(), *pc = c.data();
    float* pr = r.get();
    for (int64_t i = 0; i < kN; ++i) pr[i] = pa[i] * pb[i] + pc[i];
    benchmark::DoNotOptimize(pr);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 4);
}
BENCHMARK(baseline_hand_fma_16m)->Unit(benchmark::kMillisecond);

// The hand loop written the way eager execution runs it: two passes, each into a fresh buffer.
// Not a target, an explanation: it separates the cost of not fusing from the cost of the kernels.
static void baseline_hand_two_pass_fma_16m(benchmark::State& state) {
  std::vector<float> a(kN, 1.5f), b(kN, 2.f), c(kN, 0.25f);
  std::unique_ptr<float[]> t(new float[kN]()), r(new float[kN]());
  for (auto _ : state) {
    const float *pa = a.data(), *pb = b.data(), *pc = c.data();
    float *pt = t.get(), *pr = r.get();
    for (int64_t i = 0; i < kN; ++i) pt[i] = pa[i] * pb[i];
    benchmark::DoNotOptimize(pt);
    for (int64_t i = 0; i < kN; ++i) pr[i] = pt[i] + pc[i];
    benchmark::DoNotOptimize(pr);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 4);
}
BENCHMARK(baseline_hand_two_pass_fma_16m)->Unit(benchmark::kMillisecond);

// a*b: one eager op against the same loop (the per-op throughput the target is about).
static void eager_mul_16m(benchmark::State& state) {
  fx::Array a = fx::full({kN}, 1.5f), b = fx::full({kN}, 2.f);
  for (auto _ : state) {
    fx::Array r = a * b;
    benchmark::DoNotOptimize(r.impl().get());
  }
  set_bytes(state, 3);
}
BENCHMARK(eager_mul_16m)->Unit(benchmark::kMillisecond);

static void baseline_hand_mul_16m(benchmark::State& state) {
  std::vector<float> a(kN, 1.5f), b(kN, 2.f);
  std::unique_ptr<float[]> r(new float[kN]());  // allocated and touched once: the loop's best case
  for (auto _ : state) {
    const float *pa = a.data(), *pb = b.data();
    float* pr = r.get();
    for (int64_t i = 0; i < kN; ++i) pr[i] = pa[i] * pb[i];
    benchmark::DoNotOptimize(pr);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 3);
}
BENCHMARK(baseline_hand_mul_16m)->Unit(benchmark::kMillisecond);

// sin: one eager op against the same loop over std::sin.
static void eager_sin_16m(benchmark::State& state) {
  fx::Array a = fx::linspace(-10.f, 10.f, kN);
  for (auto _ : state) {
    fx::Array r = fx::sin(a);
    benchmark::DoNotOptimize(r.impl().get());
  }
  set_bytes(state, 2);
}
BENCHMARK(eager_sin_16m)->Unit(benchmark::kMillisecond);

static void baseline_hand_sin_16m(benchmark::State& state) {
  std::vector<float> a(kN);
  for (int64_t i = 0; i < kN; ++i) a[size_t(i)] = -10.f + 20.f * float(i) / float(kN - 1);
  std::unique_ptr<float[]> r(new float[kN]());  // allocated and touched once: the loop's best case
  for (auto _ : state) {
    const float* pa = a.data();
    float* pr = r.get();
    for (int64_t i = 0; i < kN; ++i) pr[i] = std::sin(pa[i]);
    benchmark::DoNotOptimize(pr);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2);
}
BENCHMARK(baseline_hand_sin_16m)->Unit(benchmark::kMillisecond);
