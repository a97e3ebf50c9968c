// Accuracy of the jit's f32 transcendentals over their whole domain, not just the range the op
// table samples: sin/cos of large arguments (libmvec, or the polynomial/libm split without it --
// the meson test jit_sin_cos_without_libmvec runs this file with FLUXION_LIBMVEC=0), and the
// special values of every approximated function.
#include <doctest/doctest.h>
#include <fluxion.h>

#include "tests/test_helpers.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace fx = fluxion;

namespace {

int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;
  if (ib < 0) ib = INT32_MIN - ib;
  return std::abs(int64_t(ia) - int64_t(ib));
}

// Arguments from 1e-3 to 1e30 of both signs, small ones and huge ones side by side in every vector.
std::vector<float> wide_arguments(size_t n) {
  std::vector<float> xs;
  for (size_t i = 0; i < n; ++i) {
    const double e = -3.0 + 33.0 * double((i * 7919) % n) / double(n);
    xs.push_back(float((i % 2 ? -1 : 1) * std::pow(10.0, e)));
  }
  return xs;
}

}  // namespace

TEST_CASE("jit: sin and cos of f32 stay accurate for every argument size") {
  for (size_t n : {size_t(5), size_t(16), size_t(64), size_t(100), size_t(1000)}) {
    CAPTURE(n);
    std::vector<float> xs = wide_arguments(n);
    fx::Array x = fx::array(xs);
    std::vector<float> s = fx::jit([](const fx::Array& a) { return fx::sin(a); })(x).to_vector<float>();
    std::vector<float> c = fx::jit([](const fx::Array& a) { return fx::cos(a); })(x).to_vector<float>();
    for (size_t i = 0; i < n; ++i) {
      CAPTURE(xs[i]);
      const float ws = std::sin(xs[i]), wc = std::cos(xs[i]);
      // a few ulp, or (near a zero of the function) a tiny absolute error
      CHECK((ulp_distance(s[i], ws) <= 4 || std::fabs(s[i] - ws) <= 1e-6f));
      CHECK((ulp_distance(c[i], wc) <= 4 || std::fabs(c[i] - wc) <= 1e-6f));
    }
  }
  // Fused with other ops, in 2-D, and the special values.
  fx::Array m = fx::reshape(fx::array(wide_arguments(96)), {8, 12});
  std::vector<float> got = fx::jit([](const fx::Array& a) { return fx::sin(a) * 2.f + fx::cos(a * 0.5f); })(m).to_vector<float>();
  std::vector<float> in = m.to_vector<float>();
  for (size_t i = 0; i < in.size(); ++i) {
    CAPTURE(in[i]);
    CHECK(got[i] == doctest::Approx(std::sin(in[i]) * 2.f + std::cos(in[i] * 0.5f)).epsilon(1e-5).scale(1.0));
  }
  std::vector<float> special = {0.f, -0.f, INFINITY, -INFINITY, NAN, 1e-40f};
  std::vector<float> s = fx::jit([](const fx::Array& a) { return fx::sin(a); })(fx::array(special)).to_vector<float>();
  CHECK(s[0] == 0.f);
  CHECK(std::signbit(s[1]));
  CHECK(std::isnan(s[2]));
  CHECK(std::isnan(s[3]));
  CHECK(std::isnan(s[4]));
  CHECK(s[5] == doctest::Approx(1e-40f));
}

TEST_CASE("jit: special values of the approximated f32 functions match libm") {
  std::vector<float> xs = {-1000.f, -100.f, -88.f, -20.f, -1.f, -1e-30f, -0.f, 0.f, 1e-40f, 1e-30f, 1e-7f, 0.5f, 1.f,
                           20.f,    88.f,   89.f,  100.f, 1e30f, INFINITY, -INFINITY, NAN};
  fx::Array x = fx::array(xs);
  auto check = [&](const char* name, auto f, float (*ref)(float)) {
    std::vector<float> got = fx::jit(f)(x).template to_vector<float>();
    for (size_t i = 0; i < xs.size(); ++i) {
      CAPTURE(name);
      CAPTURE(xs[i]);
      const float want = ref(xs[i]);
      CHECK((ulp_distance(got[i], want) <= 8 || std::fabs(got[i] - want) <= 1e-6f * std::max(1.f, std::fabs(want))));
    }
  };
  check("exp", [](const fx::Array& a) { return fx::exp(a); }, [](float v) { return std::exp(v); });
  check("log", [](const fx::Array& a) { return fx::log(a); }, [](float v) { return std::log(v); });
  check("tanh", [](const fx::Array& a) { return fx::tanh(a); }, [](float v) { return std::tanh(v); });
  check("erf", [](const fx::Array& a) { return fx::erf(a); }, [](float v) { return std::erf(v); });
  check("log1p", [](const fx::Array& a) { return fx::log1p(a); }, [](float v) { return std::log1p(v); });
  check("expm1", [](const fx::Array& a) { return fx::expm1(a); }, [](float v) { return std::expm1(v); });
  check("sigmoid", [](const fx::Array& a) { return fx::sigmoid(a); }, [](float v) { return 1.f / (1.f + std::exp(-v)); });
}

TEST_CASE("jit: sin, cos and the f32 functions without a polynomial agree with libm over their domains") {
  auto sweep = [](double lo, double hi, size_t n) {
    std::vector<float> xs;
    for (size_t i = 0; i < n; ++i) xs.push_back(float(lo + (hi - lo) * double((i * 7919) % n) / double(n - 1)));
    return xs;
  };
  auto check = [&](const char* name, auto f, float (*ref)(float), std::vector<float> xs) {
    for (float tiny : {1e-30f, -1e-30f, 1e-7f, -1e-7f, 0.f, -0.f}) xs.push_back(tiny);
    std::vector<float> got = fx::jit(f)(fx::array(xs)).template to_vector<float>();
    for (size_t i = 0; i < xs.size(); ++i) {
      CAPTURE(name);
      CAPTURE(xs[i]);
      const float want = ref(xs[i]);
      CHECK((ulp_distance(got[i], want) <= 4 || std::fabs(got[i] - want) <= 1e-7f));
    }
  };
  check("log1p", [](const fx::Array& a) { return fx::log1p(a); }, [](float v) { return std::log1p(v); }, sweep(-0.999, 1e6, 300));
  check("expm1", [](const fx::Array& a) { return fx::expm1(a); }, [](float v) { return std::expm1(v); }, sweep(-100, 88, 300));
  check("exp2", [](const fx::Array& a) { return fx::exp2(a); }, [](float v) { return std::exp2(v); }, sweep(-140, 127, 300));
  check("tan", [](const fx::Array& a) { return fx::tan(a); }, [](float v) { return std::tan(v); }, sweep(-1e4, 1e4, 300));
  check("asin", [](const fx::Array& a) { return fx::arcsin(a); }, [](float v) { return std::asin(v); }, sweep(-1, 1, 300));
  check("acos", [](const fx::Array& a) { return fx::arccos(a); }, [](float v) { return std::acos(v); }, sweep(-1, 1, 300));
  check("atan", [](const fx::Array& a) { return fx::arctan(a); }, [](float v) { return std::atan(v); }, sweep(-1e6, 1e6, 300));
  check("sinh", [](const fx::Array& a) { return fx::sinh(a); }, [](float v) { return std::sinh(v); }, sweep(-89, 89, 300));
  check("cosh", [](const fx::Array& a) { return fx::cosh(a); }, [](float v) { return std::cosh(v); }, sweep(-89, 89, 300));
  check("asinh", [](const fx::Array& a) { return fx::arcsinh(a); }, [](float v) { return std::asinh(v); }, sweep(-1e30, 1e30, 300));
  check("acosh", [](const fx::Array& a) { return fx::arccosh(a); }, [](float v) { return std::acosh(v); }, sweep(1, 1e30, 300));
  check("atanh", [](const fx::Array& a) { return fx::arctanh(a); }, [](float v) { return std::atanh(v); }, sweep(-1, 1, 300));
  check("cbrt", [](const fx::Array& a) { return fx::cbrt(a); }, [](float v) { return std::cbrt(v); }, sweep(-1e30, 1e30, 300));
  // In a fused chain (softplus), as the vectorized loop computes it.
  std::vector<float> xs = sweep(-50, 50, 1000);
  std::vector<float> got =
      fx::jit([](const fx::Array& a) { return fx::log1p(fx::exp(a)) * 2.f; })(fx::array(xs)).to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(xs[i]);
    CHECK(got[i] == doctest::Approx(2.f * std::log1p(std::exp(xs[i]))).epsilon(1e-5));
  }
}

TEST_CASE("jit: scalar libm fallbacks inside big vectorized loops keep the stack flat") {
  // 8M elements: 131,072 steps of the vectorized loop. With FLUXION_LIBMVEC=0 (the meson test
  // jit_sin_cos_without_libmvec) each step calls log1pf lane by lane through a stack buffer; a
  // buffer allocated per step overflowed the stack.
  const int64_t n = int64_t(8) << 20;
  fx::Array x = fx::linspace(-5.f, 5.f, n);
  std::vector<float> got = fx::jit([](const fx::Array& a) { return fx::log1p(fx::exp(a)); })(x).to_vector<float>();
  std::vector<float> in = x.to_vector<float>();
  for (int64_t i = 0; i < n; i += 4099) {
    CAPTURE(in[size_t(i)]);
    CHECK(got[size_t(i)] == doctest::Approx(std::log1p(std::exp(in[size_t(i)]))).epsilon(1e-5));
  }
}

TEST_CASE("jit: f64 transcendentals agree with libm to a few ulp") {
  auto ulp64 = [](double a, double b) -> int64_t {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
    if (a == b) return 0;
    int64_t ia, ib;
    std::memcpy(&ia, &a, 8);
    std::memcpy(&ib, &b, 8);
    if (ia < 0) ia = INT64_MIN - ia;
    if (ib < 0) ib = INT64_MIN - ib;
    return ia > ib ? ia - ib : ib - ia;
  };
  auto sweep = [](double lo, double hi, size_t n) {
    std::vector<double> xs;
    for (size_t i = 0; i < n; ++i) xs.push_back(lo + (hi - lo) * double((i * 7919) % n) / double(n - 1));
    for (double v : {0.0, -0.0, 1e-300, -1e-300, 1e-17})
      if (v >= lo && v <= hi) xs.push_back(v);
    return xs;
  };
  auto check = [&](const char* name, auto f, double (*ref)(double), std::vector<double> xs) {
    std::vector<double> got = fx::jit(f)(fx::array(xs)).template to_vector<double>();
    for (size_t i = 0; i < xs.size(); ++i) {
      CAPTURE(name);
      CAPTURE(xs[i]);
      const double want = ref(xs[i]);
      CHECK((ulp64(got[i], want) <= 4 || std::fabs(got[i] - want) <= 1e-300));
    }
  };
  check("exp", [](const fx::Array& a) { return fx::exp(a); }, [](double v) { return std::exp(v); }, sweep(-745, 709, 400));
  check("log", [](const fx::Array& a) { return fx::log(a); }, [](double v) { return std::log(v); }, sweep(0, 1e300, 400));
  check("tanh", [](const fx::Array& a) { return fx::tanh(a); }, [](double v) { return std::tanh(v); }, sweep(-30, 30, 400));
  check("erf", [](const fx::Array& a) { return fx::erf(a); }, [](double v) { return std::erf(v); }, sweep(-6, 6, 400));
  check("sin", [](const fx::Array& a) { return fx::sin(a); }, [](double v) { return std::sin(v); }, sweep(-1e10, 1e10, 400));
  check("cos", [](const fx::Array& a) { return fx::cos(a); }, [](double v) { return std::cos(v); }, sweep(-1e10, 1e10, 400));
  check("log1p", [](const fx::Array& a) { return fx::log1p(a); }, [](double v) { return std::log1p(v); }, sweep(-0.999, 1e10, 400));
  check("expm1", [](const fx::Array& a) { return fx::expm1(a); }, [](double v) { return std::expm1(v); }, sweep(-50, 700, 400));
  check("atan", [](const fx::Array& a) { return fx::arctan(a); }, [](double v) { return std::atan(v); }, sweep(-1e10, 1e10, 400));
  check("cbrt", [](const fx::Array& a) { return fx::cbrt(a); }, [](double v) { return std::cbrt(v); }, sweep(-1e300, 1e300, 400));
  check("sigmoid", [](const fx::Array& a) { return fx::sigmoid(a); }, [](double v) { return 1.0 / (1.0 + std::exp(-v)); },
        sweep(-700, 700, 400));
}

TEST_CASE("jit: odd functions keep the sign of zero, in f32 and f64") {
  for (fx::DType d : {fx::float32, fx::float64}) {
    CAPTURE(fx::dtype_name(d));
    fx::Array z = fx::astype(fx::array({-0.f, 0.f}), d);
    auto check = [&](const char* name, auto f) {
      CAPTURE(name);
      std::vector<double> got = fx::astype(fx::jit(f)(z), fx::float64).template to_vector<double>();
      CHECK(got[0] == 0.0);
      CHECK(std::signbit(got[0]));
      CHECK(got[1] == 0.0);
      CHECK_FALSE(std::signbit(got[1]));
    };
    check("sin", [](const fx::Array& a) { return fx::sin(a); });
    check("tan", [](const fx::Array& a) { return fx::tan(a); });
    check("asin", [](const fx::Array& a) { return fx::arcsin(a); });
    check("atan", [](const fx::Array& a) { return fx::arctan(a); });
    check("sinh", [](const fx::Array& a) { return fx::sinh(a); });
    check("asinh", [](const fx::Array& a) { return fx::arcsinh(a); });
    check("atanh", [](const fx::Array& a) { return fx::arctanh(a); });
    check("tanh", [](const fx::Array& a) { return fx::tanh(a); });
    check("erf", [](const fx::Array& a) { return fx::erf(a); });
    check("cbrt", [](const fx::Array& a) { return fx::cbrt(a); });
    check("expm1", [](const fx::Array& a) { return fx::expm1(a); });
    check("log1p", [](const fx::Array& a) { return fx::log1p(a); });
  }
}

TEST_CASE("jit: f32 and f64 pow and atan2 agree with libm, special cases included") {
  // Bases and exponents from a grid that covers negative bases with integral exponents, zeros of
  // both signs, infinities, NaN, and large and tiny magnitudes; every pair is one lane.
  const std::vector<double> base = {-8, -2.5, -1, -0.0, 0, 1e-30, 0.3, 1, 2, 7.5, 1e10, INFINITY, -INFINITY, NAN};
  const std::vector<double> expo = {-3, -0.5, 0, 0.5, 1, 2, 3, 1.0 / 3, 10.5, -40, INFINITY, -INFINITY, NAN};
  std::vector<double> xs, ys;
  for (double b : base)
    for (double e : expo) xs.push_back(b), ys.push_back(e);
  for (fx::DType d : {fx::float32, fx::float64}) {
    CAPTURE(fx::dtype_name(d));
    fx::Array x = fx::astype(fx::array(xs), d), y = fx::astype(fx::array(ys), d);
    auto pw = fx::jit([](const fx::Array& a, const fx::Array& b) { return fx::power(a, b); });
    auto at = fx::jit([](const fx::Array& a, const fx::Array& b) { return fx::arctan2(a, b); });
    std::vector<double> gp = fx::astype(pw(x, y), fx::float64).to_vector<double>();
    std::vector<double> ga = fx::astype(at(x, y), fx::float64).to_vector<double>();
    std::vector<double> xv = fx::astype(x, fx::float64).to_vector<double>(), yv = fx::astype(y, fx::float64).to_vector<double>();
    for (size_t i = 0; i < xs.size(); ++i) {
      CAPTURE(xv[i]);
      CAPTURE(yv[i]);
      double wp, wa;
      if (d == fx::float32) {
        wp = double(std::pow(float(xv[i]), float(yv[i])));
        wa = double(std::atan2(float(xv[i]), float(yv[i])));
      } else {
        wp = std::pow(xv[i], yv[i]);
        wa = std::atan2(xv[i], yv[i]);
      }
      auto close = [](double g, double w) {
        if (std::isnan(w)) return std::isnan(g);
        if (std::isinf(w) || w == 0) return g == w && std::signbit(g) == std::signbit(w);
        return std::fabs(g - w) <= 4e-7 * std::fabs(w);
      };
      CHECK(close(gp[i], wp));
      CHECK(close(ga[i], wa));
    }
  }
}

// lowering/tiling.cpp collapses all-parallel elementwise loops with a short innermost extent (a
// conv weight's [O, I, 3, 3]) into one loop; shapes on both sides of the rule, with scalars,
// a broadcast operand (not collapsed) and several results, must give eager's values.
TEST_CASE("jit: short elementwise loops collapsed into one give eager's values") {
  const std::vector<fx::Shape> shapes = {{64, 32, 3, 3}, {5, 7, 1}, {3, 2, 7}, {4, 9, 8}, {2, 3, 5, 1, 2}};
  for (const fx::Shape& s : shapes) {
    CAPTURE(s.str());
    fx::Array p = fx::random::normal(fx::random::key(1), s), g = fx::random::normal(fx::random::key(2), s);
    fx::Array row = fx::random::normal(fx::random::key(3), {s[s.rank() - 1]});
    auto step = [](const fx::Array& p, const fx::Array& g, const fx::Array& row) {
      fx::Array m = 0.9f * p + 0.1f * g;
      return std::make_tuple(p - 0.01f * m / (fx::sqrt(g * g) + 1e-8f), m, p * row, fx::where(g > 0.f, p, g));
    };
    auto eager = step(p, g, row);
    auto compiled = fx::jit(step)(p, g, row);
    CHECK(test_helpers::max_abs_diff(std::get<0>(compiled), std::get<0>(eager)) < 1e-5);
    CHECK(test_helpers::max_abs_diff(std::get<1>(compiled), std::get<1>(eager)) < 1e-6);
    CHECK(test_helpers::max_abs_diff(std::get<2>(compiled), std::get<2>(eager)) < 1e-6);
    CHECK(test_helpers::max_abs_diff(std::get<3>(compiled), std::get<3>(eager)) == 0.0);
  }
}
