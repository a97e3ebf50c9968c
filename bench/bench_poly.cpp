// Shape polymorphism (issue 32's target): the MLP training step (784-512-10, SGD) jitted once with a
// symbolic batch against the same step jitted for each fixed batch, in one run. Both sides warmed
// up; best of `repeats` calls. Also the compile time of each side.
// Usage: fluxion_bench_poly [repeats]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <fluxion.h>

#include "bench/models.h"
#include "bench/timing.h"

namespace fx = fluxion;

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 20;
  setenv("FLUXION_CACHE_DIR", "off", 1);  // cold compiles: the compile columns measure the compiler
  const bench::MlpData data;
  const bench::Mlp p = data.p;
  auto step = [p](const fx::Array& x, const fx::Array& y) {
    auto [loss, g] = fx::value_and_grad(bench::mlp_loss)(p, x, y);
    return std::pair{loss, bench::Mlp{p.w1 - 0.01f * g.w1, p.b1 - 0.01f * g.b1, p.w2 - 0.01f * g.w2, p.b2 - 0.01f * g.b2}};
  };
  auto poly = fx::jit(step, fx::polymorphic_shapes("b, 784", "b, 10"));
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  const char* threads = std::getenv("FLUXION_NUM_THREADS");
  std::printf("MLP step 784-512-10, best of %d, FLUXION_NUM_THREADS=%s\n", repeats, threads ? threads : "(default)");
  std::printf("%6s %12s %12s %8s %14s %14s\n", "batch", "fixed ms", "poly ms", "ratio", "fixed compile", "poly 1st call");
  for (int64_t b : {1, 7, 64, 256, 1000}) {
    const fx::Array x = fx::random::normal(fx::random::key(uint32_t(b)), {b, 784});
    const fx::Array y = fx::nn::one_hot(fx::random::randint(fx::random::key(7), {b}, 0, 10), 10);
    auto fixed = fx::jit(step);
    auto t = Clock::now();
    fixed(x, y).first.block_until_ready();
    const double fixed_compile = ms_since(t);
    t = Clock::now();
    poly(x, y).first.block_until_ready();
    const double poly_first = ms_since(t);  // compiles on the first batch only
    const double f = fluxion_bench::best_ms([&] { fixed(x, y).first.block_until_ready(); }, repeats);
    const double q = fluxion_bench::best_ms([&] { poly(x, y).first.block_until_ready(); }, repeats);
    std::printf("%6lld %12.3f %12.3f %7.2fx %11.1f ms %11.1f ms\n", (long long)b, f, q, f / q, fixed_compile, poly_first);
  }
  std::printf("polymorphic compilations: %lld (one for every batch)\n", (long long)poly.compilations());
}
