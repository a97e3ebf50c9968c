// Autodiff costs, each against its forward computation in the same run:
//   * gradient-to-forward time ratio of a 2-layer MLP loss (batch 256, 784-512-10) and of a GMM
//     log-likelihood (d=10, K=25, n=1000), both through the eager interpreter (jit comes later);
//     the ratio is what a user pays for a gradient (hand-written adjoints reach 2-2.5 on GMM);
//   * trace + differentiate + simplify of a 10,000-eqn function (target <= 50 ms).
#include <benchmark/benchmark.h>
#include <fluxion.h>

#include <cmath>

#include "models.h"
#include "interpreters/vjp.h"

namespace fx = fluxion;

using bench::GmmData;
using bench::MlpData;
using bench::gmm_loglik;
using bench::mlp_loss;

static void mlp_forward(benchmark::State& state) {
  MlpData d;
  for (auto _ : state) benchmark::DoNotOptimize(mlp_loss(d.p, d.x, d.y).impl().get());
}
BENCHMARK(mlp_forward)->Unit(benchmark::kMillisecond);

static void mlp_value_and_grad(benchmark::State& state) {
  MlpData d;
  auto vg = fx::value_and_grad(mlp_loss);
  for (auto _ : state) benchmark::DoNotOptimize(vg(d.p, d.x, d.y).first.impl().get());
}
BENCHMARK(mlp_value_and_grad)->Unit(benchmark::kMillisecond);

static void gmm_forward(benchmark::State& state) {
  GmmData d;
  for (auto _ : state) benchmark::DoNotOptimize(gmm_loglik(d.g, d.x).impl().get());
}
BENCHMARK(gmm_forward)->Unit(benchmark::kMillisecond);

static void gmm_value_and_grad(benchmark::State& state) {
  GmmData d;
  auto vg = fx::value_and_grad(gmm_loglik);
  for (auto _ : state) benchmark::DoNotOptimize(vg(d.g, d.x).first.impl().get());
}
BENCHMARK(gmm_value_and_grad)->Unit(benchmark::kMillisecond);

// Trace a 10,000-eqn function, differentiate it (jvp, partial eval, transpose) and simplify.
static void differentiate_10k(benchmark::State& state) {
  auto f = [](fx::Array x) {
    for (int i = 0; i < 2500; ++i) x = fx::sin(x * 1.001f + 0.5f) * x;  // 4 eqns per step
    return fx::sum(x);
  };
  fx::Array x = fx::ones({8});
  size_t eqns = 0;
  for (auto _ : state) {
    fx::Program p = fx::make_ir(fx::grad(f))(x);
    eqns = p.eqns.size();
    benchmark::DoNotOptimize(eqns);
  }
  state.counters["grad_eqns"] = double(eqns);
}
BENCHMARK(differentiate_10k)->Unit(benchmark::kMillisecond);
