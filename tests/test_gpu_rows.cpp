// Reductions on the GPU as one block per row (lowering/gpu_rows.cpp): the launch plans -- a row
// reduction with its producer, softmax and layer norm as one kernel -- and the values of reductions
// in every kind and dtype, over rows of every length class, against the same computation on the
// CPU. The values need a GPU: the emulated one in CI (FLUXION_CUDA_DRIVER=emulate, the meson test
// gpu_emulated), whose fibers run each block's threads to its barriers and shuffles as a GPU does.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "interpreters/jit_passes.h"
#include "gpu_compare.h"
#include "lowering/compile_cuda.h"
#include "test_helpers.h"

namespace fx = fluxion;
using namespace gpu_compare;
using test_helpers::ramp;

TEST_CASE("gpu rows: a reduction over rows is one block per row, its elementwise producer inside" *
          doctest::skip(no_toolkit())) {
  const Fn f = [](const fx::Array& a) { return fx::sum(fx::exp(a) * 2.f, {1}); };
  const fx::runtime::GpuProgram g = compiled(f, fx::zeros({300, 1000}));
  REQUIRE(g.launches.size() == 1);
  CHECK(g.launches[0].grid == std::array<uint32_t, 3>{300, 1, 1});
  CHECK(g.launches[0].block == std::array<uint32_t, 3>{256, 1, 1});
  CHECK(g.temporary_bytes.empty());
  // A row of 40: one block of 64 threads (whole warps) per row.
  const fx::runtime::GpuProgram g40 = compiled([](const fx::Array& a) { return fx::max(a, {1}); }, fx::zeros({100, 40}));
  REQUIRE(g40.launches.size() == 1);
  CHECK(g40.launches[0].grid == std::array<uint32_t, 3>{100, 1, 1});
  CHECK(g40.launches[0].block == std::array<uint32_t, 3>{64, 1, 1});
  // Rows of 8 stay a thread per row (fill, then the reduction): a block would idle 24 of 32 lanes.
  const fx::runtime::GpuProgram g8 = compiled([](const fx::Array& a) { return fx::sum(a, {1}); }, fx::zeros({1000, 8}));
  for (const auto& l : g8.launches) CHECK(l.grid[0] < 1000);
  // A full reduction: one block striding over everything.
  const fx::runtime::GpuProgram all = compiled([](const fx::Array& a) { return fx::sum(a * a); }, fx::zeros({50, 60}));
  REQUIRE(all.launches.size() == 1);
  CHECK(all.launches[0].grid == std::array<uint32_t, 3>{1, 1, 1});
}

TEST_CASE("gpu rows: the GPU check's softmax and row sums of 8192 x 8192 are one block of 256 threads per row" *
          doctest::skip(no_toolkit())) {
  // As tests/test_gpu_bundle.cpp writes them for the GPU check (through jit's passes).
  const fx::Array x = fx::zeros({8192, 8192});
  for (const auto& [name, f] : {std::pair<const char*, Fn>{"softmax", [](const fx::Array& a) { return fx::nn::softmax(a, -1); }},
                                std::pair<const char*, Fn>{"rowsum", [](const fx::Array& a) { return fx::sum(a, {1}); }}}) {
    CAPTURE(name);
    const fx::runtime::GpuProgram g = fx::lowering::compile_cuda(fx::jit_passes(fx::make_ir(f)(x), name), {});
    REQUIRE(g.launches.size() == 1);
    CHECK(g.launches[0].grid == std::array<uint32_t, 3>{8192, 1, 1});
    CHECK(g.launches[0].block == std::array<uint32_t, 3>{256, 1, 1});
    for (size_t bytes : g.temporary_bytes) CHECK(bytes <= 8192 * 4);  // per-row statistics at most
  }
}

TEST_CASE("gpu rows: a full reduction or a few long rows are split over many blocks, then folded" *
          doctest::skip(no_toolkit())) {
  // 2^20 elements: 256 blocks of 256 threads, 16 elements each, then one block folds their totals.
  const fx::runtime::GpuProgram full = compiled([](const fx::Array& a) { return fx::sum(fx::exp(a)); }, fx::zeros({1 << 20}));
  REQUIRE(full.launches.size() == 2);
  CHECK(full.launches[0].grid == std::array<uint32_t, 3>{256, 1, 1});
  CHECK(full.launches[0].block == std::array<uint32_t, 3>{256, 1, 1});
  CHECK(full.launches[1].grid == std::array<uint32_t, 3>{1, 1, 1});
  CHECK(full.launches[1].block == std::array<uint32_t, 3>{256, 1, 1});
  // The partial totals, and the scalar that bufferization makes for the sum before copying it out.
  std::vector<size_t> temporaries = full.temporary_bytes;
  std::sort(temporaries.begin(), temporaries.end());
  CHECK(temporaries == std::vector<size_t>{4, 256 * 4});
  // 4 rows of 2^18: 64 blocks per row.
  const fx::runtime::GpuProgram few = compiled([](const fx::Array& a) { return fx::max(a, {1}); }, fx::zeros({4, 1 << 18}));
  REQUIRE(few.launches.size() == 2);
  CHECK(few.launches[0].grid == std::array<uint32_t, 3>{4 * 64, 1, 1});
  CHECK(few.launches[1].grid == std::array<uint32_t, 3>{4, 1, 1});
  CHECK(few.launches[1].block == std::array<uint32_t, 3>{64, 1, 1});
}

TEST_CASE("gpu rows: softmax and layer norm are one kernel per row; exp(x - max) is recomputed, not stored" *
          doctest::skip(no_toolkit())) {
  const fx::Array x = fx::zeros({64, 512});
  const fx::runtime::GpuProgram s = compiled([](const fx::Array& a) { return fx::nn::softmax(a, -1); }, x);
  REQUIRE(s.launches.size() == 1);
  CHECK(s.launches[0].grid == std::array<uint32_t, 3>{64, 1, 1});
  for (size_t bytes : s.temporary_bytes) CHECK(bytes <= 64 * 4);  // the rows' max and sum only
  const fx::Array scale = fx::ones({512}), bias = fx::zeros({512});
  const fx::runtime::GpuProgram n = compiled([&](const fx::Array& a) { return fx::nn::layer_norm(a, scale, bias); }, x);
  REQUIRE(n.launches.size() == 1);
  CHECK(n.launches[0].grid == std::array<uint32_t, 3>{64, 1, 1});
}

TEST_CASE("gpu rows: every reduction kind and dtype over rows long and short, partial blocks, full and multi-axis" *
          doctest::skip(no_gpu())) {
  const std::vector<fx::Shape> shapes{{37, 300}, {3, 1000}, {5, 33}, {777}, {2, 3, 4, 50}};
  for (fx::DType d : {fx::float32, fx::float64, fx::float16, fx::bfloat16, fx::int32, fx::int64, fx::int8, fx::uint8,
                      fx::uint32}) {
    for (const fx::Shape& shape : shapes) {
      CAPTURE(fx::dtype_name(d));
      CAPTURE(shape.str());
      const bool is_signed = d != fx::uint8 && d != fx::uint32;
      const fx::Array x = values(shape, d, is_signed ? -100.f : 0.f, 100.f);
      const int64_t last = shape.rank() - 1;
      const fx::Axes inner = shape.rank() == 4 ? fx::Axes{2, 3} : fx::Axes{last};
      const double tol = tolerance(d);
      // A sum near zero (the ramp is symmetric) differs by the order of the additions: up to about
      // 1e-5 of the sum of magnitudes (50 per element) when accumulating in f32.
      const double order = (d == fx::float64 ? 1e-13 : fx::is_float(d) ? 1e-5 : 0) * 50.0 * double(shape.numel());
      check_like_cpu([&](const fx::Array& a) { return fx::sum(a, inner); }, x, tol, order);
      check_like_cpu([&](const fx::Array& a) { return fx::max(a, inner); }, x, 0);
      check_like_cpu([&](const fx::Array& a) { return fx::min(a, inner, /*keepdims=*/true); }, x, 0);
      // Products near 1 (floats stay finite; integers wrap the same way in any order).
      const fx::Array near_one = fx::astype(values(shape, fx::float32, 0.99f, 1.01f), d);
      check_like_cpu([&](const fx::Array& a) { return fx::prod(a, inner); }, fx::is_float(d) ? near_one : x, tol * 10);
    }
  }
  for (const fx::Shape& shape : shapes) {  // bools: all, any
    CAPTURE(shape.str());
    const fx::Array b = values(shape, fx::float32, -1.f, 300.f) > 0.f;
    const fx::Axes inner{shape.rank() - 1};
    check_like_cpu([&](const fx::Array& a) { return fx::all(a, inner); }, b, 0);
    check_like_cpu([&](const fx::Array& a) { return fx::any(a, inner); }, b, 0);
    check_like_cpu([&](const fx::Array& a) { return fx::all(a); }, fx::logical_not(b), 0);
  }
}

TEST_CASE("gpu rows: split reductions give the CPU's values" * doctest::skip(no_gpu())) {
  for (const fx::Shape& shape : {fx::Shape{100003}, fx::Shape{3, 40000}}) {
    CAPTURE(shape.str());
    const fx::Array x = values(shape, fx::float32, -1.f, 3.f);
    const fx::Axes inner{shape.rank() - 1};
    check_like_cpu([&](const fx::Array& a) { return fx::sum(fx::exp(a), inner); }, x, 1e-5);
    check_like_cpu([&](const fx::Array& a) { return fx::max(a, inner); }, x, 0);
    check_like_cpu([&](const fx::Array& a) { return fx::min(fx::astype(a * 100.f, fx::int32), inner); }, x, 0);
    check_like_cpu([&](const fx::Array& a) { return fx::nn::softmax(a, -1); }, x, 2e-5, 1e-12);
  }
}

TEST_CASE("gpu rows: softmax, log-softmax, layer norm, mean and var over rows give the CPU's values" *
          doctest::skip(no_gpu())) {
  for (const fx::Shape& shape : {fx::Shape{37, 1000}, fx::Shape{8, 64}, fx::Shape{4, 3, 300}}) {
    CAPTURE(shape.str());
    const fx::Array x = fx::sin(values(shape, fx::float32, -50.f, 50.f)) * 4.f;
    const int64_t k = shape[size_t(shape.rank() - 1)];
    const fx::Array scale = fx::array(ramp(k, 0.5f, 1.5f)), bias = fx::array(ramp(k, -1.f, 1.f));
    check_like_cpu([](const fx::Array& a) { return fx::nn::softmax(a, -1); }, x, 2e-5, 1e-9);
    check_like_cpu([](const fx::Array& a) { return fx::nn::log_softmax(a, -1); }, x, 2e-5, 1e-6);
    check_like_cpu([&](const fx::Array& a) { return fx::nn::layer_norm(a, scale, bias); }, x, 2e-5, 1e-5);
    check_like_cpu([](const fx::Array& a) { return fx::mean(a, {-1}) + fx::var(a, {-1}); }, x, 2e-5, 1e-6);
    check_like_cpu([](const fx::Array& a) { return fx::logsumexp(a, {-1}); }, x, 2e-5, 1e-6);
    // f16 and bf16 rows: accumulated in f32 on both sides.
    check_like_cpu([](const fx::Array& a) { return fx::nn::softmax(a, -1); }, fx::astype(x, fx::bfloat16), 1e-2, 1e-4);
    check_like_cpu([](const fx::Array& a) { return fx::nn::softmax(a, -1); }, fx::astype(x, fx::float16), 2e-3, 1e-5);
  }
}

TEST_CASE("gpu rows: NaN and infinities propagate through row maxima and sums as on the CPU" * doctest::skip(no_gpu())) {
  std::vector<float> v = ramp(4 * 300, -3.f, 3.f);
  v[10] = std::nanf("");          // row 0: a NaN
  v[300 + 7] = INFINITY;          // row 1: +inf
  v[600 + 299] = -INFINITY;       // row 2: -inf
  const fx::Array x = fx::array(v, {4, 300});
  check_like_cpu([](const fx::Array& a) { return fx::max(a, {1}); }, x, 0);
  check_like_cpu([](const fx::Array& a) { return fx::min(a, {1}); }, x, 0);
  check_like_cpu([](const fx::Array& a) { return fx::sum(a, {1}); }, x, 2e-5);
  check_like_cpu([](const fx::Array& a) { return fx::nn::softmax(a, -1); }, x, 2e-5, 1e-9);
}

TEST_CASE("gpu rows: a temporary read elsewhere in its row is stored, and the readers wait for it" *
          doctest::skip(no_gpu())) {
  // exp(x) is read reversed within the row: the kernel stores it, and a barrier separates the
  // threads that write an element from the one that reads it.
  const fx::Array x = values({37, 600}, fx::float32, -2.f, 2.f);
  check_like_cpu([](const fx::Array& a) {
    const fx::Array e = fx::exp(a);
    return fx::flip(e, {1}) / fx::sum(e, {1}, true) + e;
  }, x, 2e-5);
  // After the row's only reduction, a neighbour's element: no all-reduce (whose own barriers
  // order the threads) stands between the writers of e and its readers.
  check_like_cpu([](const fx::Array& a) {
    const fx::Array m = fx::max(a, {1}, true), e = fx::exp(a - m);
    return fx::slice(e, {0, 1}, {37, 600}) * m + fx::slice(e, {0, 0}, {37, 599});
  }, x, 2e-5, 1e-6);
  // Two reductions of one row and a product of their results.
  check_like_cpu([](const fx::Array& a) { return fx::max(a, {1}) * fx::sum(a * a, {1}) - fx::min(a, {1}); }, x, 2e-5, 1e-4);
}
