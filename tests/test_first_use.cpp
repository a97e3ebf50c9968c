// Regression tests for what a new user met in a first scientific-computing session (issue 15,
// item 6): creation dtypes from C++ scalars, relu's gradient at 0, errors that name the op and the
// user's line, an invalid FLUXION_NUM_THREADS.
#include <doctest/doctest.h>

#include <fluxion.h>

#include <cstdlib>
#include <string>

#include "ir/settings.h"
#include "compile/target.h"
#include "tests/test_helpers.h"

namespace fx = fluxion;

namespace {
// The message of the error `call` throws as E, or "(no error)".
template <class E, class F>
std::string message_of(F call) {
  try {
    call();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("arange: integer bounds give int32, a floating bound float32 (the C++ scalar rule)") {
  fx::Array a = fx::arange(9, 200, 10, fx::int32);
  CHECK(a.dtype() == fx::int32);
  CHECK(a.shape() == fx::Shape{20});
  CHECK(a.to_vector<int32_t>().back() == 199);
  CHECK(fx::arange(2, 5).dtype() == fx::int32);
  CHECK(fx::arange(2, 5).to_vector<int32_t>() == std::vector<int32_t>{2, 3, 4});
  CHECK(fx::arange(5, 0, -2).to_vector<int32_t>() == std::vector<int32_t>{5, 3, 1});
  CHECK(fx::arange(3, 3).shape() == fx::Shape{0});
  CHECK(fx::arange(int64_t(1), 4L).dtype() == fx::int32);
  CHECK(fx::arange(0, 2, 1, fx::float64).to_vector<double>() == std::vector<double>{0, 1});
  // Any floating bound: float32, whatever its C++ type, unless the dtype says otherwise.
  CHECK(fx::arange(0.0, 5.0).dtype() == fx::float32);
  CHECK(fx::arange(0, 1.5, 0.5).to_vector<float>() == std::vector<float>{0, 0.5f, 1});
  CHECK(fx::arange(0.0, 1.0, 0.5, fx::float64).dtype() == fx::float64);
  CHECK(contains(message_of<fx::ValueError>([] { fx::arange(0, 4, 0); }), "step must not be zero"));
}

TEST_CASE("linspace: integer, float and double bounds all resolve (float32 unless a dtype is given)") {
  CHECK(fx::linspace(0, 1, 5).to_vector<float>() == std::vector<float>{0.f, 0.25f, 0.5f, 0.75f, 1.f});
  CHECK(fx::linspace(0.0, 1.0, 5).dtype() == fx::float32);
  CHECK(fx::linspace(0.f, 1.0, 3).to_vector<float>() == std::vector<float>{0.f, 0.5f, 1.f});
  CHECK(fx::linspace(0, 2, 3, fx::float64).to_vector<double>() == std::vector<double>{0, 1, 2});
  // Data keeps its C++ type; parameters are weak: the documented rule, side by side.
  CHECK(fx::array({0.0}).dtype() == fx::float64);
  CHECK(fx::scalar(0.0).dtype() == fx::float64);
  CHECK(fx::full({2}, 0.5).dtype() == fx::float32);
  CHECK((fx::ones({2}, fx::float16) * 2.0).dtype() == fx::float16);
}

TEST_CASE("nn::relu has gradient 0 at 0 (as JAX and PyTorch), 1 above, 0 below") {
  auto f = [](const fx::Array& x) { return fx::sum(fx::nn::relu(x)); };
  fx::Array g = fx::grad(f)(fx::array({-1.f, 0.f, 2.f}));
  CHECK(g.to_vector<float>() == std::vector<float>{0.f, 0.f, 1.f});
  CHECK(fx::nn::relu(fx::array({-1, 0, 3})).dtype() == fx::int32);
}

TEST_CASE("scan given an empty Array handle names scan, the leaf and the user's line") {
  auto step = [](const fx::Array& c, const fx::Array& x) { return std::pair{c + x, c}; };
  const int line = __LINE__ + 1;
  std::string m = message_of<fx::ValueError>([&] { fx::scan(step, fx::scalar(0.f), fx::Array()); });
  CHECK(contains(m, "scan at test_first_use.cpp:" + std::to_string(line)));
  CHECK(contains(m, "leaf 0 of xs is an empty Array handle"));
  m = message_of<fx::ValueError>([&] { fx::scan(step, fx::Array(), fx::zeros({3})); });
  CHECK(contains(m, "leaf 0 of init is an empty Array handle"));
}

TEST_CASE("item() under grad names its own line and says the value is an argument") {
  auto f = [](const fx::Array& x) {
    if (x.item<float>() > 0) return fx::sum(x);  // a C++ branch on a traced value
    return -fx::sum(x);
  };
  const int line = __LINE__ - 3;
  std::string m = message_of<fx::ConcretizationError>([&] { fx::grad(f)(fx::scalar(1.f)); });
  CHECK(contains(m, "item() at test_first_use.cpp:" + std::to_string(line)));
  CHECK(contains(m, "an argument of the transformed function"));
  CHECK_FALSE(contains(m, "<unknown>"));
  // A value computed inside the function names the line that made it.
  auto g = [](const fx::Array& x) {
    fx::Array y = x * 2.f;
    return y.item<float>() > 0 ? fx::sum(x) : -fx::sum(x);
  };
  const int made = __LINE__ - 3;
  m = message_of<fx::ConcretizationError>([&] { fx::grad(g)(fx::scalar(1.f)); });
  CHECK(contains(m, "created at test_first_use.cpp:" + std::to_string(made)));
}

TEST_CASE("FLUXION_NUM_THREADS and FLUXION_CPU_DEVICES must be positive integers") {
  // Read through the environment as the library reads them (ir/settings.h; every kind of setting
  // is tested in test_settings.cpp).
  const test_helpers::ScopedEnv threads("FLUXION_NUM_THREADS", "4"), devices("FLUXION_CPU_DEVICES", nullptr);
  CHECK(fx::thread_setting() == 4);
  for (const char* bad : {"abc", "0", "-2", "4x", " 4"}) {
    threads.set(bad);
    const std::string m = message_of<fx::ValueError>([] { fx::thread_setting(); });
    CHECK(contains(m, "FLUXION_NUM_THREADS='" + std::string(bad) + "' is not a positive integer"));
    CHECK(contains(m, "unset it to use every core"));
    devices.set(bad);
    CHECK(contains(message_of<fx::ValueError>([] { fx::integer_setting("FLUXION_CPU_DEVICES", 1); }),
                   "FLUXION_CPU_DEVICES='" + std::string(bad) + "' is not a positive integer"));
    devices.set(nullptr);
  }
}
