// Control flow: a 1,000-step scan over an RNN cell of width 64, h = tanh(W h + U x_t + b), in
// float32, against the same recurrence hand-written in C++ with Eigen (measured in the same run):
//   * time per step of the scan, eager (the interpreter runs the traced body once per step) and
//     under fx::jit (a skipped benchmark names the reason where the jit has no lowering for scan);
//   * value_and_grad with respect to (W, U, b) against the forward pass: the gradient-to-forward
//     ratio (target <= 3): one forward scan that stores its per-step residuals, then one reverse scan.
#include <benchmark/benchmark.h>
#include <fluxion.h>

#include "baseline_rnn.h"
#include "models.h"

#include <cmath>
#include <vector>

namespace fx = fluxion;

namespace {
constexpr int64_t kSteps = 1000, kWidth = 64;

using bench::rnn_loss;
using Cell = bench::RnnCell;

struct RnnData {
  Cell p;
  fx::Array h0, xs;
  RnnData() {
    auto k = fx::random::key(6);
    const float scale = 1.0f / std::sqrt(float(kWidth));
    p = {fx::random::normal(fx::random::fold_in(k, 1), {kWidth, kWidth}) * scale,
         fx::random::normal(fx::random::fold_in(k, 2), {kWidth, kWidth}) * scale, fx::zeros({kWidth})};
    h0 = fx::zeros({kWidth});
    xs = fx::random::normal(fx::random::fold_in(k, 3), {kSteps, kWidth});
  }
};
}  // namespace

static void rnn_scan_forward_eager(benchmark::State& state) {
  RnnData d;
  for (auto _ : state) benchmark::DoNotOptimize(rnn_loss(d.p, d.h0, d.xs).impl().get());
}
BENCHMARK(rnn_scan_forward_eager)->Unit(benchmark::kMillisecond);

static void rnn_scan_value_and_grad_eager(benchmark::State& state) {
  RnnData d;
  auto vg = fx::value_and_grad(rnn_loss);
  for (auto _ : state) benchmark::DoNotOptimize(vg(d.p, d.h0, d.xs).first.impl().get());
}
BENCHMARK(rnn_scan_value_and_grad_eager)->Unit(benchmark::kMillisecond);

static void rnn_scan_forward_jit(benchmark::State& state) {
  RnnData d;
  auto f = fx::jit(rnn_loss);
  try {
    f(d.p, d.h0, d.xs);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(f(d.p, d.h0, d.xs).impl().get());
}
BENCHMARK(rnn_scan_forward_jit)->Unit(benchmark::kMillisecond);

static void rnn_scan_value_and_grad_jit(benchmark::State& state) {
  RnnData d;
  auto vg = fx::jit(fx::value_and_grad(rnn_loss));
  try {
    vg(d.p, d.h0, d.xs);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(vg(d.p, d.h0, d.xs).first.impl().get());
}
BENCHMARK(rnn_scan_value_and_grad_jit)->Unit(benchmark::kMillisecond);

// The same recurrence and loss, written by hand (bench/baseline_rnn.cpp, compiled -O3 -march=native
// -ffast-math): with Eigen's matrix-vector products and vectorized tanh (the baseline the summary
// uses), and as plain loops with std::tanh.
static void baseline_rnn_eigen(benchmark::State& state) {
  RnnData d;
  std::vector<float> w = d.p.w.to_vector<float>(), u = d.p.u.to_vector<float>(), b = d.p.b.to_vector<float>(),
                     xs = d.xs.to_vector<float>();
  for (auto _ : state)
    benchmark::DoNotOptimize(fluxion_bench::rnn_hand_eigen(w.data(), u.data(), b.data(), xs.data(), kSteps, kWidth));
}
BENCHMARK(baseline_rnn_eigen)->Unit(benchmark::kMillisecond);

static void baseline_rnn_hand(benchmark::State& state) {
  RnnData d;
  std::vector<float> w = d.p.w.to_vector<float>(), u = d.p.u.to_vector<float>(), b = d.p.b.to_vector<float>(),
                     xs = d.xs.to_vector<float>();
  for (auto _ : state)
    benchmark::DoNotOptimize(fluxion_bench::rnn_hand_loop(w.data(), u.data(), b.data(), xs.data(), kSteps, kWidth));
}
BENCHMARK(baseline_rnn_hand)->Unit(benchmark::kMillisecond);
