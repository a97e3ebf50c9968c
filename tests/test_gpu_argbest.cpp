// argmax/argmin over rows on the GPU as one block per row (lowering/gpu_rows.cpp, reduce_arg): the
// launch plan, and the indices against the CPU's on the emulated GPU (FLUXION_CUDA_DRIVER=emulate,
// the meson test gpu_emulated) -- ties (the first index wins), NaN (the first NaN wins), rows of
// -inf or of one repeated value, rows shorter than a warp, odd, and longer than a block, in every
// dtype argmax takes.
#include <doctest/doctest.h>
#include <fluxion.h>

#include "gpu_compare.h"
#include "lowering/compile_cuda.h"

namespace fx = fluxion;

namespace {

using gpu_compare::Fn;
using gpu_compare::no_gpu;
using gpu_compare::no_toolkit;

// jit on the GPU gives exactly what eager on the CPU gives (indices: no tolerance).
void check_like_cpu(const Fn& f, const fx::Array& x) { gpu_compare::check_like_cpu(f, x, /*rtol=*/0); }

// rows x k values in [0, 101) with many ties: each value recurs every 101 elements, the row's
// maximum and minimum at a row-dependent place.
std::vector<float> tied(int64_t rows, int64_t k) {
  std::vector<float> v(size_t(rows * k));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) v[size_t(r * k + j)] = float(((j + 13 * r) * 37) % 101);
  return v;
}

}  // namespace

TEST_CASE("gpu argmax: argmax and argmin over rows are one block per row, the index conversion inside" *
          doctest::skip(no_toolkit())) {
  const Fn f = [](const fx::Array& a) { return fx::argmax(fx::exp(a), 1); };
  const fx::runtime::GpuProgram g = gpu_compare::compiled(f, fx::zeros({300, 1000}));
  REQUIRE(g.launches.size() == 1);
  CHECK(g.launches[0].grid == std::array<uint32_t, 3>{300, 1, 1});
  CHECK(g.launches[0].block == std::array<uint32_t, 3>{256, 1, 1});
  // A row of 40: 64 threads; a full argmin of 5000: one block of 256 (the rank-0 index's
  // conversion is a launch of its own).
  const Fn h = [](const fx::Array& a) { return fx::argmin(a, 1); };
  const fx::runtime::GpuProgram g40 = fx::lowering::compile_cuda(fx::make_ir(h)(fx::zeros({100, 40}, fx::int32)), {});
  REQUIRE(g40.launches.size() == 1);
  CHECK(g40.launches[0].block == std::array<uint32_t, 3>{64, 1, 1});
  const Fn all = [](const fx::Array& a) { return fx::argmin(a); };
  const fx::runtime::GpuProgram g1 = fx::lowering::compile_cuda(fx::make_ir(all)(fx::zeros({5000})), {});
  int blocks = 0;
  for (const auto& l : g1.launches)
    blocks += l.grid == std::array<uint32_t, 3>{1, 1, 1} && l.block == std::array<uint32_t, 3>{256, 1, 1};
  CHECK(g1.launches.size() <= 2);
  CHECK(blocks == 1);
}

TEST_CASE("gpu argmax: indices over rows of every length class and dtype, ties first" * doctest::skip(no_gpu())) {
  for (const auto& [rows, k] : {std::pair<int64_t, int64_t>{7, 1000}, {33, 300}, {5, 33}, {3, 32}, {4, 31}, {1, 4099}, {6, 257}}) {
    const fx::Array x = fx::array(tied(rows, k), {rows, k});
    for (fx::DType d : {fx::float32, fx::float64, fx::float16, fx::bfloat16, fx::int32, fx::int64, fx::int8, fx::uint8,
                        fx::uint32}) {
      CAPTURE(rows);
      CAPTURE(k);
      CAPTURE(fx::dtype_name(d));
      // int8 holds 0..100 too; subtracting 50 gives the signed types negative values.
      const fx::Array v = fx::astype(d == fx::uint8 || d == fx::uint32 ? x : x - 50.f, d);
      check_like_cpu([](const fx::Array& a) { return fx::argmax(a, 1); }, v);
      check_like_cpu([](const fx::Array& a) { return fx::argmin(a, 1); }, v);
    }
  }
  // bools: the first true (false) of each row.
  const fx::Array b = fx::array(tied(9, 500), {9, 500}) > 95.f;
  check_like_cpu([](const fx::Array& a) { return fx::argmax(a, 1); }, b);
  check_like_cpu([](const fx::Array& a) { return fx::argmin(a, 1); }, b);
  // A full argmax (one row), and an argmax over the last axis of a rank-3 array.
  check_like_cpu([](const fx::Array& a) { return fx::argmax(a); }, fx::array(tied(1, 70001), {70001}));
  check_like_cpu([](const fx::Array& a) { return fx::argmin(a, 2); }, fx::array(tied(12, 100), {3, 4, 100}));
}

TEST_CASE("gpu argmax: NaN, infinities and constant rows pick the CPU's index" * doctest::skip(no_gpu())) {
  const int64_t k = 300;
  std::vector<float> v = tied(6, k);
  v[size_t(0 * k + 200)] = std::nanf("");  // row 0: one NaN, late
  v[size_t(0 * k + 250)] = std::nanf("");
  v[size_t(1 * k + 3)] = INFINITY;          // row 1: +inf twice
  v[size_t(1 * k + 290)] = INFINITY;
  for (int64_t j = 0; j < k; ++j) v[size_t(2 * k + j)] = -INFINITY;  // row 2: all -inf
  for (int64_t j = 0; j < k; ++j) v[size_t(3 * k + j)] = 7.f;        // row 3: constant
  for (int64_t j = 0; j < k; ++j) v[size_t(4 * k + j)] = j % 2 ? -0.f : 0.f;  // row 4: signed zeros
  v[size_t(5 * k + 299)] = -INFINITY;       // row 5: -inf last
  const fx::Array x = fx::array(v, {6, k});
  for (fx::DType d : {fx::float32, fx::float16, fx::float64}) {
    CAPTURE(fx::dtype_name(d));
    check_like_cpu([](const fx::Array& a) { return fx::argmax(a, 1); }, fx::astype(x, d));
    check_like_cpu([](const fx::Array& a) { return fx::argmin(a, 1); }, fx::astype(x, d));
    check_like_cpu([](const fx::Array& a) { return fx::argmax(a, 1, /*keepdims=*/true); }, fx::astype(-x, d));
  }
}
