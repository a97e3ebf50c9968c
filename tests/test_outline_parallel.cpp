// fx-outline-parallel (lowering/outline_parallel.cpp): a kernel with several threaded loops gives
// each its own function before the translation to LLVM IR, and computes what it computed in place.
#include <doctest/doctest.h>
#include <fluxion.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_helpers.h"

namespace fx = fluxion;
using test_helpers::ramp;

namespace {

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("jit: each threaded loop of a kernel is a function of its own before translation, with the same results") {
  const std::string dir = "/tmp/fluxion_test_outline_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  test_helpers::ScopedEnv dump("FLUXION_DUMP", dir);
  const test_helpers::ScopedEnv no_disk_cache("FLUXION_CACHE_DIR", "off");  // a kernel read back has no stages to dump
  // Three loops that do not fuse (an elementwise map, a column sum, a row max), each big enough (2^20 elements)
  // to be threaded; constants (the 0.5, the bounds) must reach the outlined loops as constants.
  auto f = [](const fx::Array& x) {
    return std::make_tuple(fx::exp(x * 0.5f), fx::sum(x, {0}), fx::max(fx::tanh(x), {1}));
  };
  const fx::Array x = fx::array(ramp(1024 * 1024, -3, 3), fx::Shape{1024, 1024});
  // Two kernel threads whatever this process's setting (read once per process): one thread has no
  // parallel regions to outline.
  fx::runtime::CompileTarget two_threads{fx::Platform::cpu, 2};
  two_threads.label = "test-outline-parallel";
  const std::vector<fx::Array> in{x};
  const std::vector<fx::Array> out = fx::runtime::compile(fx::make_ir(f)(x), two_threads, "outline")->run(in);
  dump.set(nullptr);
  REQUIRE(out.size() == 3);
  const fx::Array &a = out[0], &b = out[1], &c = out[2];
  const auto [a0, b0, c0] = f(x);
  CHECK(test_helpers::max_abs_diff(a, a0) <= 1e-5 * 4.5);
  CHECK(test_helpers::max_abs_diff(b, b0) <= 1e-5 * 1024 * 3);  // sums of 1024 terms in another order
  CHECK(test_helpers::max_abs_diff(c, c0) <= 1e-6);

  std::string lowered;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().string().ends_with(".lowered.mlir")) lowered = read_all(e.path());
  REQUIRE_FALSE(lowered.empty());
  // One function per region, each holding one omp.parallel; @kernel holds none, only the calls.
  int functions = 0;
  for (size_t at = lowered.find("llvm.func internal @kernel_parallel_"); at != std::string::npos;
       at = lowered.find("llvm.func internal @kernel_parallel_", at + 1))
    ++functions;
  CHECK(functions >= 2);
  const size_t kernel = lowered.find("llvm.func @kernel(");
  REQUIRE(kernel != std::string::npos);
  const size_t kernel_end = lowered.find("\n  }", kernel);
  const std::string body = lowered.substr(kernel, kernel_end - kernel);
  CHECK(body.find("omp.parallel") == std::string::npos);
  CHECK(body.find("llvm.call @kernel_parallel_0(") != std::string::npos);
  std::filesystem::remove_all(dir);
}
