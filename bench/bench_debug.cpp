// The cost of fx::debug::print on a path that does not run: a jitted function whose print sits in
// a cond branch that is not taken, against the same function without the print (same run).
// Target (issue 16): <= 1.1x.
#include <benchmark/benchmark.h>
#include <fluxion.h>

namespace fx = fluxion;

namespace {
constexpr int64_t kSize = 4096;

fx::Array step(const fx::Array& x, bool with_print) {
  fx::Array y = fx::tanh(x) * 1.5f + x;
  return fx::cond(fx::max(y) > 1e30f, [&] {
    if (with_print) fx::debug::print("overflowing: {}", y);
    return y * 0.f;
  }, [&] { return y; });
}

void run(benchmark::State& state, bool with_print) {
  auto f = fx::jit([with_print](const fx::Array& x) { return step(x, with_print); });
  fx::Array x = fx::random::normal(fx::random::key(1), {kSize});
  f(x);
  for (auto _ : state) benchmark::DoNotOptimize(f(x).impl().get());
}
}  // namespace

static void debug_print_untaken_baseline(benchmark::State& state) { run(state, false); }
static void debug_print_untaken(benchmark::State& state) { run(state, true); }
BENCHMARK(debug_print_untaken_baseline);
BENCHMARK(debug_print_untaken);
