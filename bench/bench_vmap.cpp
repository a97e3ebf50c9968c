// Per-example gradients of an MLP loss (batch 256, 784-128-10), three ways in one run:
//   * jit(vmap(grad(loss)))                       -- the transform
//   * jit(hand-batched per-example gradients)      -- the same math written batched by hand with the
//                                                    same primitives (einsum/matmul); target: the
//                                                    transform at >= 0.9x of it
//   * a C++ loop of jit(grad(loss)) calls          -- what vmap saves (reported as a speed-up);
//                                                    it keeps all 256 results, like the others
#include <benchmark/benchmark.h>
#include <fluxion.h>

#include <vector>

#include "models.h"

namespace fx = fluxion;

namespace {
using bench::Mlp;

constexpr int64_t kBatch = 256, kIn = 784, kHidden = 128, kOut = 10;

const auto example_loss = bench::mlp_example_loss;  // one example: x[784], y[10]

// The per-example gradients of example_loss for a whole batch, derived by hand.
Mlp hand_batched(const Mlp& p, const fx::Array& x, const fx::Array& y) {  // x[B,784], y[B,10]
  fx::Array pre = fx::matmul(x, p.w1) + p.b1;
  fx::Array h = fx::nn::relu(pre);
  fx::Array logits = fx::matmul(h, p.w2) + p.b2;
  fx::Array d2 = fx::nn::softmax(logits) * fx::sum(y, -1, true) - y;          // [B,10]
  fx::Array d1 = fx::matmul(d2, fx::transpose(p.w2)) * fx::astype(pre > 0.f, fx::float32);  // [B,128]
  return Mlp{fx::einsum("bi,bh->bih", x, d1), d1, fx::einsum("bh,bo->bho", h, d2), d2};
}

struct Data {
  Mlp p;
  fx::Array x, y;
  Data() {
    auto k = fx::random::key(0);
    p = {fx::random::normal(fx::random::fold_in(k, 1), {kIn, kHidden}) * 0.05f, fx::zeros({kHidden}),
         fx::random::normal(fx::random::fold_in(k, 2), {kHidden, kOut}) * 0.05f, fx::zeros({kOut})};
    x = fx::random::normal(fx::random::fold_in(k, 3), {kBatch, kIn});
    y = fx::nn::one_hot(fx::random::randint(fx::random::fold_in(k, 4), {kBatch}, 0, kOut), kOut);
  }
};
}  // namespace

static void per_example_vmap_grad_jit(benchmark::State& state) {
  Data d;
  auto f = fx::jit(fx::vmap(fx::grad(example_loss), fx::in_axes(fx::none, 0, 0)));
  for (auto _ : state) benchmark::DoNotOptimize(f(d.p, d.x, d.y).w1.impl().get());
}
BENCHMARK(per_example_vmap_grad_jit)->Unit(benchmark::kMillisecond);

static void baseline_per_example_hand_batched_jit(benchmark::State& state) {
  Data d;
  auto f = fx::jit(hand_batched);
  for (auto _ : state) benchmark::DoNotOptimize(f(d.p, d.x, d.y).w1.impl().get());
}
BENCHMARK(baseline_per_example_hand_batched_jit)->Unit(benchmark::kMillisecond);

static void baseline_per_example_loop_of_jit_grad(benchmark::State& state) {
  Data d;
  auto g = fx::jit(fx::grad(example_loss));
  std::vector<fx::Array> xs, ys;
  for (int64_t i = 0; i < kBatch; ++i) {
    xs.push_back(fx::reshape(fx::slice(d.x, {i, 0}, {i + 1, kIn}), {kIn}));
    ys.push_back(fx::reshape(fx::slice(d.y, {i, 0}, {i + 1, kOut}), {kOut}));
  }
  // The loop keeps its 256 results, as the batched versions do (and as a user who clips or sums
  // per-example gradients must): discarding each one at once let every call reuse the same
  // L2-resident buffers, and the loop looked faster than writing the 103 MB of w1 gradients.
  std::vector<Mlp> grads(static_cast<size_t>(kBatch));
  for (auto _ : state) {
    for (int64_t i = 0; i < kBatch; ++i) grads[size_t(i)] = g(d.p, xs[size_t(i)], ys[size_t(i)]);
    benchmark::DoNotOptimize(grads.back().w1.impl().get());
  }
}
BENCHMARK(baseline_per_example_loop_of_jit_grad)->Unit(benchmark::kMillisecond);
