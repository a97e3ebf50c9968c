// Kernels compiled in parts (lowering/lower_parts.cpp): a large program with library calls becomes
// one function per run of eqns, cut at library calls, so that compile time stays linear. The
// compiled results must match eager evaluation whatever crosses a cut: values made early and read
// late, inputs returned as outputs, one value returned twice, arrays without elements. The dumps
// show whether a program was cut (the input module's part functions).
#include <doctest/doctest.h>
#include <fluxion.h>

#include "examples/heat_rk4.h"
#include "tests/test_helpers.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace fx = fluxion;

namespace {

constexpr int64_t kPoints = 32;

// Compiles `run` with FLUXION_DUMP set to a fresh directory; whether the input module was cut.
template <class F>
bool compiled_in_parts(const std::string& name, F run) {
  const std::string dir = "/tmp/fluxion_test_parts_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const test_helpers::ScopedEnv dump("FLUXION_DUMP", dir);
  run();
  dump.set(nullptr);
  bool parts = false;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string path = e.path().string();
    if (path.find(".input.mlir") == std::string::npos) continue;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    parts = parts || text.str().find("@kernel_part_1(") != std::string::npos;
  }
  std::filesystem::remove_all(dir);
  return parts;
}

}  // namespace

TEST_CASE("jit: the second derivative of an unrolled spectral solver (hundreds of FFTs, in parts) matches eager") {
  const int steps = 6;
  auto d2 = [&](const fx::Array& nu) {
    return fx::grad(fx::grad([&](const fx::Array& n) { return example::heat_rk4_loss(n, kPoints, steps, 0.2); }))(nu);
  };
  fx::Array nu = fx::scalar(0.1), got;
  CHECK(compiled_in_parts("spectral", [&] { got = fx::jit(d2)(nu); }));
  const double want = d2(nu).item<double>();
  CHECK(got.item<double>() == doctest::Approx(want).epsilon(1e-11));
}

TEST_CASE("jit: what crosses the cuts of a kernel in parts -- early values read late, inputs and duplicates returned, empty arrays") {
  // Each round: an FFT round trip (where a cut may fall), then 60 elementwise eqns.
  auto rounds = [](const fx::Array& u0, const fx::Array& scale) {
    fx::Array k = fx::fft::rfftfreq(kPoints, 1.0 / kPoints, fx::float64);
    fx::Array none = fx::slice(u0, {0}, {0}) * 2.0;  // f64[0], made in the first part
    fx::Array u = u0, first;
    for (int round = 0; round < 8; ++round) {
      u = fx::fft::irfft(fx::fft::rfft(u) / (1.0 + k * k), kPoints);
      for (int j = 0; j < 20; ++j) u = fx::sin(u) * scale + u * 0.5;
      if (round == 0) first = u;
    }
    return std::make_tuple(u + first * u0, first, u0, first, none + 1.0);
  };
  fx::Array u0 = fx::cos(fx::arange(0.0, 1.0, 1.0 / kPoints, fx::float64)), scale = fx::scalar(0.7);
  std::tuple<fx::Array, fx::Array, fx::Array, fx::Array, fx::Array> got;
  CHECK(compiled_in_parts("rounds", [&] { got = fx::jit(rounds)(u0, scale); }));
  auto want = rounds(u0, scale);
  CHECK(test_helpers::max_abs_diff(std::get<0>(got), std::get<0>(want)) <= 1e-12);
  CHECK(test_helpers::max_abs_diff(std::get<1>(got), std::get<1>(want)) <= 1e-12);
  CHECK(test_helpers::max_abs_diff(std::get<2>(got), u0) == 0);
  CHECK(test_helpers::max_abs_diff(std::get<3>(got), std::get<1>(got)) == 0);
  CHECK(std::get<4>(got).shape() == fx::Shape{0});

  // A short program with the same calls stays one function.
  auto short_rounds = [](const fx::Array& u) { return fx::fft::irfft(fx::fft::rfft(fx::sin(u)) * 2.0, kPoints) + u; };
  fx::Array short_got;
  CHECK_FALSE(compiled_in_parts("short", [&] { short_got = fx::jit(short_rounds)(u0); }));
  CHECK(test_helpers::max_abs_diff(short_got, short_rounds(u0)) <= 1e-14);
}
