// The on-disk cache of compiled kernels (FLUXION_CACHE_DIR, lowering/object_cache.h) in one
// process: what a new process would find, by clearing the in-memory cache (test_jit_target.cpp
// runs a real second process).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "lowering/object_cache.h"
#include "compile/compile_cache.h"
#include "compile/target.h"
#include "tests/test_helpers.h"

namespace fx = fluxion;

using test_helpers::ramp;

// FLUXION_CACHE_DIR: a compile stores the lowered kernel on disk; after the in-memory cache is
// cleared (what a new process sees) the same fingerprint is read back, skipping lowering and the
// MLIR passes, and computes the same results. A damaged file is a miss, never an error.
TEST_CASE("jit: the on-disk cache serves a fresh in-memory cache") {
  const std::string dir = "/tmp/fluxion_test_cache_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const test_helpers::ScopedEnv cache("FLUXION_CACHE_DIR", dir);
  fx::runtime::CompileTarget dev = fx::runtime::default_target();
  dev.label = "cpu-disk-cache-test";  // a fingerprint no other test compiled
  auto f = [](const fx::Array& x, const fx::Array& i) {
    return std::make_tuple(fx::sum(fx::exp(x) * 3.f, {1}), fx::sort(x, 0), fx::cumsum(x, 1), fx::take(x, i, 1));
  };
  fx::Array x = fx::array(ramp(64 * 300, -4, 4), fx::Shape{64, 300});
  fx::Array i = fx::array(std::vector<int32_t>{3, 299, 0, 7});
  fx::Program p = fx::make_ir(f)(x, i);
  std::vector<fx::Array> args{x, i};
  auto first = fx::runtime::compile(p, dev);
  CHECK_FALSE(first->from_disk_cache());
  std::vector<fx::Array> want = first->run(args);
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.path().extension() == ".fxkernel";
  CHECK(files == 1);
  // The header names the library's build (its ELF build ID), so another build of Fluxion -- which
  // may lower the same program differently -- looks under another name and never reads this file.
  const std::string& build = fx::lowering::library_build_id();
  CHECK(build.size() >= 32);
  CHECK(build.find_first_not_of("0123456789abcdef") == std::string::npos);
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::string head(512, '\0');
    in.read(head.data(), std::streamsize(head.size()));
    CHECK(head.find("\nbuild " + build + "\n") != std::string::npos);
  }

  fx::runtime::clear_cache();
  const int64_t disk_hits = fx::runtime::cache_stats().disk_hits;
  auto second = fx::runtime::compile(p, dev);
  CHECK(second->from_disk_cache());
  CHECK(second->passes_ms() == 0);  // object code: no MLIR pass and no LLVM ran, only the linker
  CHECK(second->llvm_ms() == 0);
  CHECK(fx::runtime::cache_stats().disk_hits == disk_hits + 1);
  CHECK(second != first);
  std::vector<fx::Array> got = second->run(args);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    CHECK(test_helpers::max_abs_diff(got[k], want[k]) == 0);
  }
  // A different program is not served by that file.
  fx::Program other = fx::make_ir([](const fx::Array& x) { return fx::sum(x * 2.f); })(x);
  CHECK_FALSE(fx::runtime::compile(other, dev)->from_disk_cache());

  // Damage every file: the next fresh compile misses, compiles and still computes the same.
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << "fluxion-kernel v1 mlir-19\ngarbage";
  }
  fx::runtime::clear_cache();
  auto third = fx::runtime::compile(p, dev);
  CHECK_FALSE(third->from_disk_cache());
  got = third->run(args);
  for (size_t k = 0; k < got.size(); ++k) {
    CHECK(test_helpers::max_abs_diff(got[k], want[k]) == 0);
  }
  // A file cut short (its header intact, its object code not) is a miss too.
  for (const auto& e : std::filesystem::directory_iterator(dir))
    std::filesystem::resize_file(e.path(), std::filesystem::file_size(e.path()) * 3 / 4);
  fx::runtime::clear_cache();
  CHECK_FALSE(fx::runtime::compile(p, dev)->from_disk_cache());
  std::filesystem::remove_all(dir);
}
