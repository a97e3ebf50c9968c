// (b) Tracing cost per eqn: make_ir of a 10,000-eqn chain of elementwise ops. Target: <= 1 us/eqn.
#include <benchmark/benchmark.h>
#include <fluxion.h>

namespace fx = fluxion;

constexpr int kChainEqns = 10000;

// Three eqns per step (sin, mul by a literal, add of an input), 10,000 in all after the final sin.
static fx::Array chain(const fx::Array& x, const fx::Array& y) {
  fx::Array v = x;
  for (int i = 0; i < kChainEqns / 3; ++i) v = fx::sin(v) * 0.5f + y;
  return fx::sin(v);
}

static void trace_chain_10k(benchmark::State& state) {
  fx::Array x = fx::ones({16}), y = fx::ones({16});
  for (auto _ : state) {
    fx::Program p = fx::make_ir(chain)(x, y);
    if (p.eqns.size() != size_t(kChainEqns)) {
      state.SkipWithError("the chain did not trace to 10,000 eqns");
      break;
    }
    benchmark::DoNotOptimize(p.eqns.data());
  }
  state.counters["eqns"] = kChainEqns;
}
BENCHMARK(trace_chain_10k)->Unit(benchmark::kMillisecond);

// Baseline in the same run: the same 10,000 eqns appended to a Program directly (new_var, Eqn,
// push_back), which is the floor of any tracer that records into this representation.
static void baseline_build_program_10k(benchmark::State& state) {
  const fx::AbstractArray f32{fx::Shape{16}, fx::float32, false};
  const fx::Atom half(fx::Literal::of_double(0.5, fx::float32, true));
  for (auto _ : state) {
    fx::Program p;
    int32_t x = p.new_var(f32), y = p.new_var(f32);
    p.invars = {x, y};
    int32_t v = x;
    auto emit = [&](fx::Prim prim, std::vector<fx::Atom> ins) {
      fx::Eqn e;
      e.prim = prim;
      e.inputs = std::move(ins);
      e.outputs.push_back(p.new_var(f32));
      v = e.outputs[0];
      p.eqns.push_back(std::move(e));
    };
    for (int i = 0; i < kChainEqns / 3; ++i) {
      emit(fx::Prim::sin, {v});
      emit(fx::Prim::mul, {v, half});
      emit(fx::Prim::add, {v, y});
    }
    emit(fx::Prim::sin, {v});
    p.outvars = {v};
    benchmark::DoNotOptimize(p.eqns.data());
  }
  state.counters["eqns"] = kChainEqns;
}
BENCHMARK(baseline_build_program_10k)->Unit(benchmark::kMillisecond);
