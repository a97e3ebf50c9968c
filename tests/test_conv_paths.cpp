// The jit's convolution forms of kernels/conv.cpp against the reference kernel (eager), on shapes
// chosen to take each form's less common branches: im2col with several images per product (small
// outputs, a batch that the blocks do not divide), col2im (the input gradient of strided
// convolutions, 1x1 and 3x3, with groups and in NHWC), and by-feature products over several
// blocks of features (the kernel gradient at 8x8 outputs), in float32 and float64; and bfloat16
// operands, whose columns go to the AVX512-BF16 GEMM where the target has it.
#include <doctest/doctest.h>

#include <fluxion.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "lowering/target.h"
#include "kernels/conv.h"
#include "kernels/matmul.h"
#include "tests/test_helpers.h"

namespace {
namespace fx = fluxion;
namespace rt = fluxion::runtime;
using rt::ConvAlgorithm;

fx::Array wave(const fx::Shape& s, double phase, fx::DType d) {
  std::vector<double> v(size_t(s.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37 * double(i) + phase) + 0.1 * std::cos(1.3 * double(i));
  return fx::astype(fx::array(v, s), d);
}

// max |a - b| relative to the largest |b|.
double rel_diff(const fx::Array& a, const fx::Array& b) {
  double scale = 1e-30;
  for (double v : fx::astype(b, fx::float64).to_vector<double>()) scale = std::max(scale, std::abs(v));
  return test_helpers::max_abs_diff(a, b) / scale;
}

struct Case {
  const char* label;
  fx::Shape x, w;
  int64_t stride, pad;
  const char* lhs;
  const char* rhs;
  int64_t groups;
  fx::DType dtype;
  ConvAlgorithm forward, input_grad, kernel_grad;  // the form each convolution must take
};

// Forward, input gradient and kernel gradient of `c` jitted, each against the reference kernel and
// each through the form the case names.
void check(const Case& c) {
  CAPTURE(c.label);
  const fx::Array x = wave(c.x, 0.3, c.dtype), w = wave(c.w, 1.1, c.dtype);
  const auto dn = fx::conv_dimension_numbers(c.lhs, c.rhs, c.lhs);
  auto f = [&](const fx::Array& a, const fx::Array& b) {
    return fx::conv_general_dilated(a, b, {c.stride, c.stride}, {{c.pad, c.pad}, {c.pad, c.pad}}, {}, {}, dn, c.groups);
  };
  auto loss = [&](const fx::Array& a, const fx::Array& b) { return fx::sum(fx::sin(f(a, b))); };
  // bfloat16 results: the reference and the GEMM sum in float32 in different orders and round once
  // each (one bfloat16 ulp, 2^-8 relative, apart); the gradients' cotangents differ by as much.
  const double tol = c.dtype == fx::float64 ? 1e-12 : c.dtype == fx::bfloat16 ? 2e-2 : 1e-5;
  auto runs = [&](ConvAlgorithm a) { return rt::conv_runs(a); };
  uint64_t before = runs(c.forward);
  CHECK(rel_diff(fx::jit(f)(x, w), f(x, w)) < tol);
  CHECK(runs(c.forward) > before);
  before = runs(c.input_grad);
  CHECK(rel_diff(fx::jit(fx::grad<0>(loss))(x, w), fx::grad<0>(loss)(x, w)) < tol);
  CHECK(runs(c.input_grad) > before);
  before = runs(c.kernel_grad);
  CHECK(rel_diff(fx::jit(fx::grad<1>(loss))(x, w), fx::grad<1>(loss)(x, w)) < tol);
  CHECK(runs(c.kernel_grad) > before);
}

constexpr ConvAlgorithm kIm2col = ConvAlgorithm::im2col, kCol2im = ConvAlgorithm::col2im,
                        kByFeature = ConvAlgorithm::im2col_by_feature;

// Which tiles the window products run on here: bfloat16 ones where the kernel's level has
// AVX512-BF16, float32 ones on x86-64-v4 hosts and levels unless FLUXION_CONV_F32=eigen.
struct Tiles {
  bool bf16, f32;
};
Tiles tiles_here() {
  const int isa = fx::lowering::cpu_target().isa_level;
  const char* f32 = std::getenv("FLUXION_CONV_F32");
  return {rt::native_bf16_for(isa), isa >= 4 && rt::host_isa_level() >= 4 && !(f32 && std::string(f32) == "eigen")};
}

}  // namespace

TEST_CASE("conv paths: im2col over blocks of images at small outputs") {
  // 4x4 outputs, 5 images: blocks of several images, the last one shorter.
  check({"NCHW 4x4", {5, 16, 4, 4}, {24, 16, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::float32, kIm2col, kIm2col, kIm2col});
  check({"NHWC 4x4 groups 2", {7, 4, 4, 8}, {3, 3, 4, 6}, 1, 1, "NHWC", "HWIO", 2, fx::float32, kIm2col, kIm2col,
         kIm2col});
  check({"NCHW 3x3 float64", {9, 6, 3, 3}, {5, 6, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::float64, kIm2col, kIm2col,
         kIm2col});
}

TEST_CASE("conv paths: col2im for the input gradient of strided convolutions") {
  check({"NCHW 3x3 stride 2", {3, 8, 12, 12}, {12, 8, 3, 3}, 2, 1, "NCHW", "OIHW", 1, fx::float32, kIm2col, kCol2im,
         kByFeature});
  check({"NCHW 1x1 stride 2", {5, 8, 8, 8}, {16, 8, 1, 1}, 2, 0, "NCHW", "OIHW", 1, fx::float32, kIm2col, kCol2im,
         kByFeature});
  check({"NHWC 3x3 stride 2 groups 2", {3, 9, 7, 6}, {3, 3, 3, 8}, 2, 1, "NHWC", "HWIO", 2, fx::float32, kIm2col,
         kCol2im, kIm2col});
  check({"NCHW 3x3 stride 3 float64", {2, 4, 10, 10}, {6, 4, 3, 3}, 3, 1, "NCHW", "OIHW", 1, fx::float64, kIm2col,
         kCol2im, kIm2col});
}

TEST_CASE("conv paths: the kernel gradient by blocks of features") {
  // The kernel gradient's features are the 21 images: with 64 window positions a block holds 8 of
  // them, so each thread's share takes several products, summed.
  check({"NCHW 8x8", {21, 4, 8, 8}, {6, 4, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::float32, kIm2col, kIm2col,
         kByFeature});
  check({"NHWC 8x8", {19, 8, 8, 3}, {3, 3, 3, 5}, 1, 1, "NHWC", "HWIO", 1, fx::float32, kIm2col, kIm2col, kByFeature});
}

// bfloat16 operands: where the compile target has AVX512-BF16 the columns and kernel stay bfloat16
// for the native GEMM (float32 accumulators), elsewhere (FLUXION_CPU=x86-64-v3, FLUXION_BF16_GEMM=
// widen) they are widened to float32 first. With a float32 preferred_element_type nothing is rounded
// after the products, and the products of two bfloat16 values are exact in float32: the result is
// the float32 convolution of the widened values up to summation order (float32 tolerance).
TEST_CASE("conv paths: bfloat16 columns against the widened float32 convolution") {
  const bool native = rt::native_bf16_for(fx::lowering::cpu_target().isa_level);
  const char* f32_form = std::getenv("FLUXION_CONV_F32");
  const bool f32_tiles = fx::lowering::cpu_target().isa_level >= 4 && rt::host_isa_level() >= 4 &&
                         !(f32_form && std::string(f32_form) == "eigen");
  MESSAGE("bfloat16 convolutions " << std::string(native ? "on bfloat16 columns (AVX512-BF16)" : "widened to float32"));
  // The forward convolutions of these cases, through their `forward` form (the gradient forms are
  // not run here: the two check() calls below run the gradients in bfloat16).
  // Output rows of 16 positions or a multiple of 32 at stride 1 in NCHW (ResNet-18's 32x32 and 16x16
  // stages) pack the product's right operand straight from the input (`from_input`, no columns
  // gathered): odd and even numbers of rows (i, k), groups, 1x1 to 5x5 windows, padding on every side.
  struct Bf16Case {
    Case c;
    bool from_input;
  };
  const Bf16Case cases[] = {
      {{"NCHW 3x3 rows of 32, odd rows", {2, 5, 6, 32}, {7, 5, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::bfloat16, kIm2col, kIm2col,
        kIm2col}, true},
      {{"NCHW 3x3 rows of 64, groups 2", {3, 6, 3, 64}, {14, 3, 3, 3}, 1, 1, "NCHW", "OIHW", 2, fx::bfloat16, kIm2col, kIm2col,
        kIm2col}, true},
      {{"NCHW 3x3 rows of 16", {2, 5, 4, 16}, {6, 5, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::bfloat16, kIm2col, kIm2col, kIm2col},
       true},
      {{"NCHW 1x1 rows of 32", {2, 9, 4, 32}, {4, 9, 1, 1}, 1, 0, "NCHW", "OIHW", 1, fx::bfloat16, kIm2col, kIm2col, kIm2col}, true},
      {{"NCHW 5x5 rows of 32, padding 2", {1, 4, 5, 32}, {13, 4, 5, 5}, 1, 2, "NCHW", "OIHW", 1, fx::bfloat16, kIm2col, kIm2col,
        kIm2col}, true},
      {{"NCHW 3x3 one image per product", {2, 8, 20, 20}, {12, 8, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::bfloat16, kIm2col, kIm2col,
        kIm2col}, false},
      {{"NCHW 4x4 image blocks, odd k", {5, 3, 4, 4}, {10, 3, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::bfloat16, kIm2col, kIm2col,
        kIm2col}, false},
      {{"NHWC groups 2", {3, 6, 6, 8}, {3, 3, 4, 6}, 1, 1, "NHWC", "HWIO", 2, fx::bfloat16, kIm2col, kIm2col, kIm2col}, false},
      {{"NCHW stride 2", {3, 8, 12, 12}, {12, 8, 3, 3}, 2, 1, "NCHW", "OIHW", 1, fx::bfloat16, kIm2col, kIm2col, kIm2col}, false},
      // A window larger than twice the output (the kernel gradient's shape): by feature.
      {{"NCHW 9x9 window", {4, 6, 11, 11}, {7, 6, 9, 9}, 1, 0, "NCHW", "OIHW", 1, fx::bfloat16, kByFeature, kByFeature,
        kByFeature}, false},
      // An input dilated by 2 (a strided convolution's input gradient): col2im.
      {{"NCHW lhs dilation 2", {3, 8, 6, 6}, {5, 8, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::bfloat16, kCol2im, kCol2im, kCol2im},
       false},
  };
  auto forward = [&](const Case& c, bool packed_from_input) {
    CAPTURE(c.label);
    const fx::Array x = wave(c.x, 0.3, fx::bfloat16), w = wave(c.w, 1.1, fx::bfloat16);
    const auto dn = fx::conv_dimension_numbers(c.lhs, c.rhs, c.lhs);
    const fx::IntList lhs_dilation = c.forward == kCol2im ? fx::IntList{2, 2} : fx::IntList{};
    auto conv = [&](std::optional<fx::DType> out) {
      return [&, out](const fx::Array& a, const fx::Array& b) {
        return fx::conv_general_dilated(a, b, {c.stride, c.stride}, {{c.pad, c.pad}, {c.pad, c.pad}}, lhs_dilation, {}, dn,
                                        c.groups, 1, out);
      };
    };
    const fx::Array want = conv(std::nullopt)(fx::astype(x, fx::float32), fx::astype(w, fx::float32));
    const uint64_t runs = rt::conv_runs(c.forward), blocks = rt::matmul_bf16_blocks_computed();
    const uint64_t windows = rt::conv_products_from_input();
    const fx::Array got = fx::jit(conv(fx::float32))(x, w);
    CHECK(got.dtype() == fx::float32);
    CHECK(rel_diff(got, want) < 1e-5);
    CHECK(rt::conv_runs(c.forward) > runs);
    CHECK((rt::matmul_bf16_blocks_computed() > blocks) == (native && !packed_from_input));
    // Widened to float32 on x86-64-v4 (FLUXION_CPU=x86-64-v4), the float32 tiles pack from the input.
    CHECK((rt::conv_products_from_input() > windows) == ((native || f32_tiles) && packed_from_input));
    // A bfloat16 result: the same sums rounded once, within a bfloat16 ulp of the rounded reference
    // -- and, rounded as each block is stored, bit for bit the float32 result rounded afterwards.
    const uint64_t rounded = rt::conv_rounded_as_stored();
    const fx::Array got16 = fx::jit(conv(std::nullopt))(x, w);
    CHECK(rt::conv_rounded_as_stored() > rounded);
    CHECK(got16.dtype() == fx::bfloat16);
    CHECK(rel_diff(got16, want) < 1e-2);
    CHECK(test_helpers::max_abs_diff(got16, fx::astype(got, fx::bfloat16)) == 0);
    // float16 operands (widened to float32, whatever the target) round their results the same way.
    const fx::Array xh = fx::astype(x, fx::float16), wh = fx::astype(w, fx::float16);
    CHECK(test_helpers::max_abs_diff(fx::jit(conv(std::nullopt))(xh, wh), fx::astype(fx::jit(conv(fx::float32))(xh, wh), fx::float16)) == 0);
  };
  for (const Bf16Case& b : cases) forward(b.c, b.from_input);
  // Forward and both gradients against the eager reference (bfloat16 all the way).
  check({"NCHW 8x8 bfloat16", {6, 8, 8, 8}, {12, 8, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::bfloat16, kIm2col, kIm2col,
         kByFeature});
  check({"NCHW 3x3 stride 2 bfloat16", {3, 8, 12, 12}, {12, 8, 3, 3}, 2, 1, "NCHW", "OIHW", 1, fx::bfloat16, kIm2col,
         kCol2im, kByFeature});
  check({"NCHW 3x3 rows of 32 bfloat16", {3, 6, 4, 32}, {8, 6, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::bfloat16, kIm2col,
         kIm2col, kIm2col});
}

// float32 operands: where the kernel's target and the host are x86-64-v4 (and FLUXION_CONV_F32 is
// not "eigen"), an im2col product whose panels are runs of the input -- the same geometries as the
// bfloat16 cases above -- runs the AVX-512 float32 tiles packed straight from the input; elsewhere
// Eigen's product on gathered columns. Forward and both gradients against the reference either way
// (the input gradient at stride 1 is an im2col product of the same kind).
TEST_CASE("conv paths: float32 products packed from the input on AVX-512") {
  const bool tiles = tiles_here().f32;
  MESSAGE("float32 window products " << std::string(tiles ? "on the AVX-512 tiles" : "on Eigen with columns"));
  struct F32Case {
    Case c;
    bool from_input;
  };
  const F32Case cases[] = {
      {{"f32 NCHW 3x3 rows of 32, odd rows", {2, 5, 6, 32}, {7, 5, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::float32, kIm2col,
        kIm2col, kByFeature}, true},
      {{"f32 NCHW 3x3 rows of 64, groups 2", {3, 6, 3, 64}, {14, 3, 3, 3}, 1, 1, "NCHW", "OIHW", 2, fx::float32, kIm2col,
        kIm2col, kIm2col}, true},
      {{"f32 NCHW 3x3 rows of 16", {2, 5, 4, 16}, {6, 5, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::float32, kIm2col, kIm2col,
        kByFeature}, true},
      {{"f32 NCHW 1x1 rows of 32", {2, 9, 4, 32}, {4, 9, 1, 1}, 1, 0, "NCHW", "OIHW", 1, fx::float32, kIm2col, kIm2col,
        kByFeature}, true},
      {{"f32 NCHW 5x5 rows of 32, padding 2", {1, 4, 5, 32}, {13, 4, 5, 5}, 1, 2, "NCHW", "OIHW", 1, fx::float32, kIm2col,
        kIm2col, kByFeature}, true},
      // Many rows (i, k) and output features: k across the tile's depth blocks (64 x 9 = 576), m across
      // its row block (100 > 96).
      {{"f32 NCHW 3x3 64 -> 100 features", {2, 64, 2, 32}, {100, 64, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::float32, kIm2col,
        kIm2col, kByFeature}, true},
      {{"f32 NCHW 3x3 rows of 20", {2, 8, 20, 20}, {12, 8, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::float32, kIm2col, kIm2col,
        kByFeature}, false},
      {{"f32 NHWC rows of 32", {2, 4, 32, 8}, {3, 3, 8, 6}, 1, 1, "NHWC", "HWIO", 1, fx::float32, kIm2col, kIm2col, kByFeature},
       false},
  };
  for (const F32Case& f : cases) {
    const Case& c = f.c;
    CAPTURE(c.label);
    const fx::Array x = wave(c.x, 0.3, fx::float32), w = wave(c.w, 1.1, fx::float32);
    const auto dn = fx::conv_dimension_numbers(c.lhs, c.rhs, c.lhs);
    auto conv = [&](const fx::Array& a, const fx::Array& b) {
      return fx::conv_general_dilated(a, b, {c.stride, c.stride}, {{c.pad, c.pad}, {c.pad, c.pad}}, {}, {}, dn, c.groups);
    };
    const uint64_t windows = rt::conv_products_from_input();
    CHECK(rel_diff(fx::jit(conv)(x, w), conv(x, w)) < 1e-5);
    CHECK((rt::conv_products_from_input() > windows) == (tiles && f.from_input));
    check(c);
  }
}

// The by-feature product (the kernel gradient's form) packs both operands straight from the
// convolution's arrays (conv_features_from_input) where its window rows are runs of 16 input
// elements up to padding (NCHW at stride 1: ResNet-18's 32x32, 16x16 and 8x8 stages), the window
// a multiple of 32 positions and the kernel's window contiguous, on the tiles of the operands' dtype (bfloat16 on
// AVX512-BF16, float32 on x86-64-v4); elsewhere columns are gathered. As forward convolutions with
// a window of whole image rows (kw = W) and a float32 result: bfloat16 products are exact in
// float32, so against the float32 convolution of the same values only the summation order differs
// (float32 tolerance); padding along W masks the runs' ends. Features (images of the kernel
// gradient) enough that k spans several of the tiles' depth blocks, which cut features apart.
TEST_CASE("conv paths: by-feature products packed from the arrays") {
  const auto [bf16_tiles, f32_tiles] = tiles_here();
  struct FeatureCase {
    const char* label;
    fx::Shape x, w;
    int64_t pad_w;
    bool from_arrays;
  };
  const FeatureCase cases[] = {
      {"rows of 32", {3, 11, 6, 32}, {7, 11, 4, 32}, 0, true},
      {"rows of 32, padded", {2, 21, 5, 32}, {13, 21, 3, 32}, 1, true},
      {"rows of 16, padded", {3, 23, 6, 16}, {9, 23, 4, 16}, 2, true},
      {"rows of 64", {1, 5, 4, 64}, {40, 5, 2, 64}, 0, true},
      // Window rows of 8 whole image rows: a run of 16 spans two of them, the padding between
      // them masked where the next row's first element would be.
      {"rows of 8, padded", {2, 9, 8, 8}, {5, 9, 4, 8}, 1, true},
      {"window rows of 8 in image rows of 10", {2, 9, 5, 10}, {5, 9, 4, 8}, 0, false},  // a gap: columns
      {"rows of 20", {2, 9, 4, 20}, {5, 9, 2, 20}, 0, false},                             // 40 positions: columns
  };
  for (const FeatureCase& c : cases)
    for (fx::DType dt : {fx::bfloat16, fx::float32}) {
      const std::string label = std::string(c.label) + " " + std::string(fx::dtype_name(dt));
      CAPTURE(label);
      const fx::Array x = wave(c.x, 0.3, dt), w = wave(c.w, 1.1, dt);
      auto conv = [&](std::optional<fx::DType> out) {
        return [&, out](const fx::Array& a, const fx::Array& b) {
          return fx::conv_general_dilated(a, b, {1, 1}, {{0, 0}, {c.pad_w, c.pad_w}}, {}, {}, std::nullopt, 1, 1, out);
        };
      };
      const fx::Array want = conv(std::nullopt)(fx::astype(x, fx::float32), fx::astype(w, fx::float32));
      const uint64_t runs = rt::conv_runs(kByFeature), packed = rt::conv_features_from_input();
      const fx::Array got = fx::jit(conv(fx::float32))(x, w);
      CHECK(rt::conv_runs(kByFeature) > runs);
      CHECK(rel_diff(got, want) < 1e-5);
      // bfloat16 without AVX512-BF16 is widened to float32 and takes the float32 tiles.
      const bool tiles = dt == fx::bfloat16 ? bf16_tiles || f32_tiles : f32_tiles;
      CHECK((rt::conv_features_from_input() > packed) == (tiles && c.from_arrays));
    }
  // The kernel gradients of such convolutions in the jitted gradient, against the eager reference.
  uint64_t packed = rt::conv_features_from_input();
  check({"NCHW 3x3 rows of 32, kernel gradient", {9, 6, 4, 32}, {8, 6, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::bfloat16,
         kIm2col, kIm2col, kByFeature});
  CHECK((rt::conv_features_from_input() > packed) == (bf16_tiles || f32_tiles));
  packed = rt::conv_features_from_input();
  check({"NCHW 3x3 16x16, kernel gradient", {7, 5, 16, 16}, {6, 5, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::float32, kIm2col,
         kIm2col, kByFeature});
  CHECK((rt::conv_features_from_input() > packed) == f32_tiles);
}

// im2col by tap: where at least 1/16 of the (kernel offset, output position) pairs read padding or
// the window is strided (im2col's columns would be gathered), the window has several offsets, and
// the batch is whole panels of 32 images (ResNet-18's 16x16, 8x8 and 4x4 stages and its 3x3
// stride-2 convolutions at batch 128), the product runs as an implicit GEMM over the kernel offsets
// on columns ordered (position, image) and skips the panels that read only padding
// (conv_im2col_by_tap), on the tiles of the operands' dtype. Forward with a float32 result against
// the float32 convolution of the same values (bfloat16 products are exact in float32: the summation
// order differs, float32 tolerance), and both gradients in the jitted gradient against the eager
// reference. 600 input features make the kernel's rows longer than one block of output rows keeps
// in L2 (several blocks of rows, 30 rows: two full tiles and one of 6); odd input features are no
// whole bfloat16 words (float32 only); 1x1 strided windows and 32x32 outputs (4% padding) keep
// im2col's product.
TEST_CASE("conv paths: im2col by tap skips the padding") {
  const auto [bf16_tiles, f32_tiles] = tiles_here();
  enum Taps { kNone, kBoth, kF32Only };
  struct TapCase {
    const char* label;
    fx::Shape x, w;
    int64_t stride;
    Taps by_tap;
  };
  const TapCase cases[] = {
      {"4x4, 32 images", {32, 16, 4, 4}, {12, 16, 3, 3}, 1, kBoth},
      {"3x3, 64 images", {64, 8, 3, 3}, {20, 8, 3, 3}, 1, kBoth},      // 40% padding
      {"6x6 -> 3x3 stride 2", {32, 8, 6, 6}, {24, 8, 3, 3}, 2, kBoth},  // 21%
      {"4x4, 600 features", {32, 600, 4, 4}, {30, 600, 3, 3}, 1, kBoth},
      {"4x4, 24 images", {24, 16, 4, 4}, {12, 16, 3, 3}, 1, kNone},  // not whole panels
      {"8x8, 32 images", {32, 4, 8, 8}, {6, 4, 3, 3}, 1, kBoth},     // 16% padding
      {"8x8, 5 features", {32, 5, 8, 8}, {13, 5, 3, 3}, 1, kF32Only},
      {"8x8 -> 4x4 stride 2", {32, 8, 8, 8}, {24, 8, 3, 3}, 2, kBoth},
      {"16x16", {32, 6, 16, 16}, {16, 6, 3, 3}, 1, kBoth},             // 8%
      {"20x20 -> 10x10 stride 2", {32, 4, 20, 20}, {8, 4, 3, 3}, 2, kBoth},  // 5%, strided
      {"32x32", {32, 2, 32, 32}, {4, 2, 3, 3}, 1, kNone},              // 4%
      {"8x8 1x1 stride 2", {32, 8, 8, 8}, {12, 8, 1, 1}, 2, kNone},
  };
  for (const TapCase& c : cases)
    for (fx::DType dt : {fx::bfloat16, fx::float32}) {
      const std::string label = std::string(c.label) + " " + std::string(fx::dtype_name(dt));
      CAPTURE(label);
      const fx::Array x = wave(c.x, 0.3, dt), w = wave(c.w, 1.1, dt);
      const int64_t pad = c.w[2] / 2;
      auto conv = [&](std::optional<fx::DType> out) {
        return [&, out](const fx::Array& a, const fx::Array& b) {
          return fx::conv_general_dilated(a, b, {c.stride, c.stride}, {{pad, pad}, {pad, pad}}, {}, {}, std::nullopt, 1, 1, out);
        };
      };
      const fx::Array want = conv(std::nullopt)(fx::astype(x, fx::float32), fx::astype(w, fx::float32));
      const uint64_t taps = rt::conv_im2col_by_tap();
      CHECK(rel_diff(fx::jit(conv(fx::float32))(x, w), want) < 1e-5);
      // bfloat16 without AVX512-BF16 is widened to float32 and takes the float32 tiles.
      const bool tiles = dt == fx::bfloat16 ? bf16_tiles || f32_tiles : f32_tiles;
      const bool by_tap = c.by_tap == kBoth || (c.by_tap == kF32Only && (dt == fx::float32 || !bf16_tiles));
      CHECK((rt::conv_im2col_by_tap() > taps) == (tiles && by_tap));
    }
  // The gradients: at stride 1 the input gradient is a 4x4 convolution with padding too, and the
  // kernel gradient's 4x4 window over the 32 input features (its images) takes the same form.
  uint64_t taps = rt::conv_im2col_by_tap();
  check({"4x4 by tap, bfloat16", {32, 32, 4, 4}, {12, 32, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::bfloat16, kIm2col, kIm2col,
         kIm2col});
  // forward (twice), input and kernel gradients
  CHECK((rt::conv_im2col_by_tap() >= taps + 4) == (bf16_tiles || f32_tiles));
  taps = rt::conv_im2col_by_tap();
  check({"4x4 by tap, float32", {32, 32, 4, 4}, {12, 32, 3, 3}, 1, 1, "NCHW", "OIHW", 1, fx::float32, kIm2col, kIm2col,
         kIm2col});
  CHECK((rt::conv_im2col_by_tap() >= taps + 4) == f32_tiles);
  // The input gradient of a strided convolution (the cotangent dilated by the strides): by tap
  // where the tiles run, the dilation's holes skipped as padding, else col2im.
  taps = rt::conv_im2col_by_tap();
  const ConvAlgorithm strided_input = bf16_tiles || f32_tiles ? kIm2col : kCol2im;
  check({"8x8 -> 4x4 stride 2, bfloat16", {32, 16, 8, 8}, {24, 16, 3, 3}, 2, 1, "NCHW", "OIHW", 1, fx::bfloat16, kIm2col,
         strided_input, kIm2col});
  CHECK((rt::conv_im2col_by_tap() >= taps + 3) == (bf16_tiles || f32_tiles));
  check({"16x16 -> 8x8 stride 2, float32", {32, 6, 16, 16}, {12, 6, 3, 3}, 2, 1, "NCHW", "OIHW", 1, fx::float32, kIm2col,
         f32_tiles ? kIm2col : kCol2im, kIm2col});
  // Channels last: the results are scattered to positions that are not one row per feature (and
  // rounded to bfloat16 per output feature's block before that).
  taps = rt::conv_im2col_by_tap();
  check({"4x4 by tap, bfloat16 NHWC", {32, 4, 4, 24}, {12, 24, 3, 3}, 1, 1, "NHWC", "OIHW", 1, fx::bfloat16, kIm2col,
         kIm2col, kIm2col});
  CHECK((rt::conv_im2col_by_tap() >= taps + 4) == (bf16_tiles || f32_tiles));
}
