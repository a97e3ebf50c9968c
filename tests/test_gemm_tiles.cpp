// The AVX512-BF16 GEMM (kernels/gemm_tiles.h) against the widening path of runtime::matmul (both
// operands widened to float32, Eigen's float32 product) on the same bfloat16 values: tails of the
// register tile and of the cache blocks, odd k, every orientation, batches, one and two threads,
// float32 and bfloat16 outputs. And which path a product takes: the native kernel only where the
// CPU and the compile target (FLUXION_CPU) have AVX512-BF16. And the kernel's float32 twin against
// a float64 product.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "lowering/target.h"
#include "kernels/gemm_tiles.h"
#include "kernels/matmul.h"

namespace fx = fluxion;
namespace rt = fluxion::runtime;

namespace {

// bfloat16 values in about [-1, 1] that vary along every axis (none subnormal).
std::vector<fx::bfloat16_t> bf16_wave(int64_t n, int seed) {
  std::vector<fx::bfloat16_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = fx::bfloat16_t(float(std::sin(0.37 * double(i) + seed) * 0.9 + 0.015 * double(i % 7)));
  return v;
}

// sum over p of |op(a)[i, p] * op(b)[p, j]| per output element: the scale of rounding errors.
std::vector<double> abs_product(const std::vector<fx::bfloat16_t>& a, const std::vector<fx::bfloat16_t>& b, const rt::Matmul& mm) {
  std::vector<double> s(size_t(mm.batch * mm.m * mm.n));
  for (int64_t q = 0; q < mm.batch; ++q)
    for (int64_t i = 0; i < mm.m; ++i)
      for (int64_t j = 0; j < mm.n; ++j) {
        double w = 0;
        for (int64_t p = 0; p < mm.k; ++p) {
          const float x = float(a[size_t(q * mm.m * mm.k + (mm.trans_lhs ? p * mm.m + i : i * mm.k + p))]);
          const float y = float(b[size_t(q * mm.k * mm.n + (mm.trans_rhs ? j * mm.k + p : p * mm.n + j))]);
          w += std::fabs(double(x) * double(y));
        }
        s[size_t((q * mm.m + i) * mm.n + j)] = w;
      }
  return s;
}

}  // namespace

// Products of two bfloat16 values are exact in float32 (8-bit significands), so both paths sum the
// same exact terms in float32, in different orders (vdpbf16ps adds two products per lane per step,
// Eigen one per FMA): each sum is within k roundings of the exact one, so the two are within
// 2 (k + 1) * 2^-24 * sum |a b| of each other. vdpbf16ps also treats subnormal inputs as zero and
// flushes subnormal results; these values have none. A bfloat16 output rounds each side once, half
// a bfloat16 ulp each: one ulp, at most 2^-7 relative, between them.
TEST_CASE("gemm bf16: the AVX512-BF16 kernel matches the widened float32 product") {
  if (!rt::native_bf16_for(4)) {
    MESSAGE("skipped: no AVX512-BF16 here (or FLUXION_CPU / FLUXION_BF16_GEMM rule it out)");
    return;
  }
  struct Case {
    int64_t batch, m, k, n;
  };
  // A 1 x 1 product, one exact register tile, tails of every kind with odd k, k across the depth
  // block (512) and odd, rows across the row block (96) and columns across the column block (512),
  // k = 0, a batch of 3, and two above the threading threshold (2^20 multiply-adds). The last
  // panel's rows pick the 4-, 8- or 12-row tile: remainders 1-4, 5-8 and 9-11 of 12 all occur.
  const Case cases[] = {{1, 1, 1, 1},     {1, 12, 32, 32},    {1, 13, 33, 35},   {1, 5, 7, 3},
                        {1, 100, 513, 70}, {1, 101, 1025, 545}, {1, 3, 0, 4},      {3, 30, 41, 50},
                        {1, 128, 200, 64}, {2, 64, 130, 96},   {1, 23, 40, 33},   {1, 21, 17, 9}};
  for (const Case& c : cases)
    for (int orient = 0; orient < 4; ++orient) {
      const std::vector<fx::bfloat16_t> a = bf16_wave(c.batch * c.m * c.k, 1), b = bf16_wave(c.batch * c.k * c.n, 2);
      const int64_t no = c.batch * c.m * c.n;
      rt::Matmul mm{false, c.batch, c.m, c.n, c.k, bool(orient & 1), bool(orient & 2), a.data(), b.data(), nullptr, fx::bfloat16};
      const std::vector<double> scale = abs_product(a, b, mm);
      for (int threads : {1, 2})
        for (bool narrow : {false, true}) {
          CAPTURE(c.batch);
          CAPTURE(c.m);
          CAPTURE(c.k);
          CAPTURE(c.n);
          CAPTURE(orient);
          CAPTURE(threads);
          CAPTURE(narrow);
          std::vector<float> got(size_t(no), -7.f), want(size_t(no), -7.f);
          std::vector<fx::bfloat16_t> got16(size_t(no), fx::bfloat16_t(-7.f)), want16(size_t(no), fx::bfloat16_t(-7.f));
          mm.narrow_out = narrow;
          mm.out = narrow ? static_cast<void*>(got16.data()) : got.data();
          const uint64_t blocks = rt::matmul_bf16_blocks_computed();
          rt::matmul(mm, 4, threads);
          CHECK(rt::matmul_bf16_blocks_computed() > blocks);
          mm.out = narrow ? static_cast<void*>(want16.data()) : want.data();
          rt::matmul_widened(mm, 4, threads);
          if (narrow)
            for (int64_t i = 0; i < no; ++i) got[size_t(i)] = float(got16[size_t(i)]), want[size_t(i)] = float(want16[size_t(i)]);
          size_t bad = 0;
          double worst = 0;  // largest difference as a fraction of its bound
          for (size_t i = 0; i < size_t(no); ++i) {
            const double bound =
                2.0 * double(c.k + 1) * 0x1p-24 * scale[i] + (narrow ? 0x1p-7 * std::fabs(double(want[i])) : 0.0) + 1e-30;
            const double err = std::fabs(double(got[i]) - double(want[i]));
            if (!(err <= bound)) ++bad;
            worst = std::max(worst, err / bound);
          }
          CAPTURE(worst);
          CHECK(bad == 0);
        }
    }
}

// A compiled bfloat16 product runs the native kernel exactly where the compile target allows it:
// never under FLUXION_CPU=x86-64-v2/v3/v4 (tests/meson.build runs the "matmul jit" cases under the
// first two), nor with FLUXION_BF16_GEMM=widen; and it agrees with eager either way (the op table's
// bfloat16 dot_general entries check the values under every transform).
TEST_CASE("matmul jit: a bfloat16 product takes the AVX512-BF16 kernel only where the target has it") {
  const fx::lowering::CpuTarget& target = fx::lowering::cpu_target();
  const bool native = rt::native_bf16_for(target.isa_level);
  MESSAGE("compile target " << target.cpu << ": bfloat16 products " << std::string(native ? "on AVX512-BF16" : "widened to float32"));
  if (native) CHECK(target.avx512bf16);
  const char* cpu = std::getenv("FLUXION_CPU");
  if (cpu && std::string(cpu).starts_with("x86-64")) CHECK_FALSE(native);
  const char* path = std::getenv("FLUXION_BF16_GEMM");
  if (!cpu && !(path && std::string(path) == "widen")) CHECK(native == fx::host_has_avx512bf16());

  const fx::Array a = fx::astype(fx::array(std::vector<float>(64 * 48, 0.5f), fx::Shape{64, 48}), fx::bfloat16);
  const fx::Array b = fx::astype(fx::array(std::vector<float>(48 * 40, 0.25f), fx::Shape{48, 40}), fx::bfloat16);
  const uint64_t before = rt::matmul_bf16_blocks_computed();
  const fx::Array got = fx::jit([](const fx::Array& x, const fx::Array& y) { return fx::matmul(x, y, fx::float32); })(a, b);
  CHECK((rt::matmul_bf16_blocks_computed() > before) == native);
  // 48 exact products of 1/8: every element exactly 6 on either path.
  const std::vector<float> v = got.to_vector<float>();
  CHECK(std::all_of(v.begin(), v.end(), [](float x) { return x == 6.0f; }));
}

// The float32 twin of the kernel (kernels/gemm_tiles.h's gemm_f32_block: the same blocking, packing
// and tiles, one FMA per value of k; kernels/conv_forms.cpp runs it on convolution windows) against
// a float64 product of the same float32 values: each float32 sum is within k roundings of the exact
// one, 2 (k + 1) * 2^-24 * sum |a b|. Blocks inside a larger output (out_stride > n), every
// orientation, tails of the tile and of the cache blocks (k across the 256-step depth block).
TEST_CASE("gemm bf16: the float32 tile kernel matches a float64 product") {
  if (rt::host_isa_level() < 4) {
    MESSAGE("skipped: no AVX-512 here");
    return;
  }
  struct Case {
    int64_t m, k, n;
  };
  const Case cases[] = {{1, 1, 1}, {12, 32, 32}, {13, 33, 35}, {5, 7, 3}, {100, 513, 70}, {101, 300, 545},
                        {3, 0, 4}, {64, 576, 96}, {23, 257, 33}, {21, 17, 9}};
  for (const Case& c : cases)
    for (int orient = 0; orient < 4; ++orient) {
      CAPTURE(c.m);
      CAPTURE(c.k);
      CAPTURE(c.n);
      CAPTURE(orient);
      const bool ta = orient & 1, tb = orient & 2;
      std::vector<float> a(size_t(c.m * c.k)), b(size_t(c.k * c.n));
      for (size_t i = 0; i < a.size(); ++i) a[i] = float(std::sin(0.37 * double(i) + 1));
      for (size_t i = 0; i < b.size(); ++i) b[i] = float(std::cos(0.29 * double(i) + 2));
      const int64_t ld = c.n + 5;  // the block's rows inside a wider output
      std::vector<float> got(size_t(c.m * ld), -7.f);
      const rt::MatmulBlock blk{c.m, c.n, c.k, a.data(), ta ? c.m : c.k, ta, b.data(), tb ? c.k : c.n, tb, got.data(), ld};
      const rt::TilePacks packs = rt::tile_pack_scratch();
      rt::gemm_f32_block(blk, packs.a, packs.b);
      size_t bad = 0;
      for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t j = 0; j < c.n; ++j) {
          double want = 0, scale = 1e-30;
          for (int64_t p = 0; p < c.k; ++p) {
            const double x = a[size_t(ta ? p * c.m + i : i * c.k + p)], y = b[size_t(tb ? j * c.k + p : p * c.n + j)];
            want += x * y, scale += std::fabs(x * y);
          }
          if (!(std::fabs(double(got[size_t(i * ld + j)]) - want) <= 2.0 * double(c.k + 1) * 0x1p-24 * scale)) ++bad;
        }
        for (int64_t j = c.n; j < ld; ++j) bad += got[size_t(i * ld + j)] != -7.f;  // nothing stored beyond the block
      }
      CHECK(bad == 0);
    }
}
