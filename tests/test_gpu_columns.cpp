// Reductions over outer dimensions on the GPU (lowering/gpu_columns.cpp): a launch of partial
// totals over interleaved slices of the reduced extent, then a fold per output element -- the
// launch plans (which reductions take the path, the output's fill absorbed), the values of every
// kind and dtype against the CPU at edge sizes, and the launch plans of the MLP training step and
// the GMM value_and_grad of the GPU check. The values need a GPU: the emulated one in CI
// (FLUXION_CUDA_DRIVER=emulate, the meson test gpu_emulated).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <string>
#include <vector>

#include "bench/models.h"
#include "gpu_compare.h"
#include "interpreters/jit_passes.h"
#include "lowering/compile_cuda.h"
#include "test_helpers.h"

namespace fx = fluxion;
using namespace gpu_compare;
using Arrays = std::vector<fx::Array>;
using Grid = std::array<uint32_t, 3>;

TEST_CASE("gpu columns: a column sum is a launch of partials over slices of the batch, then a fold" *
          doctest::skip(no_toolkit())) {
  // [1000, 128] over the rows: 63 slices of 16 rows (1000 / 16, fewer than 65536 / 128), so 63 x 128
  // threads; the fold: a thread per column. The output's fill is the fold's start: no launch.
  const fx::runtime::GpuProgram g = compiled([](const fx::Array& a) { return fx::sum(fx::exp(a) * 2.f, {0}); },
                                             fx::zeros({1000, 128}));
  REQUIRE(g.launches.size() == 2);
  CHECK(g.launches[0].grid == Grid{(63 * 128 + 255) / 256, 1, 1});
  CHECK(g.launches[0].block == Grid{256, 1, 1});
  CHECK(g.launches[1].grid == Grid{1, 1, 1});
  CHECK(g.temporary_bytes == std::vector<size_t>{63 * 128 * 4});
  // A bias gradient's shape, [256, 10]: 16 slices.
  const fx::runtime::GpuProgram b = compiled([](const fx::Array& a) { return fx::max(a, {0}); }, fx::zeros({256, 10}));
  REQUIRE(b.launches.size() == 2);
  CHECK(b.temporary_bytes == std::vector<size_t>{16 * 10 * 4});
  // The GMM's sums over the points of each component: [K=25, n=1000, d=10] over n, kept (K, d).
  const fx::runtime::GpuProgram m = compiled([](const fx::Array& a) { return fx::sum(a, {1}); }, fx::zeros({25, 1000, 10}));
  REQUIRE(m.launches.size() == 2);
  CHECK(m.temporary_bytes == std::vector<size_t>{63 * 250 * 4});
}

TEST_CASE("gpu columns: reductions with enough outputs, or short ones, keep a thread per output" *
          doctest::skip(no_toolkit())) {
  // 65536 outputs fill the GPU already; 20 rows are too few to split.
  for (const fx::Shape& shape : {fx::Shape{64, 65536}, fx::Shape{20, 100}}) {
    CAPTURE(shape.str());
    const fx::runtime::GpuProgram g = compiled([](const fx::Array& a) { return fx::sum(a, {0}); }, fx::zeros(shape));
    CHECK(g.temporary_bytes.empty());  // no partials
    CHECK(g.launches.size() == 2);     // the fill, then a thread per output
  }
}

TEST_CASE("gpu columns: every reduction kind and dtype over outer dims, at edge sizes" * doctest::skip(no_gpu())) {
  struct Case {
    fx::Shape shape;
    fx::Axes axes;
  };
  // One output, odd extents, more slices than a block, outputs not a multiple of a warp, a middle
  // axis (the GMM's), an outer run of two axes, and outer plus inner axes (rows first, then columns).
  const std::vector<Case> cases{{{257, 1}, {0}},       {{33, 7}, {0}},        {{1000, 33}, {0}}, {{5, 300, 3}, {1}},
                                {{64, 2, 33}, {0, 1}}, {{40, 6, 50}, {0, 2}}, {{4100, 3}, {0}}};
  for (fx::DType d : {fx::float32, fx::float64, fx::float16, fx::bfloat16, fx::int32, fx::int64, fx::int8, fx::uint8,
                      fx::uint32}) {
    for (const Case& c : cases) {
      CAPTURE(fx::dtype_name(d));
      CAPTURE(c.shape.str());
      const bool is_signed = d != fx::uint8 && d != fx::uint32;
      const fx::Array x = values(c.shape, d, is_signed ? -100.f : 0.f, 100.f);
      const double tol = tolerance(d);
      // The order of the additions differs from the CPU's: up to about 1e-5 of the sum of
      // magnitudes (50 per element) when accumulating in f32.
      const double order = (d == fx::float64 ? 1e-13 : fx::is_float(d) ? 1e-5 : 0) * 50.0 * double(c.shape.numel());
      check_like_cpu([&](const fx::Array& a) { return fx::sum(a, c.axes); }, x, tol, order);
      check_like_cpu([&](const fx::Array& a) { return fx::max(a, c.axes); }, x, 0);
      check_like_cpu([&](const fx::Array& a) { return fx::min(a, c.axes, /*keepdims=*/true); }, x, 0);
      const fx::Array near_one = fx::astype(values(c.shape, fx::float32, 0.999f, 1.001f), d);
      check_like_cpu([&](const fx::Array& a) { return fx::prod(a, c.axes); }, fx::is_float(d) ? near_one : x, tol * 10);
    }
  }
  for (const Case& c : cases) {  // bools: all, any
    CAPTURE(c.shape.str());
    const fx::Array b = values(c.shape, fx::float32, -1.f, 300.f) > 0.f;
    check_like_cpu([&](const fx::Array& a) { return fx::all(a, c.axes); }, b, 0);
    check_like_cpu([&](const fx::Array& a) { return fx::any(a, c.axes); }, fx::logical_not(b), 0);
  }
}

TEST_CASE("gpu columns: mean, var, fused producers, NaN and infinities over outer dims as on the CPU" *
          doctest::skip(no_gpu())) {
  const fx::Array x = fx::sin(values({300, 70}, fx::float32, -50.f, 50.f)) * 4.f;
  // 300 f32 terms in another order than the CPU's (19 slices, then their fold; var's E[x^2] -
  // E[x]^2 cancels): differences of up to about 1e-4 relative, 3e-4 seen.
  const double rtol = 1e-4, atol = 1e-3;
  check_like_cpu([](const fx::Array& a) { return fx::mean(a, {0}) + fx::var(a, {0}); }, x, rtol, atol);
  check_like_cpu([](const fx::Array& a) { return fx::sum(fx::nn::relu(a) * fx::exp(a * 0.1f), {0}); }, x, rtol, atol);
  check_like_cpu([](const fx::Array& a) { return fx::logsumexp(a, {0}); }, x, rtol, atol);
  check_like_cpu([](const fx::Array& a) { return fx::sum(a, {0}) * fx::max(a, {0}); }, x, rtol, atol);
  std::vector<float> v = test_helpers::ramp(300 * 4, -3.f, 3.f);
  v[4 * 10] = std::nanf("");           // column 0: a NaN
  v[4 * 200 + 1] = INFINITY;           // column 1: +inf
  v[4 * 299 + 2] = -INFINITY;          // column 2: -inf
  const fx::Array y = fx::array(v, {300, 4});
  check_like_cpu([](const fx::Array& a) { return fx::max(a, {0}); }, y, 0);
  check_like_cpu([](const fx::Array& a) { return fx::min(a, {0}); }, y, 0);
  check_like_cpu([](const fx::Array& a) { return fx::sum(a, {0}); }, y, 2e-5, 1e-5);
}

namespace {

// The GPU check's programs (tests/test_gpu_bundle_bench.cpp's `models`, full size) as jit
// compiles them: the MLP step (batch 256, 784-512-10) and the GMM value_and_grad (n=1000, K=25, d=10).
fx::runtime::GpuProgram mlp_step() {
  const int64_t b = 256, i = 784, h = 512, o = 10;
  const Arrays mlp{fx::zeros({i, h}), fx::zeros({h}), fx::zeros({h, o}), fx::zeros({o}), fx::zeros({b, i}), fx::zeros({b, o})};
  auto step = [](const Arrays& a) {
    const bench::Mlp p{a[0], a[1], a[2], a[3]};
    auto [loss, g] = fx::value_and_grad(bench::mlp_loss)(p, a[4], a[5]);
    return Arrays{loss, p.w1 - 0.01f * g.w1, p.b1 - 0.01f * g.b1, p.w2 - 0.01f * g.w2, p.b2 - 0.01f * g.b2};
  };
  return fx::lowering::compile_cuda(fx::jit_passes(fx::make_ir(step)(mlp), "mlp_step"), {});
}

fx::runtime::GpuProgram gmm_value_and_grad() {
  const int64_t n = 1000, k = 25, d = 10;
  const Arrays gmm{fx::zeros({k}), fx::zeros({k, d}), fx::zeros({k, d}), fx::zeros({n, d})};
  auto vg = [](const Arrays& a) {
    auto [v, g] = fx::value_and_grad(bench::gmm_loglik)(bench::Gmm{a[0], a[1], a[2]}, a[3]);
    return Arrays{v, g.alphas, g.means, g.log_sigmas};
  };
  return fx::lowering::compile_cuda(fx::jit_passes(fx::make_ir(vg)(gmm), "gmm"), {});
}

// The launches of kind k, and the most threads of one kernel launch.
size_t count(const fx::runtime::GpuProgram& g, fx::runtime::GpuLaunch::Kind k) {
  size_t n = 0;
  for (const auto& l : g.launches) n += l.kind == k;
  return n;
}

// The launches whose threads are fewer than `threads` while each runs a serial loop: what this
// pass removes. Measured by the launch's size alone: grid x block threads.
size_t small_launches(const fx::runtime::GpuProgram& g, uint64_t threads) {
  size_t n = 0;
  for (const auto& l : g.launches)
    if (l.kind == fx::runtime::GpuLaunch::Kind::kernel && uint64_t(l.grid[0]) * l.block[0] < threads) ++n;
  return n;
}

}  // namespace

TEST_CASE("gpu columns: the MLP step's GEMMs are library steps and its bias gradients column kernels" *
          doctest::skip(no_toolkit())) {
  const fx::runtime::GpuProgram g = mlp_step();
  using K = fx::runtime::GpuLaunch::Kind;
  MESSAGE("MLP step: " << g.launches.size() << " launches, " << count(g, K::library) << " of them cuBLAS");
  // x.w1, h.w2 forward; h^T.g2, g2.w2^T, x^T.g1 backward: every one a cuBLAS call.
  CHECK(count(g, K::library) == 5);
  // The bias gradients (sums over the batch of 256) are 16 slices x 512 and 16 x 10 threads.
  CHECK(g.temporary_bytes.size() >= 2);
  const fx::runtime::GpuProgram m = gmm_value_and_grad();
  MESSAGE("GMM value_and_grad: " << m.launches.size() << " launches, " << small_launches(m, 256) << " of under 256 threads");
}
