// The int8 matrix product's paths (kernels/gemm_int8.h) against a product summed in int64: every
// path this CPU can run, forced one at a time as the bfloat16 kernel tests force targets, on shapes
// that leave edges in rows (not a multiple of the 4-row tile), columns (not a multiple of one
// register's lanes or of the 4-register tile) and k (not a multiple of 4), with int8 and uint8
// activations; operands at their extremes check that nothing saturates on the way.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "kernels/gemm_int8.h"
#include "prims/isa_level.h"

namespace {

using fluxion::runtime::Int8Gemm;
using fluxion::runtime::Int8Path;

constexpr Int8Path kPaths[] = {Int8Path::portable, Int8Path::avx2, Int8Path::avx_vnni, Int8Path::avx512_vnni};

std::vector<int32_t> reference_product(const std::vector<int8_t>& a, bool a_unsigned, const std::vector<int8_t>& b,
                                       int64_t m, int64_t n, int64_t k) {
  std::vector<int32_t> out(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const int8_t x = a[size_t(i * k + p)];
        sum += (a_unsigned ? int64_t(uint8_t(x)) : int64_t(x)) * int64_t(b[size_t(p * n + j)]);
      }
      out[size_t(i * n + j)] = int32_t(sum);
    }
  return out;
}

// Runs every available path on one product and checks each against the int64 sum.
void check_all_paths(const std::vector<int8_t>& a, bool a_unsigned, const std::vector<int8_t>& b, int64_t m, int64_t n,
                     int64_t k) {
  const std::vector<int32_t> expected = reference_product(a, a_unsigned, b, m, n, k);
  for (Int8Path path : kPaths) {
    if (!fluxion::runtime::int8_path_available(path)) continue;
    for (int threads : {1, 3}) {
      CAPTURE(fluxion::runtime::int8_path_name(path));
      CAPTURE(m);
      CAPTURE(n);
      CAPTURE(k);
      CAPTURE(a_unsigned);
      CAPTURE(threads);
      std::vector<int32_t> out(size_t(m * n), -7);  // stale values must be overwritten
      fluxion::runtime::int8_gemm_with(path, Int8Gemm{m, n, k, a.data(), a_unsigned, b.data(), out.data()}, threads);
      CHECK(out == expected);
    }
  }
}

}  // namespace

TEST_CASE("int8 GEMM: every path this CPU has equals the int64 sum, edges in rows, columns and k") {
  std::mt19937 rng(33);
  using Shape = std::tuple<int64_t, int64_t, int64_t>;
  for (auto [m, n, k] : {Shape{1, 1, 1}, Shape{5, 17, 3}, Shape{4, 64, 4}, Shape{37, 70, 131}, Shape{66, 129, 257},
                         Shape{9, 33, 1000}}) {
    std::vector<int8_t> a(size_t(m * k)), b(size_t(k * n));
    for (auto& x : a) x = int8_t(rng());
    for (auto& x : b) x = int8_t(rng());
    check_all_paths(a, false, b, m, n, k);
    check_all_paths(a, true, b, m, n, k);
  }
}

TEST_CASE("int8 GEMM: operands at their extremes add up exactly (no saturation inside a path)") {
  // -128 * -128 summed over k = 4099 is 67 M, and 255 * -128 (uint8 activations) -134 M: past what
  // int16 pairs (AVX2's vpmaddubsw) would hold, well inside int32.
  const int64_t m = 6, n = 19, k = 4099;
  std::vector<int8_t> a(size_t(m * k), int8_t(-128)), b(size_t(k * n), int8_t(-128));
  for (int64_t j = 0; j < n; j += 3) b[size_t(j)] = 127;  // one row of rhs at the other extreme
  check_all_paths(a, false, b, m, n, k);
  std::vector<int8_t> all_ones_u8(size_t(m * k), int8_t(-1));  // 255 as uint8
  check_all_paths(all_ones_u8, true, b, m, n, k);
}

TEST_CASE("int8 GEMM: the path follows the caller's x86-64 level and the CPU's VNNI") {
  using fluxion::runtime::int8_gemm_path;
  CHECK(int8_gemm_path(1) == Int8Path::portable);
  CHECK(int8_gemm_path(2) == Int8Path::portable);
  const int level = fluxion::kernel_isa_level();
  CHECK(int8_gemm_path(3) == (level >= 3 ? Int8Path::avx2 : Int8Path::portable));
  for (int l = 1; l <= 4; ++l) CHECK(fluxion::runtime::int8_path_available(int8_gemm_path(l)));
  if (level >= 4 && fluxion::runtime::host_has_avx512_vnni() && !std::getenv("FLUXION_CPU"))
    CHECK(int8_gemm_path(4) == Int8Path::avx512_vnni);
  // A path this CPU lacks is refused, not run.
  for (Int8Path path : kPaths)
    if (!fluxion::runtime::int8_path_available(path)) {
      std::vector<int8_t> a(4, 1), b(4, 1);
      std::vector<int32_t> out(4);
      CHECK_THROWS_AS(fluxion::runtime::int8_gemm_with(path, Int8Gemm{2, 2, 2, a.data(), false, b.data(), out.data()}, 1),
                      std::logic_error);
    }
}
