// debug_nans: planted NaNs and infinities, each on a line of its own; the error must name the
// primitive that made it and that line -- forward, in the backward pass (the forward op's line),
// inside scan and cond, under vmap, jitted and eager. And check_bounds: an out-of-bounds index
// raises instead of clamping.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <functional>
#include <string>

namespace fx = fluxion;

namespace {

struct Planted {
  const char* what;
  std::function<fx::Array(const fx::Array&)> f;
  float x;                   // every element of the input
  std::vector<std::string> prims;  // the primitive expected (one of these)
  int line;                  // where the primitive was written
};

// One planted case per line: the lambda's body is on the line that __LINE__ names.
#define PLANT(what, x, prims, ...) Planted{what, [](const fx::Array& a) -> fx::Array { return __VA_ARGS__; }, x, prims, __LINE__}
using P = std::vector<std::string>;

std::vector<Planted> planted() {
  return {
      PLANT("log of a negative", 1.f, P{"log"}, fx::log(a - 2.f)),
      PLANT("log of zero", 1.f, P{"log"}, fx::log(a - 1.f)),
      PLANT("sqrt of a negative", 1.f, P{"sqrt"}, fx::sqrt(a - 3.f)),
      PLANT("x / 0", 1.f, P{"div"}, a / (a - 1.f)),
      PLANT("0 / 0", 1.f, P{"div"}, (a - 1.f) / (a - 1.f)),
      PLANT("exp overflow", 1.f, P{"exp"}, fx::exp(a * 100.f)),
      PLANT("arccos out of domain", 1.f, P{"acos"}, fx::arccos(a + 1.f)),
      PLANT("arcsin out of domain", 1.f, P{"asin"}, fx::arcsin(a * 3.f)),
      PLANT("log1p below -1", 1.f, P{"log1p"}, fx::log1p(-a - 1.f)),
      PLANT("power of a negative", 1.f, P{"pow"}, fx::power(-a, 0.5f)),
      PLANT("rsqrt of zero", 1.f, P{"rsqrt"}, fx::rsqrt(a - 1.f)),
      PLANT("lgamma at a pole", 1.f, P{"lgamma"}, fx::lgamma(a - 1.f)),
      PLANT("arctanh of one", 1.f, P{"atanh"}, fx::arctanh(a)),
      PLANT("arccosh below one", 1.f, P{"acosh"}, fx::arccosh(a - 1.f)),
      PLANT("product overflow", 1.f, P{"mul"}, a * 1e30f * 1e30f),
      PLANT("sum overflow", 1.f, P{"reduce_sum"}, fx::sum(a * 2e38f)),
      PLANT("remainder by zero", 1.f, P{"rem"}, fx::remainder(a, a - 1.f)),
      PLANT("in a scan body", 1.f, P{"log"}, fx::scan([](const fx::Array& c, const fx::Array& x) { return std::pair{c - x, fx::log(c - 2.5f)}; }, fx::sum(a), a).second),
      PLANT("in the cond branch taken", 1.f, P{"sqrt"}, fx::cond(fx::sum(a) > 0.f, [&] { return fx::sqrt(-a); }, [&] { return a; })),
      PLANT("under vmap", 1.f, P{"log"}, fx::vmap([](const fx::Array& r) { return fx::log(r - 5.f); })(a)),
      PLANT("backward of sqrt at 0", 1.f, P{"div"}, fx::grad([](const fx::Array& v) { return fx::sum(fx::sqrt(v - 1.f)); })(a)),
      PLANT("backward of arcsin at 1", 1.f, P{"rsqrt"}, fx::grad([](const fx::Array& v) { return fx::sum(fx::arcsin(v)); })(a)),
      PLANT("backward of power at 0", 1.f, (P{"pow", "mul", "div"}), fx::grad([](const fx::Array& v) { return fx::sum(fx::power(v - 1.f, 0.5f)); })(a)),
      PLANT("complex log of zero", 1.f, P{"log"}, fx::real(fx::log(fx::complex(a - 1.f, a * 0.f)))),
      PLANT("complex exp overflow", 1.f, P{"exp"}, fx::imag(fx::exp(fx::complex(a * 100.f, a)))),
      PLANT("backward under vmap", 1.f, P{"div"}, fx::vmap(fx::grad([](const fx::Array& v) { return fx::sum(fx::sqrt(v - 1.f)); }))(fx::reshape(a, {3, 1}))),
  };
}

std::string line_tag(int line) { return "test_debug_nans.cpp:" + std::to_string(line); }

// The error f raises on an input filled with x, or "" if none.
std::string error_of(const std::function<fx::Array(const fx::Array&)>& f, float x) {
  try {
    f(fx::full({3}, x));
  } catch (const fx::FloatingPointError& e) {
    return e.what();
  }
  return "";
}

bool names_one_of(const std::string& msg, const std::vector<std::string>& prims) {
  for (const std::string& p : prims)
    if (msg.find("FloatingPointError: " + p + "(") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("debug_nans: jit names the primitive and the line that made a NaN or Inf") {
  const std::vector<Planted> cases = planted();
  CHECK(cases.size() >= 20);
  fx::config::DebugNans on(true);
  for (const Planted& c : cases) {
    CAPTURE(c.what);
    const std::string msg = error_of(fx::jit(c.f), c.x);
    CAPTURE(msg);
    CHECK(names_one_of(msg, c.prims));
    CHECK(msg.find(line_tag(c.line)) != std::string::npos);
  }
}

TEST_CASE("debug_nans: eager ops are checked as they run") {
  fx::config::DebugNans on(true);
  for (const Planted& c : planted()) {
    CAPTURE(c.what);
    const std::string msg = error_of(c.f, c.x);
    CAPTURE(msg);
    CHECK(names_one_of(msg, c.prims));
    CHECK(msg.find(line_tag(c.line)) != std::string::npos);
  }
}

TEST_CASE("debug_nans: off, or NaNs that came in with the inputs, raise nothing") {
  for (const Planted& c : planted()) CHECK(error_of(fx::jit(c.f), c.x).empty());  // off by default
  fx::config::DebugNans on(true);
  auto f = fx::jit([](const fx::Array& a) { return a * 2.f; });
  fx::Array y = f(fx::full({2}, std::nanf("")));  // passed along, not produced
  CHECK(std::isnan(y.to_vector<float>()[0]));
  CHECK(error_of(f, 1.f).empty());
  {
    fx::config::DebugNans off(false);
    CHECK_FALSE(fx::config::debug_nans());
  }
  CHECK(fx::config::debug_nans());
}

TEST_CASE("check_bounds: take and dynamic_slice raise instead of clamping") {
  fx::Array x = fx::array(std::vector<float>{10, 11, 12, 13});
  auto take = fx::jit([](const fx::Array& v, const fx::Array& i) { return fx::take(v, i, 0); });
  auto window = fx::jit([](const fx::Array& v, const fx::Array& s) { return fx::dynamic_slice(v, {s}, {2}); });
  fx::Array bad = fx::array(std::vector<int32_t>{1, 7});
  // Off: clamped, as before.
  CHECK(take(x, bad).to_vector<float>() == std::vector<float>{11, 13});
  CHECK(window(x, fx::scalar(int32_t(3))).to_vector<float>() == std::vector<float>{12, 13});
  fx::config::CheckBounds on(true);
  auto take_on = fx::jit([](const fx::Array& v, const fx::Array& i) { return fx::take(v, i, 0); });
  auto window_on = fx::jit([](const fx::Array& v, const fx::Array& s) { return fx::dynamic_slice(v, {s}, {2}); });
  CHECK(take_on(x, fx::array(std::vector<int32_t>{0, 3})).to_vector<float>() == std::vector<float>{10, 13});
  try {
    take_on(x, bad);
    FAIL("no error");
  } catch (const fx::ValueError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("take(f32[4], i32[2])") != std::string::npos);
    CHECK(msg.find("index 7") != std::string::npos);
    CHECK(msg.find("test_debug_nans.cpp") != std::string::npos);
  }
  CHECK(window_on(x, fx::scalar(int32_t(2))).to_vector<float>() == std::vector<float>{12, 13});
  CHECK_THROWS_AS(window_on(x, fx::scalar(int32_t(3))), fx::ValueError);
  // Under vmap each example is checked; eagerly the check runs at once.
  auto rows = fx::jit(fx::vmap([](const fx::Array& i, const fx::Array& v) { return fx::take(v, i, 0); },
                               fx::in_axes(0, fx::none)));
  CHECK_THROWS_WITH_AS(rows(fx::array(std::vector<int32_t>{0, 9}), x), doctest::Contains("batch 1"), fx::ValueError);
  CHECK_THROWS_AS(fx::take(x, bad, 0), fx::ValueError);
}
