// Autodiff costs, each against its forward computation in the same run:
//   * gradient-to-forward time ratio of a 2-layer MLP loss (batch 256, 784-512-10) and of a GMM
//     log-likelihood (d=10, K=25, n=1000), both through the eager interpreter (jit comes later);
//     the ratio is what a user pays for a gradient (hand-written adjoints reach 2-2.5 on GMM);
//   * trace + differentiate + simplify of a 10,000-eqn function (target <= 50 ms).
#include <benchmark/benchmark.h>
#include <fluxion.h>

#include <cmath>

#include "transforms/vjp.h"

namespace fx = fluxion;

namespace {
struct Mlp {
  fx::Array w1, b1, w2, b2;
};
FLUXION_TREE(Mlp, w1, b1, w2, b2);

fx::Array mlp_loss(const Mlp& p, const fx::Array& x, const fx::Array& y) {
  fx::Array h = fx::nn::relu(fx::matmul(x, p.w1) + p.b1);
  return -fx::mean(fx::sum(fx::nn::log_softmax(fx::matmul(h, p.w2) + p.b2) * y, -1));
}

struct Gmm {
  fx::Array alphas, means, log_sigmas;
};
FLUXION_TREE(Gmm, alphas, means, log_sigmas);

fx::Array gmm_loglik(const Gmm& g, const fx::Array& x) {
  fx::Array diff = fx::expand_dims(x, 1) - fx::expand_dims(g.means, 0);
  fx::Array z = diff * fx::exp(-g.log_sigmas);
  fx::Array comp = fx::nn::log_softmax(g.alphas) - fx::sum(g.log_sigmas, -1) - 0.5 * fx::sum(z * z, -1);
  return fx::sum(fx::logsumexp(comp, -1));
}

struct MlpData {
  Mlp p;
  fx::Array x, y;
  MlpData() {
    auto k = fx::random::key(0);
    p = {fx::random::normal(fx::random::fold_in(k, 1), {784, 512}) * 0.05f, fx::zeros({512}),
         fx::random::normal(fx::random::fold_in(k, 2), {512, 10}) * 0.05f, fx::zeros({10})};
    x = fx::random::normal(fx::random::fold_in(k, 3), {256, 784});
    y = fx::nn::one_hot(fx::random::randint(fx::random::fold_in(k, 4), {256}, 0, 10), 10);
  }
};
struct GmmData {
  Gmm g;
  fx::Array x;
  GmmData() {
    auto k = fx::random::key(1);
    g = {fx::random::normal(fx::random::fold_in(k, 1), {25}), fx::random::normal(fx::random::fold_in(k, 2), {25, 10}),
         fx::random::normal(fx::random::fold_in(k, 3), {25, 10}) * 0.1f};
    x = fx::random::normal(fx::random::fold_in(k, 4), {1000, 10});
  }
};
}  // namespace

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
