// FLUXION_LOG_COMPILES=1: every jit compile prints one line on stderr naming the function, the line
// of fx::jit, the argument types, why it compiled (first compile, or new argument types and the
// last ones), where it runs and the time -- the recompile log JAX users ask for.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "test_helpers.h"

namespace fx = fluxion;

namespace {
// What `f` writes to stderr (fd 2), through a temporary file.
template <class F>
std::string stderr_of(F f) {
  std::fflush(stderr);
  char path[] = "/tmp/fluxion_stderr_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const int saved = dup(2);
  dup2(fd, 2);
  f();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  std::remove(path);
  return text.str();
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("FLUXION_LOG_COMPILES: each compile is one line with the function, the line, the types and why") {
  const test_helpers::ScopedEnv log("FLUXION_LOG_COMPILES", "1");
  auto f = fx::jit([](const fx::Array& x) { return fx::sin(x) * 2.f; });
  const std::string first = stderr_of([&] { f(fx::ones({3})); });
  CHECK_MESSAGE(contains(first, "fluxion: jit("), first);
  CHECK_MESSAGE(contains(first, "test_log_compiles.cpp"), first);  // the line of fx::jit
  CHECK_MESSAGE(contains(first, "compiled for (f32[3]) on the CPU: its first compile"), first);
  CHECK_MESSAGE(contains(first, " ms in all (trace "), first);
  CHECK(stderr_of([&] { f(fx::ones({3})); }).empty());  // a cached call compiles nothing
  const std::string second = stderr_of([&] { f(fx::ones({4, 2})); });
  CHECK_MESSAGE(contains(second, "compiled for (f32[4,2]) on the CPU: new argument types (it compiled 1 signature "
                                 "before; the last: (f32[3]); changed: argument 1 f32[3] -> f32[4,2])"),
                second);
  // Many arguments: the count, the first three and the last two, and which ones changed.
  auto g = fx::jit([](const std::vector<fx::Array>& xs) { return xs[0] + xs[9]; });
  std::vector<fx::Array> xs(10, fx::ones({2}));
  stderr_of([&] { g(xs); });
  xs[4] = fx::ones({3});
  xs[9] = fx::ones({2}, fx::float64);
  const std::string many = stderr_of([&] { g(xs); });
  CHECK_MESSAGE(contains(many, "compiled for (10 arguments: f32[2], f32[2], f32[2], ..., f32[2], f64[2]) on the CPU"), many);
  CHECK_MESSAGE(contains(many, "changed: argument 5 f32[2] -> f32[3], argument 10 f32[2] -> f64[2])"), many);
  const test_helpers::ScopedEnv off("FLUXION_LOG_COMPILES", "0");
  CHECK(stderr_of([&] { f(fx::ones({5})); }).empty());
}
