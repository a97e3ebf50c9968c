// The profiler: Chrome-trace / Perfetto JSON of what Fluxion does (torch.profiler's role).
//
//   fx::profiler::start_trace("trace_dir");   // or: fx::profiler::Trace t("trace_dir");
//   { fx::profiler::annotate a("data loading"); ... }
//   fx::profiler::stop_trace();               // writes trace_dir/fluxion-<pid>-<n>.trace.json
//   std::cout << fx::profiler::summary();     // per-name totals, like key_averages().table()
//
// Events are complete spans ("ph":"X") with a category: "trace" (tracing a function), "transform"
// (jvp, vjp, vmap, partial_eval, transpose, simplify, the jit passes), "mlir" (pass groups),
// "llvm" (optimization, code generation, linking), "cache" (compile-cache hits and misses, as
// instants), "kernel" (each run of compiled code, named by the primitives it fused), "eager" (each
// eager op), "user" (annotate). Each thread gets its own track. Off, a scope costs one relaxed
// atomic load. Open the file at https://ui.perfetto.dev (or chrome://tracing).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace fluxion::profiler {

namespace detail {
extern std::atomic<bool> g_on;
int64_t now_ns();
void record(const char* category, std::string name, int64_t begin_ns, int64_t end_ns);
}  // namespace detail

/// Whether a trace is being recorded.
inline bool active() { return detail::g_on.load(std::memory_order_relaxed); }

/// Starts recording (a ValueError if a trace is already being recorded). `dir` is created.
void start_trace(const std::string& dir);
/// Stops recording and writes the JSON file; returns its path (a ValueError if none is recording,
/// an IOError-like ValueError if it cannot be written).
std::string stop_trace();

/// Records a trace for the life of the scope.
class Trace {
 public:
  explicit Trace(const std::string& dir) { start_trace(dir); }
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;
  /// Stops now (instead of at the end of the scope) and returns the file written.
  std::string stop();

 private:
  bool open_ = true;
};

/// A span from construction to destruction, if a trace is recording when it begins. The name is
/// a string, or a callable returning one (called only when recording: a name that costs something
/// to build costs nothing when the profiler is off).
class Scope {
 public:
  Scope(const char* category, const char* name) : category_(category) {
    if (active()) begin(name);
  }
  template <class NameFn>
    requires std::is_invocable_r_v<std::string, NameFn>
  Scope(const char* category, NameFn&& name) : category_(category) {
    if (active()) begin(name());
  }
  ~Scope() {
    if (begin_ns_ >= 0) detail::record(category_, std::move(name_), begin_ns_, detail::now_ns());
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  void begin(std::string name) {
    name_ = std::move(name);
    begin_ns_ = detail::now_ns();
  }
  const char* category_;
  std::string name_;
  int64_t begin_ns_ = -1;
};

/// A user's named span ("user" category).
class annotate {  // NOLINT: named as the API contract spells it
 public:
  explicit annotate(std::string name) : scope_("user", [&] { return std::move(name); }) {}

 private:
  Scope scope_;
};

/// An instant event (a cache hit or miss), if recording.
void instant(const char* category, std::string_view name);

/// The totals of one name in one category over the last trace (or the one recording).
struct Row {
  std::string category, name;
  int64_t calls = 0;
  double total_us = 0, mean_us = 0, min_us = 0, max_us = 0;
};
/// One row per (category, name), by total time, largest first (torch.profiler's key_averages).
std::vector<Row> key_averages();
/// key_averages as a text table (at most `max_rows` rows).
std::string summary(size_t max_rows = 40);

}  // namespace fluxion::profiler
