// `bench`: the benchmark programs of a bundle's bench/ list, timed as docs/performance.md's GPU
// section reports them (gpu_runner.h). bench/cases.txt, one workload a line:
//
//   copy <bytes> <name>            the baseline: a device-to-device copy of <bytes> (read + written)
//   time <dir> <name>              a program, timed with CUDA events
//   host <dir> <name>              the same, and the host time of one cached launch (issue 30: <= 5 us)
//   none - <name> <reason>         a workload the GPU pipeline does not lower yet: a row saying so
//
// Inputs are filled on the GPU (plan.txt's fill32); each program runs through the library's cached
// jit path (runtime/gpu_launch.h: temporaries from the caching allocator, pack_params,
// cuLaunchKernel), 3 times to warm up, then `reps` times between two CUDA events; the median counts.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "ir/error.h"
#include "runtime/cuda_driver_api.h"
#include "runtime/gpu_launch.h"
#include "tools/gpu_runner.h"

namespace fluxion::gpu_runner {

namespace {

constexpr int kWarmUps = 3;
constexpr int kHostLaunches = 1000;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Two CUDA events on the GPU's stream around each run.
class Events {
 public:
  explicit Events(cuda::Gpu& gpu) : gpu_(gpu) {
    driver().check(driver().api().cuEventCreate(&a_, 0), "cuEventCreate");
    driver().check(driver().api().cuEventCreate(&b_, 0), "cuEventCreate");
  }
  ~Events() {
    driver().api().cuEventDestroy(a_);
    driver().api().cuEventDestroy(b_);
  }
  double median_ms(const std::function<void()>& run, int reps) {
    // The first warm-up is timed too: a slow workload (the ResNet step, its convolutions a thread
    // per output element today) gets fewer runs -- about 5 s of them, at least 3 -- so that the
    // benchmarks stay inside their budget (scripts/gpu_check.sh) and a fast one's numbers stay.
    const double first = timed(run);
    for (int i = 1; i < (first > 1000 ? 1 : kWarmUps); ++i) run();
    gpu_.synchronize();
    reps = std::clamp(int(5000 / std::max(first, 1e-3)), std::min(3, reps), reps);
    std::vector<double> ms;
    for (int i = 0; i < reps; ++i) ms.push_back(timed(run));
    return median(ms);
  }

 private:
  double timed(const std::function<void()>& run) {
    const auto& api = driver().api();
    driver().check(api.cuEventRecord(a_, gpu_.stream()), "cuEventRecord");
    run();
    driver().check(api.cuEventRecord(b_, gpu_.stream()), "cuEventRecord");
    driver().check(api.cuEventSynchronize(b_), "cuEventSynchronize");
    float t = 0;
    driver().check(api.cuEventElapsedTime(&t, a_, b_), "cuEventElapsedTime");
    return t;
  }

  cuda::Gpu& gpu_;
  cuda::Handle a_ = nullptr, b_ = nullptr;
};

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n' || c == '\t') ? ' ' : c;
  }
  return out + "\"";
}

// One JSON line: the fields in order, strings quoted, numbers as they are.
struct Row {
  std::ostringstream s;
  Row& text(const char* key, const std::string& v) { return field(key, quoted(v)); }
  Row& number(const char* key, double v) {
    std::ostringstream n;
    n << std::setprecision(6) << v;
    return field(key, n.str());
  }
  Row& field(const char* key, const std::string& v) {
    s << (s.tellp() > 0 ? ", " : "{") << quoted(key) << ": " << v;
    return *this;
  }
  std::string str() const { return s.str() + "}"; }
};

// The host time of one cached launch sequence: each of kHostLaunches calls timed on the host clock
// (queued without waiting, as a jit call is), the median.
double host_us(cuda::Gpu& gpu, const runtime::GpuProgram& p, const Loaded& loaded, std::span<const cuda::DevicePtr> buffers) {
  std::vector<double> us;
  us.reserve(kHostLaunches);
  for (int i = 0; i < kHostLaunches; ++i) {
    const auto t = std::chrono::steady_clock::now();
    runtime::launch_gpu_program(gpu, p, loaded.functions, buffers, library_call());
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count());
  }
  gpu.synchronize();
  return median(us);
}

double copy_gbs = 0;  // the baseline of this run

void time_copy(cuda::Gpu& gpu, Events& ev, size_t bytes, int reps, Row& row) {
  DeviceBuffers b{gpu, {}};
  const cuda::DevicePtr src = b.add(bytes), dst = b.add(bytes);
  fill32(gpu, src, bytes, 0x3F000000);
  const double ms = ev.median_ms([&] {
    driver().check(driver().api().cuMemcpyDtoDAsync(dst, src, bytes, gpu.stream()), "cuMemcpyDtoDAsync");
  }, reps);
  copy_gbs = 2.0 * double(bytes) / ms / 1e6;
  row.number("ms", ms).number("GB/s", copy_gbs);
  std::cout << "device-to-device copy of " << bytes << " bytes: " << ms << " ms, " << copy_gbs << " GB/s (read + written)\n";
}

void time_program(cuda::Gpu& gpu, Events& ev, const std::string& dir, bool host, int reps, Row& row) {
  const Case c = read_case(dir);
  const std::shared_ptr<const void> host_code = prepare_host_code(c);
  DeviceBuffers buffers{gpu, {}};
  double moved = 0;
  for (const Input& in : c.inputs) {
    put_input(gpu, buffers.add(in.bytes), c, in);
    moved += double(in.bytes);
  }
  for (size_t bytes : c.outputs) {
    buffers.add(bytes);
    moved += double(bytes);
  }
  const Loaded loaded(gpu, c.program);
  const double ms = ev.median_ms([&] { runtime::launch_gpu_program(gpu, c.program, loaded.functions, buffers.ptrs, library_call()); }, reps);
  const double gbs = moved / ms / 1e6;
  row.number("ms", ms).number("GB/s", gbs).number("launches", double(c.program.launches.size()));
  if (copy_gbs > 0) row.number("of_copy_bandwidth", gbs / copy_gbs);
  std::cout << ms << " ms over " << c.program.launches.size() << " launch(es), " << gbs << " GB/s";
  if (copy_gbs > 0) std::cout << " = " << gbs / copy_gbs << "x the copy's";
  if (host) {
    const double us = host_us(gpu, c.program, loaded, buffers.ptrs);
    row.number("host_us", us);
    std::cout << "; host time of a cached launch " << us << " us (median of " << kHostLaunches << ")";
  }
  std::cout << "\n";
}

}  // namespace

int run_bench(const std::string& dir, const std::string& out, int reps) {
  cuda::Gpu& gpu = cuda::Gpu::get(0);
  const std::string name = cuda::device_name(0);
  Events ev(gpu);
  std::ofstream json(out);
  std::cout << std::setprecision(4);
  for (const auto& [kind, rest] : read_list(dir + "/cases.txt")) {
    std::istringstream words(rest);
    std::string arg, workload, reason;
    words >> arg >> workload;
    std::getline(words >> std::ws, reason);
    Row row;
    row.text("gpu", name).text("name", workload);
    std::cout << "fluxion " << workload << ": " << std::flush;
    try {
      if (kind == "copy") time_copy(gpu, ev, std::stoull(arg), reps, row);
      else if (kind == "time" || kind == "host") time_program(gpu, ev, dir + "/" + arg, kind == "host", reps, row);
      else if (kind == "none") {
        row.text("not_lowered", reason);
        std::cout << "not lowered: " << reason << "\n";
      } else {
        throw std::runtime_error("'" + kind + "' is not a kind of benchmark this runner knows");
      }
    } catch (const std::exception& e) {
      row.text("error", e.what());
      std::cout << "error: " << e.what() << "\n";
    }
    json << row.str() << "\n" << std::flush;
  }
  return 0;
}

}  // namespace fluxion::gpu_runner
