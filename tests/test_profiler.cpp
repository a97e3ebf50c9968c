// The profiler's trace file, read back with a JSON library: the events each stage records, their
// nesting, the kernel's name, the summary table -- and nothing recorded when it is off.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "ir/profiler.h"
#include "compile/compile_cache.h"

namespace fx = fluxion;
using nlohmann::json;

namespace {
std::filesystem::path fresh_dir(const char* name) {
  auto d = std::filesystem::temp_directory_path() / (std::string(name) + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// The complete and instant events of a trace, by category.
std::multimap<std::string, json> by_category(const json& trace) {
  std::multimap<std::string, json> out;
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == "X" || e["ph"] == "i") out.emplace(e["cat"].get<std::string>(), e);
  return out;
}

bool has_name(const std::multimap<std::string, json>& events, const std::string& cat, const std::string& part) {
  auto [lo, hi] = events.equal_range(cat);
  for (auto it = lo; it != hi; ++it)
    if (it->second["name"].get<std::string>().find(part) != std::string::npos) return true;
  return false;
}
}  // namespace

namespace {
void check_spans_and_threads(const json& trace, const std::multimap<std::string, json>& events);
void check_summary();
}  // namespace

TEST_CASE("profiler: a Chrome-trace JSON file with every stage") {
  fx::runtime::clear_cache();
  const auto dir = fresh_dir("fluxion-profile");
  fx::Array x = fx::array(std::vector<float>{0.5f, 1.f, 2.f});
  // A program no other test compiles, so that the compile cache misses.
  auto f = fx::jit([](const fx::Array& a) { return fx::sum(fx::tanh(a) * fx::expm1(a) + 0.125f); });
  std::string path;
  {
    fx::profiler::Trace trace(dir.string());
    {
      fx::profiler::annotate step("my step");
      f(x);  // traced, compiled, run
      f(x);  // run
      fx::grad([](const fx::Array& a) { return fx::sum(fx::sin(a)); })(x);  // eager transforms and ops
      fx::vmap([](const fx::Array& a) { return a * 2.f; })(x);
      fx::sin(x);  // an eager op
    }
    std::thread([&] { fx::profiler::annotate other("on another thread"); }).join();
    path = trace.stop();
  }
  REQUIRE(std::filesystem::exists(path));
  const json trace = read_json(path);
  REQUIRE(trace.contains("traceEvents"));
  const auto events = by_category(trace);
  // Every stage, by category and a part of its name.
  const std::pair<const char*, const char*> expected[] = {
      {"user", "my step"},         {"trace", "trace"},       {"transform", "jit pass"},   {"transform", "jvp"},
      {"transform", "partial_eval"}, {"transform", "transpose"}, {"transform", "vmap"},   {"mlir", "lower to MLIR"},
      {"mlir", "bufferization"},   {"llvm", "code generation"}, {"cache", "compile cache miss"}, {"eager", "sin"},
      {"eager", "cos"}};
  for (const auto& [category, part] : expected) {
    CAPTURE(part);
    CHECK(has_name(events, category, part));
  }
  // The kernel ran twice, named by what it fused.
  int kernels = 0;
  for (auto [it, end] = events.equal_range("kernel"); it != end; ++it) {
    const std::string name = it->second["name"];
    CHECK(name.find("tanh") != std::string::npos);
    CHECK(name.find("expm1") != std::string::npos);
    CHECK(name.find("reduce_sum") != std::string::npos);
    ++kernels;
  }
  CHECK(kernels == 2);
  check_spans_and_threads(trace, events);
  check_summary();
  std::filesystem::remove_all(dir);
}

namespace {
// Spans have a start and a non-negative duration; the jit's stages nest inside the annotation;
// each thread is named.
void check_spans_and_threads(const json& trace, const std::multimap<std::string, json>& events) {
  double step_begin = 0, step_end = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    CHECK(e["dur"].get<double>() >= 0);
    CHECK(e["ts"].get<double>() >= 0);
    if (e["name"] == "my step") step_begin = e["ts"], step_end = step_begin + e["dur"].get<double>();
  }
  for (auto [it, end] = events.equal_range("mlir"); it != end; ++it) {
    CHECK(it->second["ts"].get<double>() >= step_begin);
    CHECK(it->second["ts"].get<double>() + it->second["dur"].get<double>() <= step_end);
  }
  // Two threads, each named in a metadata event.
  std::set<int> tids, named;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") named.insert(e["tid"].get<int>());
    if (e["ph"] == "X") tids.insert(e["tid"].get<int>());
  }
  CHECK(tids.size() == 2);
  for (int t : tids) CHECK(named.count(t) == 1);
}

// The summary of the last trace: one row per name, calls counted.
void check_summary() {
  bool found = false;
  for (const fx::profiler::Row& r : fx::profiler::key_averages())
    if (r.category == "kernel") {
      CHECK(r.calls == 2);
      CHECK(r.total_us >= r.max_us);
      CHECK(r.min_us <= r.mean_us);
      found = true;
    }
  CHECK(found);
  CHECK(fx::profiler::summary().find("Calls") != std::string::npos);
}
}  // namespace

TEST_CASE("profiler: off records nothing; misuse is an error") {
  CHECK_FALSE(fx::profiler::active());
  CHECK_THROWS_AS(fx::profiler::stop_trace(), fx::ValueError);
  const auto dir = fresh_dir("fluxion-profile-off");
  fx::profiler::start_trace(dir.string());
  CHECK_THROWS_AS(fx::profiler::start_trace(dir.string()), fx::ValueError);
  const std::string first = fx::profiler::stop_trace();
  fx::sin(fx::array(std::vector<float>{1.f}));  // not recorded: no trace is recording
  fx::profiler::start_trace(dir.string());
  const std::string second = fx::profiler::stop_trace();
  CHECK(first != second);
  CHECK(by_category(read_json(second)).empty());
  std::filesystem::remove_all(dir);
}
