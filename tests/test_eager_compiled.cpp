// Eager transcendental ops on large float arrays run as compiled one-op programs
// (compile/eager_cpu.h): the same values as the reference kernel (to the pipeline's math
// accuracy), the same errors, and only where the policy says -- never for small arrays, cheap
// primitives, integers or complex numbers.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <optional>
#include <vector>

#include "compile/eager_cpu.h"
#include "test_helpers.h"

namespace fx = fluxion;
namespace rt = fluxion::runtime;

namespace {

// Sets the mode for one scope (the setting is read once per process).
struct Mode {
  explicit Mode(rt::EagerCompile m) { rt::override_eager_compile(m); }
  ~Mode() { rt::override_eager_compile(std::nullopt); }
};

fx::Array ramp(int64_t n, float lo, float hi) { return fx::linspace(lo, hi, n); }

// The relative difference of a compiled eager result from the reference kernel's.
double rel_diff(const fx::Array& compiled, const fx::Array& reference) {
  return test_helpers::max_abs_diff(compiled, reference) /
         std::max(1.0, double(fx::max(fx::abs(reference)).item<float>()));
}

}  // namespace

TEST_CASE("eager compiled: transcendental ops on large arrays match the reference kernel") {
  const fx::Array x = ramp(1 << 20, -3.f, 3.f), pos = ramp(1 << 20, 0.01f, 5.f);
  struct Case {
    const char* name;
    std::function<fx::Array()> f;
  };
  const std::vector<Case> cases = {
      {"exp", [&] { return fx::exp(x); }},       {"tanh", [&] { return fx::tanh(x); }},
      {"sin", [&] { return fx::sin(x); }},       {"log", [&] { return fx::log(pos); }},
      {"logistic", [&] { return fx::nn::sigmoid(x); }}, {"erf", [&] { return fx::erf(x); }},
      {"pow", [&] { return fx::pow(pos, x); }},  {"atan2", [&] { return fx::arctan2(x, pos); }},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    fx::Array reference, compiled;
    {
      Mode off(rt::EagerCompile::off);
      const int64_t runs = rt::eager_compiled_runs();
      reference = c.f();
      CHECK(rt::eager_compiled_runs() == runs);
    }
    {
      Mode on(rt::EagerCompile::auto_);  // 1M elements: compiled at the first call
      const int64_t runs = rt::eager_compiled_runs();
      compiled = c.f();
      CHECK(rt::eager_compiled_runs() == runs + 1);
    }
    CHECK(compiled.aval() == reference.aval());
    CHECK(rel_diff(compiled, reference) < 1e-5);
  }
}

TEST_CASE("eager compiled: the policy -- size, repetition, primitive, dtype") {
  Mode on(rt::EagerCompile::auto_);
  auto runs = [] { return rt::eager_compiled_runs(); };
  const int64_t r0 = runs();
  (void)fx::exp(ramp(1000, 0.f, 1.f));  // small: the reference kernel
  CHECK(runs() == r0);
  // A size no other test uses: the calls are counted per signature.
  const fx::Array medium = ramp(20011, 0.f, 1.f);
  (void)fx::cos(medium);
  (void)fx::cos(medium);
  CHECK(runs() == r0);  // 16K-1M elements: not before the third call of a signature
  (void)fx::cos(medium);
  CHECK(runs() == r0 + 1);
  (void)fx::cos(medium);
  CHECK(runs() == r0 + 2);
  const fx::Array big = ramp(1 << 20, 0.f, 1.f);
  (void)(big * 2.f + 1.f);  // cheap primitives stay on the reference kernel
  (void)fx::exp(fx::astype(big, fx::complex64));  // complex: reference
  CHECK(runs() == r0 + 2);
  fx::Array f64 = fx::tanh(fx::astype(big, fx::float64));  // f64 is compiled too
  CHECK(runs() == r0 + 3);
  CHECK(f64.dtype() == fx::float64);
}

TEST_CASE("eager compiled: fx::eval, the reference interpreter, keeps to the reference kernels") {
  Mode always(rt::EagerCompile::always);
  const fx::Array x = ramp(1 << 20, -3.f, 3.f);
  const fx::Program p = fx::make_ir([](const fx::Array& v) { return fx::tanh(v); })(x);
  const int64_t r0 = rt::eager_compiled_runs();
  const fx::Array reference = fx::eval(p, {x})[0];
  CHECK(rt::eager_compiled_runs() == r0);
  CHECK(rel_diff(fx::tanh(x), reference) < 1e-5);  // outside eval: compiled
  CHECK(rt::eager_compiled_runs() == r0 + 1);
}

TEST_CASE("eager compiled: always runs every size; debug_nans still names the primitive") {
  Mode always(rt::EagerCompile::always);
  const int64_t r0 = rt::eager_compiled_runs();
  const fx::Array y = fx::log(fx::array({1.f, 2.f, 4.f}));
  CHECK(rt::eager_compiled_runs() == r0 + 1);
  CHECK(test_helpers::max_abs_diff(y, fx::array({0.f, std::log(2.f), std::log(4.f)})) < 1e-6);
  fx::config::debug_nans(true);
  const std::string msg = test_helpers::error_of<fx::FloatingPointError>([] { (void)fx::log(fx::array({-1.f})); });
  fx::config::debug_nans(false);
  CHECK_MESSAGE(msg.find("log") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("test_eager_compiled.cpp") != std::string::npos, msg);
}
