// The on-disk cache of compiled kernels (FLUXION_CACHE_DIR, lowering/object_cache.h) in one
// process: what a new process would find, by clearing the in-memory cache (test_jit_target.cpp
// runs a real second process).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <unistd.h>

#include <chrono>
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

// On by default: with FLUXION_CACHE_DIR unset the kernels go to $XDG_CACHE_HOME/fluxion (made when
// missing), else ~/.cache/fluxion; `off` turns the cache off.
TEST_CASE("jit: the disk cache is on by default, in the user's cache directory") {
  const std::string root = "/tmp/fluxion_test_xdg_" + std::to_string(::getpid());
  std::filesystem::remove_all(root);
  const test_helpers::ScopedEnv unset("FLUXION_CACHE_DIR", nullptr);
  const test_helpers::ScopedEnv xdg("XDG_CACHE_HOME", root);
  CHECK(fx::lowering::kernel_cache_dir() == root + "/fluxion");
  CHECK(std::filesystem::is_directory(root + "/fluxion"));
  fx::runtime::CompileTarget dev = fx::runtime::default_target();
  dev.label = "cpu-default-cache-test";
  fx::Program p = fx::make_ir([](const fx::Array& x) { return fx::tanh(x) * 5.f; })(fx::ones({7}));
  CHECK_FALSE(fx::runtime::compile(p, dev)->from_disk_cache());
  fx::runtime::clear_cache();
  CHECK(fx::runtime::compile(p, dev)->from_disk_cache());
  {
    const test_helpers::ScopedEnv home("HOME", root + "/home");
    xdg.set(nullptr);
    CHECK(fx::lowering::kernel_cache_dir() == root + "/home/.cache/fluxion");
  }
  {
    const test_helpers::ScopedEnv off("FLUXION_CACHE_DIR", "off");
    CHECK_FALSE(fx::lowering::kernel_cache_dir().has_value());
    fx::runtime::clear_cache();
    CHECK_FALSE(fx::runtime::compile(p, dev)->from_disk_cache());
  }
  std::filesystem::remove_all(root);
}

// FLUXION_CACHE_MAX_MB: past the bound, the kernels used longest ago go first (a hit counts as a
// use), down to 80% of it; files that are not kernels stay.
TEST_CASE("jit: the disk cache keeps to its size bound, least recently used first") {
  namespace fs = std::filesystem;
  const std::string dir = "/tmp/fluxion_test_trim_" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto now = fs::file_time_type::clock::now();
  for (int k = 0; k < 10; ++k) {  // ten 100 KB kernels, k = 0 used longest ago
    const std::string path = dir + "/k" + std::to_string(k) + ".fxkernel";
    std::ofstream(path, std::ios::binary) << std::string(100'000, char('a' + k));
    fs::last_write_time(path, now - std::chrono::hours(10 - k));
  }
  std::ofstream(dir + "/notes.txt") << std::string(300'000, 'x');
  CHECK(fx::lowering::trim_kernel_cache(dir, 1'000'000) == 1'000'000);  // at the bound: nothing goes
  CHECK(fx::lowering::trim_kernel_cache(dir, 700'000) == 500'000);      // down to 560 KB: five go
  for (int k = 0; k < 10; ++k) CHECK(fs::exists(dir + "/k" + std::to_string(k) + ".fxkernel") == (k >= 5));
  CHECK(fs::exists(dir + "/notes.txt"));
  fs::remove_all(dir);

  // Through the library: a read refreshes a kernel's time, so the kernel just used outlives the
  // older ones when a write crosses the bound.
  fs::create_directories(dir);
  const test_helpers::ScopedEnv cache("FLUXION_CACHE_DIR", dir);
  fx::runtime::CompileTarget dev = fx::runtime::default_target();
  dev.label = "cpu-trim-test";
  fx::Program used = fx::make_ir([](const fx::Array& x) { return fx::exp(x) + 1.f; })(fx::ones({5}));
  fx::runtime::compile(used, dev);
  fs::path used_file;
  for (const auto& e : fs::directory_iterator(dir)) used_file = e.path();
  fs::last_write_time(used_file, now - std::chrono::hours(100));
  fx::runtime::clear_cache();
  CHECK(fx::runtime::compile(used, dev)->from_disk_cache());
  CHECK(fs::last_write_time(used_file) > now - std::chrono::hours(1));
  fs::remove_all(dir);
}
