#include "ir/settings.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ir/error.h"

extern char** environ;

namespace fluxion {

namespace {

using K = SettingKind;

// The order and the groups are docs/settings.md's. A name ending in '*' covers a prefix.
constexpr Setting kSettings[] = {
    // Threads, devices, processes
    {"FLUXION_NUM_THREADS", K::count, "", "to use every core",
     "threads of the compiled kernels and of the libraries behind the primitives (LAPACK, FFTW)"},
    {"FLUXION_CPU_DEVICES", K::count, "", "for one CPU device",
     "CPU devices per process, the cores shared among them (pmap on one machine)"},
    {"FLUXION_DEFAULT_DEVICE", K::text, "", "for cpu:0", "the device new arrays and computations go to, e.g. cpu:1"},
    {"FLUXION_COLLECTIVE_TIMEOUT", K::seconds, "", "for 60 seconds",
     "how long a multi-process collective waits for the other processes"},
    // Compilation
    {"FLUXION_CPU", K::text, "", "for the host's CPU",
     "what the kernels are compiled for: x86-64-v2, x86-64-v3, x86-64-v4 or an LLVM CPU name"},
    {"FLUXION_CACHE_DIR", K::path, "", "for $XDG_CACHE_HOME/fluxion (~/.cache/fluxion)",
     "directory where compiled CPU kernels are kept across processes; `off` for none"},
    {"FLUXION_CACHE_MAX_MB", K::count, "", "for 1024",
     "the disk cache's size bound: past it, the kernels used longest ago are removed"},
    {"FLUXION_DUMP", K::path, "", "for no dumps", "directory the jit writes every stage's IR and the kernels' assembly to"},
    {"FLUXION_LOG_COMPILES", K::toggle, "", "for no log",
     "prints every jit compile on stderr: the function and its line, why (a new signature, and which), the time"},
    {"FLUXION_PASS_TIMING", K::toggle, "", "for no report", "prints MLIR's per-pass timing of every compile"},
    {"FLUXION_JIT_LLVM_OPT", K::level, "0..3", "for 3 on kernels with an array of 64K elements or more, 0 below",
     "LLVM's optimization level for every kernel"},
    {"FLUXION_JIT_LLVM_PASSES", K::text, "", "for the pipeline's own passes", "an LLVM pass pipeline replacing the kernels'"},
    {"FLUXION_KERNEL_PARTS", K::nonnegative, "", "for 128",
     "eqns per separately compiled part of a large kernel; 0 compiles every kernel as one function"},
    // Kernel choices, for measurement (the A/B switches of the docs' benchmarks)
    {"FLUXION_EAGER_COMPILE", K::choice, "auto|always|off", "for auto",
     "eager transcendental ops (exp, tanh, sin, pow, ...) on large float arrays run compiled; always: at any size; off: never"},
    {"FLUXION_ROW_BLOCKS", K::toggle, "", "for on", "row blocking of fused loops"},
    {"FLUXION_TWO_STAGE_REDUCE", K::toggle, "", "for on", "reductions over strided dims in two stages"},
    {"FLUXION_PLANAR_COMPLEX", K::toggle, "", "for on", "vectorized complex elementwise loops"},
    {"FLUXION_LIBMVEC", K::toggle, "", "for on", "glibc's vector math library for the transcendental functions"},
    {"FLUXION_CONV_LOWERING", K::choice, "library|linalg", "for library",
     "plain float32 2-D convolutions as the runtime's library call, or as MLIR's linalg convolution"},
    {"FLUXION_CONV_FORM", K::choice, "im2col|by_feature|col2im", "for the choice per shape",
     "forces a convolution's GEMM form where it applies"},
    {"FLUXION_CONV_F32", K::choice, "tiles|eigen", "for tiles",
     "float32 convolution products: AVX-512 tiles packed from the input, or Eigen on gathered columns"},
    {"FLUXION_BF16_GEMM", K::choice, "native|widen", "for native",
     "bfloat16 products: AVX512-BF16 tiles, or widened to float32 for Eigen"},
    {"FLUXION_LINALG", K::choice, "auto|eigen|lapack", "for auto",
     "the linear-algebra kernels: chosen by size, Eigen's, or LAPACK's"},
    {"FLUXION_FFT_PLANNER", K::choice, "estimate|measure", "for estimate",
     "FFTW's planner: ESTIMATE, or MEASURE (seconds of planning per shape for faster plans)"},
    // Memory and debugging
    {"FLUXION_ALLOCATOR_CACHE_MB", K::nonnegative, "", "for a bound that grows with use from 1 GiB to half the memory",
     "a fixed bound on the memory the caching allocator keeps for reuse"},
    {"FLUXION_DEBUG_NANS", K::toggle, "", "for off", "names the primitive and line that first made a NaN or an inf"},
    {"FLUXION_CHECK_BOUNDS", K::toggle, "", "for off", "a ValueError for out-of-bounds indices of take and dynamic_slice, not a clamp"},
    {"FLUXION_MAX_FILE_MB", K::count, "", "for half the machine's memory",
     "the most a file read whole may inflate to (a gzip bomb is an IOError, not an out-of-memory kill)"},
    // CUDA
    {"FLUXION_CUDA_DRIVER", K::path, "", "for libcuda.so.1",
     "the CUDA driver library loaded at run time, or `emulate` for the emulated GPU (docs/gpu.md)"},
    {"FLUXION_CUDA_HOME", K::path, "", "for the toolkit found at build time", "the CUDA toolkit (ptxas, libdevice)"},
    {"FLUXION_GPU_ARCH", K::text, "", "for sm_90", "the GPU architecture kernels are compiled for"},
    // Read by the tests, scripts and notebooks, not by the library
    {"FLUXION_TEST_*", K::tool, "", "", "the test suite's own settings (tests/)"},
    {"FLUXION_UPDATE_GOLDEN", K::tool, "", "", "rewrites the tests' golden files from the current output"},
    {"FLUXION_NB_*", K::tool, "", "", "the notebook kernel's settings (notebooks/)"},
};

bool covers(std::string_view entry, std::string_view name) {
  if (!entry.empty() && entry.back() == '*') return name.substr(0, entry.size() - 1) == entry.substr(0, entry.size() - 1);
  return entry == name;
}

template <class T>
std::optional<T> parse_number(const std::string& s) {
  T v{};
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

std::optional<bool> parse_toggle(std::string_view s) {
  if (s == "1" || s == "true" || s == "on") return true;
  if (s == "0" || s == "false" || s == "off") return false;
  return std::nullopt;
}

// What the setting takes, as the error message says it.
std::string takes(const Setting& s) {
  switch (s.kind) {
    case K::count: return "a positive integer";
    case K::nonnegative: return "an integer >= 0";
    case K::level: return std::string("an integer in ") + s.values;
    case K::seconds: return "a positive number of seconds";
    case K::choice: {
      std::string v = s.values;
      std::replace(v.begin(), v.end(), '|', ',');
      return "one of " + v;
    }
    case K::toggle: return "1 or 0 (true/false, on/off)";
    default: return "any text";
  }
}

bool valid(const Setting& s, const std::string& v) {
  switch (s.kind) {
    case K::count: return parse_number<int64_t>(v).value_or(0) >= 1;
    case K::nonnegative: return parse_number<int64_t>(v).value_or(-1) >= 0;
    case K::level: {
      const std::string range = s.values;
      const size_t dots = range.find("..");
      const auto n = parse_number<int64_t>(v);
      return n && *n >= std::stoll(range.substr(0, dots)) && *n <= std::stoll(range.substr(dots + 2));
    }
    case K::seconds: {
      const auto t = parse_number<double>(v);
      return t && std::isfinite(*t) && *t > 0;
    }
    case K::choice: {
      std::string_view rest = s.values;
      for (size_t bar; !rest.empty(); rest = bar == rest.npos ? "" : rest.substr(bar + 1)) {
        bar = rest.find('|');
        if (rest.substr(0, bar) == v) return true;
      }
      return false;
    }
    case K::toggle: return parse_toggle(v).has_value();
    default: return true;
  }
}

[[noreturn]] void invalid(const Setting& s, const std::string& v) {
  throw ValueError(std::string("ValueError: ") + s.name + "='" + v + "' is not " + takes(s) + " (" + s.name + ": " + s.what +
                   "; unset it " + s.if_unset + ")");
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

void warn_unknown(std::string_view name) {
  static std::mutex m;
  static std::set<std::string, std::less<>> warned;
  std::lock_guard<std::mutex> lock(m);
  if (!warned.insert(std::string(name)).second) return;
  const Setting* closest = closest_setting(name);
  std::fprintf(stderr, "fluxion: warning: %.*s is not a Fluxion setting%s%s%s (docs/settings.md lists them)\n", int(name.size()),
               name.data(), closest ? " (did you mean " : "", closest ? closest->name : "", closest ? "?)" : "");
}

}  // namespace

std::span<const Setting> settings() { return kSettings; }

const Setting* closest_setting(std::string_view name) {
  const Setting* closest = nullptr;
  size_t best = 4;  // near misses only: a typo, not another setting
  for (const Setting& s : kSettings)
    if (const size_t d = edit_distance(name, s.name); s.kind != K::tool && d < best) best = d, closest = &s;
  return closest;
}

const Setting* find_setting(std::string_view name) {
  for (const Setting& s : kSettings)
    if (covers(s.name, name)) return &s;
  return nullptr;
}

std::optional<std::string> setting_value(std::string_view name) {
  const Setting* s = find_setting(name);
  if (!s) throw std::logic_error(std::string(name) + " is read but missing from the settings table (ir/settings.cpp)");
  const char* v = std::getenv(std::string(name).c_str());
  if (!v || !*v) return std::nullopt;
  if (!valid(*s, v)) invalid(*s, v);
  return std::string(v);
}

std::optional<std::string> choice_setting(std::string_view name) { return setting_value(name); }

bool toggle_setting(std::string_view name, bool if_unset) {
  const std::optional<std::string> v = setting_value(name);
  return v ? *parse_toggle(*v) : if_unset;
}

int64_t integer_setting(std::string_view name, int64_t if_unset) {
  const std::optional<std::string> v = setting_value(name);
  return v ? *parse_number<int64_t>(*v) : if_unset;
}

double seconds_setting(std::string_view name, double if_unset) {
  const std::optional<std::string> v = setting_value(name);
  return v ? *parse_number<double>(*v) : if_unset;
}

void check_settings() {
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry = *e;
    if (entry.substr(0, 8) != "FLUXION_") continue;
    const std::string_view name = entry.substr(0, entry.find('='));
    const Setting* s = find_setting(name);
    if (!s) warn_unknown(name);
    else if (s->kind != K::tool) setting_value(name);
  }
}

void check_settings_once() {
  static std::atomic<bool> passed{false};
  if (passed.load(std::memory_order_acquire)) return;
  check_settings();
  passed.store(true, std::memory_order_release);
}

int thread_setting() {
  return int(integer_setting("FLUXION_NUM_THREADS", std::max(1u, std::thread::hardware_concurrency())));
}

int cpu_devices_setting() { return int(integer_setting("FLUXION_CPU_DEVICES", 1)); }

}  // namespace fluxion
