// Floating-point edge cases with JAX's semantics, each run eagerly and under jit against one
// reference written out here (issue 35, item 6):
//  - NaN propagates through max/min (lax.max, reduce_max), sums, products, cumulative ops;
//  - argmax/argmin pick the first NaN (lax.argmax's comparator takes a NaN as the extreme), else
//    the first of equal extremes;
//  - sort and argsort order -inf < ... < inf < NaN, with -0.0 and 0.0 equal (JAX canonicalizes
//    both before its total-order comparison) and ties stable;
//  - signed zeros through neg, abs, sign, sqrt, floor, round, division and addition (IEEE 754);
//  - subnormals are kept, not flushed, in f32, f16 and bf16 arithmetic and conversions (IEEE 754
//    gradual underflow, as numpy and XLA:CPU);
//  - float -> float16/bfloat16 rounds to nearest even, overflows to inf, keeps NaN;
//  - float -> int saturates and NaN gives 0 (XLA's ConvertElementType on CPU and GPU), float ->
//    bool is x != 0 (NaN is true).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace fx = fluxion;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();

// The same value: both NaN, or equal with the same sign bit (so -0.0 != 0.0 here).
bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

std::vector<double> values_of(const fx::Array& a) { return fx::astype(a, fx::float64).to_vector<double>(); }

using Fn = std::function<fx::Array(const fx::Array&)>;

// f(x) eagerly and under jit, both against `want`, element by element.
void check_both(const std::string& what, const Fn& f, const fx::Array& x, const std::vector<double>& want) {
  CAPTURE(what);
  const std::vector<double> eager = values_of(f(x)), jitted = values_of(fx::jit(f)(x));
  REQUIRE(eager.size() == want.size());
  REQUIRE(jitted.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CAPTURE(want[i]);
    CAPTURE(eager[i]);
    CAPTURE(jitted[i]);
    CHECK(same(eager[i], want[i]));
    CHECK(same(jitted[i], want[i]));
  }
}

fx::Array f32(const std::vector<double>& v) { return fx::astype(fx::array(v), fx::float32); }

// Round-to-nearest-even float32 -> bfloat16 -> float32, written out on the bits.
float bf16_round(float f) {
  if (std::isnan(f)) return f;
  uint32_t b = std::bit_cast<uint32_t>(f);
  b += 0x7FFFu + ((b >> 16) & 1u);
  return std::bit_cast<float>(b & 0xFFFF0000u);
}
float f16_round(float f) { return float(static_cast<_Float16>(f)); }  // GCC's IEEE binary16

}  // namespace

TEST_CASE("float edges: NaN and infinities through reductions and elementwise max/min") {
  const fx::Array x = f32({1, kNaN, 3, -kInf});
  const fx::Array y = f32({1, 2, kInf, -kInf});
  check_both("max", [](const fx::Array& a) { return fx::max(a); }, x, {kNaN});
  check_both("min", [](const fx::Array& a) { return fx::min(a); }, x, {kNaN});
  check_both("sum", [](const fx::Array& a) { return fx::sum(a); }, x, {kNaN});
  check_both("prod", [](const fx::Array& a) { return fx::prod(a); }, x, {kNaN});
  check_both("max inf", [](const fx::Array& a) { return fx::max(a); }, y, {kInf});
  check_both("min -inf", [](const fx::Array& a) { return fx::min(a); }, y, {-kInf});
  check_both("sum inf - inf", [](const fx::Array& a) { return fx::sum(a); }, y, {kNaN});
  check_both("mean of -infs", [](const fx::Array& a) { return fx::mean(a); }, f32({-kInf, -kInf}), {-kInf});
  // Per row: only the row holding the NaN is NaN.
  const fx::Array m = fx::reshape(f32({1, kNaN, 2, 5, -1, 4}), {2, 3});
  check_both("max rows", [](const fx::Array& a) { return fx::max(a, {1}); }, m, {kNaN, 5});
  check_both("min rows", [](const fx::Array& a) { return fx::min(a, {1}); }, m, {kNaN, -1});
  check_both("sum rows", [](const fx::Array& a) { return fx::sum(a, {1}); }, m, {kNaN, 8});
  check_both("logsumexp -inf", [](const fx::Array& a) { return fx::logsumexp(a); }, f32({-kInf, -kInf}), {-kInf});
  check_both("logsumexp inf", [](const fx::Array& a) { return fx::logsumexp(a); }, f32({kInf, 1}), {kInf});
  check_both("logsumexp nan", [](const fx::Array& a) { return fx::logsumexp(a); }, f32({kNaN, 1}), {kNaN});
  // lax.max and lax.min propagate NaN from either side.
  check_both("maximum", [](const fx::Array& a) { return fx::maximum(a, fx::flip(a, {0})); }, f32({kNaN, 1, kInf, -kInf, 2}),
             {kNaN, 1, kInf, 1, kNaN});
  check_both("minimum", [](const fx::Array& a) { return fx::minimum(a, fx::flip(a, {0})); }, f32({kNaN, 1, kInf, -kInf, 2}),
             {kNaN, -kInf, kInf, -kInf, kNaN});
  check_both("clip nan", [](const fx::Array& a) { return fx::clip(a, -1.f, 1.f); }, f32({kNaN, 5, -5, 0.5}), {kNaN, 1, -1, 0.5});
}

TEST_CASE("float edges: argmax and argmin pick the first NaN, else the first extreme") {
  auto amax = [](const fx::Array& a) { return fx::argmax(a, 0); };
  auto amin = [](const fx::Array& a) { return fx::argmin(a, 0); };
  check_both("argmax nan", amax, f32({1, kNaN, 3, kNaN}), {1});
  check_both("argmin nan", amin, f32({1, kNaN, -3, kNaN}), {1});
  check_both("argmax ties", amax, f32({3, 1, 3}), {0});
  check_both("argmin ties", amin, f32({-kInf, 1, -kInf}), {0});
  check_both("argmax -infs", amax, f32({-kInf, -kInf}), {0});
  check_both("argmax inf", amax, f32({1, kInf, 2}), {1});
  const fx::Array m = fx::reshape(f32({1, kNaN, 2, 5, -1, 5}), {2, 3});
  check_both("argmax rows", [](const fx::Array& a) { return fx::argmax(a, 1); }, m, {1, 0});
  check_both("argmin cols", [](const fx::Array& a) { return fx::argmin(a, 0); }, m, {0, 0, 0});
}

TEST_CASE("float edges: sort and argsort put NaN last, treat -0.0 and 0.0 as equal, and are stable") {
  const fx::Array x = f32({3, kNaN, -kInf, -0.0, 0.0, kInf, 1, kNaN, -0.0});
  auto sort = [](const fx::Array& a) { return fx::sort(a, 0); };
  auto argsort = [](const fx::Array& a) { return fx::argsort(a, 0); };
  check_both("sort", sort, x, {-kInf, -0.0, 0.0, -0.0, 1, 3, kInf, kNaN, kNaN});
  check_both("argsort", argsort, x, {2, 3, 4, 8, 6, 0, 5, 1, 7});
  check_both("sort f64", sort, fx::array(std::vector<double>{kNaN, 0.0, -0.0, -1}), {-1, 0.0, -0.0, kNaN});
}

TEST_CASE("float edges: cumulative ops propagate NaN and inf - inf") {
  auto col = [](const std::vector<double>& v) { return f32(v); };
  check_both("cumsum", [](const fx::Array& a) { return fx::cumsum(a, 0); }, col({1, kInf, -kInf, 2}), {1, kInf, kNaN, kNaN});
  check_both("cumprod", [](const fx::Array& a) { return fx::cumprod(a, 0); }, col({2, 0, kInf, 1}), {2, 0, kNaN, kNaN});
  check_both("cummax", [](const fx::Array& a) { return fx::cummax(a, 0); }, col({1, kNaN, 3, -kInf}), {1, kNaN, kNaN, kNaN});
  check_both("cummin", [](const fx::Array& a) { return fx::cummin(a, 0); }, col({1, -kInf, kNaN, 3}), {1, -kInf, kNaN, kNaN});
  check_both("cummax -infs", [](const fx::Array& a) { return fx::cummax(a, 0); }, col({-kInf, -kInf, 0}), {-kInf, -kInf, 0});
}

TEST_CASE("float edges: signed zeros through elementwise ops (IEEE 754)") {
  const fx::Array z = f32({-0.0, 0.0});
  check_both("neg", [](const fx::Array& a) { return -a; }, z, {0.0, -0.0});
  check_both("abs", [](const fx::Array& a) { return fx::abs(a); }, z, {0.0, 0.0});
  check_both("sign", [](const fx::Array& a) { return fx::sign(a); }, z, {-0.0, 0.0});
  check_both("sqrt", [](const fx::Array& a) { return fx::sqrt(a); }, z, {-0.0, 0.0});
  check_both("floor", [](const fx::Array& a) { return fx::floor(a); }, z, {-0.0, 0.0});
  check_both("1 / x", [](const fx::Array& a) { return 1.f / a; }, z, {-kInf, kInf});
  check_both("x + x", [](const fx::Array& a) { return a + a; }, z, {-0.0, 0.0});
  // -0.0 + 0.0 is +0.0 eagerly. Under jit, x + 0 folds to x (interpreters/simplify.cpp), as XLA's
  // algebraic simplifier folds A + 0 => A: the value is 0 either way, its sign is not kept.
  const std::vector<double> sum = values_of(z + fx::zeros_like(z));
  CHECK((same(sum[0], 0.0) && same(sum[1], 0.0)));
  for (double v : values_of(fx::jit([](const fx::Array& a) { return a + fx::zeros_like(a); })(z))) CHECK(v == 0.0);
  check_both("x * -1", [](const fx::Array& a) { return a * -1.f; }, z, {0.0, -0.0});
  check_both("round -0.4", [](const fx::Array& a) { return fx::round(a); }, f32({-0.4, 0.4, -0.5}), {-0.0, 0.0, -0.0});
  check_both("to f16 and back", [](const fx::Array& a) { return fx::astype(fx::astype(a, fx::float16), fx::float32); }, z,
             {-0.0, 0.0});
}

TEST_CASE("float edges: subnormals are kept in f32, f16 and bf16 arithmetic") {
  const float d32 = std::numeric_limits<float>::denorm_min(), m32 = std::numeric_limits<float>::min();
  const fx::Array x = f32({d32, -d32, m32 / 2, 3 * d32});
  check_both("f32 x * 1", [](const fx::Array& a) { return a * 1.f; }, x, {d32, -d32, m32 / 2, 3 * d32});
  check_both("f32 x + x", [](const fx::Array& a) { return a + a; }, x, {2 * d32, -2 * d32, m32, 6 * d32});
  check_both("f32 x / 2", [](const fx::Array& a) { return a / 2.f; }, x, {0.0, -0.0, m32 / 4, 2 * d32});
  check_both("f32 sum", [](const fx::Array& a) { return fx::sum(a); }, x, {double(d32 - d32 + m32 / 2 + 3 * d32)});
  check_both("f32 -> f64 -> f32", [](const fx::Array& a) { return fx::astype(fx::astype(a, fx::float64), fx::float32); }, x,
             {d32, -d32, m32 / 2, 3 * d32});
  // float16: 2^-24 is its smallest subnormal, 2^-14 its smallest normal.
  const double h = std::ldexp(1.0, -24);
  const fx::Array xh = fx::astype(f32({h, 3 * h, -h, std::ldexp(1.0, -15)}), fx::float16);
  check_both("f16 x + x", [](const fx::Array& a) { return a + a; }, xh, {2 * h, 6 * h, -2 * h, std::ldexp(1.0, -14)});
  check_both("f16 x * 0.5", [](const fx::Array& a) { return a * 0.5; }, xh,
             {f16_round(float(h / 2)), f16_round(float(1.5 * h)), f16_round(float(-h / 2)), std::ldexp(1.0, -16)});
  // bfloat16 has float32's exponent: its subnormals are float32's, to 8 bits.
  const double b = std::ldexp(1.0, -133);
  const fx::Array xb = fx::astype(f32({b, -b, std::ldexp(1.0, -127)}), fx::bfloat16);
  check_both("bf16 x + x", [](const fx::Array& a) { return a + a; }, xb, {2 * b, -2 * b, std::ldexp(1.0, -126)});
  check_both("bf16 -> f32", [](const fx::Array& a) { return fx::astype(a, fx::float32); }, xb, {b, -b, std::ldexp(1.0, -127)});
}

TEST_CASE("float edges: float32 -> float16 and bfloat16 round to nearest even, overflow to inf, keep NaN") {
  std::vector<double> in{1.0 + std::ldexp(1.0, -11), 1.0 + 3 * std::ldexp(1.0, -11), 65504, 65519, 65520, 1e10, -1e10,
                         std::ldexp(1.0, -25), std::ldexp(1.0, -26), std::ldexp(1.5, -25), kNaN, -kInf,
                         1.0 + std::ldexp(1.0, -8), 1.0 + 3 * std::ldexp(1.0, -8), 3.3895313892515355e38, 3.4e38,
                         double(std::numeric_limits<float>::denorm_min()), 1e-40};
  std::vector<double> want16, want_b16;
  for (double v : in) want16.push_back(f16_round(float(v))), want_b16.push_back(bf16_round(float(v)));
  const fx::Array x = f32(in);
  check_both("f32 -> f16", [](const fx::Array& a) { return fx::astype(a, fx::float16); }, x, want16);
  check_both("f32 -> bf16", [](const fx::Array& a) { return fx::astype(a, fx::bfloat16); }, x, want_b16);
  // From float64 in one rounding, as XLA's FPCast: 1 + 2^-11 + 2^-40 is above a float16 tie that
  // rounding to float32 first would land on (and round down from, to even).
  in.push_back(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40));
  std::vector<double> want16_from_64;
  for (double v : in) want16_from_64.push_back(double(static_cast<_Float16>(v)));
  check_both("f64 -> f16", [](const fx::Array& a) { return fx::astype(a, fx::float16); }, fx::array(in), want16_from_64);
}

namespace {
// XLA's float -> integer conversion (ConvertElementType): NaN -> 0, saturating at the type's ends,
// else truncation toward zero; unsigned types take x <= 0 to 0.
template <class T>
double xla_to_int(double x) {
  if (std::isnan(x)) return 0;
  const double lo = double(std::numeric_limits<T>::min()), hi = double(std::numeric_limits<T>::max());
  if (x <= lo) return lo;
  if (x >= hi) return hi;
  return std::trunc(x) + 0.0;  // an integer has no -0
}

template <class T>
void check_casts(fx::DType to, const std::vector<double>& in, fx::DType from) {
  std::vector<double> rounded = values_of(fx::astype(fx::array(in), from)), want;
  for (double v : rounded) want.push_back(xla_to_int<T>(v));
  check_both("to " + std::string(fx::dtype_name(to)) + " from " + std::string(fx::dtype_name(from)),
             [to](const fx::Array& a) { return fx::astype(a, to); }, fx::astype(fx::array(in), from), want);
}
}  // namespace

TEST_CASE("float edges: float -> int casts out of range saturate, NaN gives 0") {
  const std::vector<double> in{kNaN, kInf, -kInf, 3e9, -3e9, 2147483520, -2147483648, 2.5, -2.5, 255.9, 256, -1, -0.0,
                               9.3e18, -9.3e18, 4294967040, 127.5, -128.9, 1e30};
  for (fx::DType from : {fx::float32, fx::float64, fx::float16, fx::bfloat16}) {
    check_casts<int8_t>(fx::int8, in, from);
    check_casts<int32_t>(fx::int32, in, from);
    check_casts<int64_t>(fx::int64, in, from);
    check_casts<uint8_t>(fx::uint8, in, from);
    check_casts<uint32_t>(fx::uint32, in, from);
  }
  check_both("to bool", [](const fx::Array& a) { return fx::astype(a, fx::bool_); }, f32({kNaN, -0.0, 0.0, 1e-45, -kInf}),
             {1, 0, 0, 1, 1});
}
