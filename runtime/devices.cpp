#include "runtime/devices.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "ir/trace.h"
#include "memory/buffer.h"
#include "runtime/distributed.h"

namespace fluxion {

namespace runtime {

int cpu_devices_per_process() {
  static const int n = [] {
    const char* s = std::getenv("FLUXION_CPU_DEVICES");
    return s ? std::max(1, std::atoi(s)) : 1;
  }();
  return n;
}

namespace {
std::string device_list(const std::vector<fluxion::Device>& ds) {
  std::string s;
  for (const fluxion::Device& d : ds) s += (s.empty() ? "" : ", ") + d.str();
  return s;
}

// FLUXION_DEFAULT_DEVICE must name a device of this process; checked once, when the device list is
// first read (memory/device.cpp cannot know the list).
void check_env_default() {
  static const bool checked = [] {
    if (const char* s = std::getenv("FLUXION_DEFAULT_DEVICE")) {
      const std::optional<fluxion::Device> d = parse_device(s);
      if (!d) throw DeviceError(std::string("DeviceError: FLUXION_DEFAULT_DEVICE=") + s + " is not a device name like cpu:0");
      check_local(*d, "FLUXION_DEFAULT_DEVICE", SourceLoc{});
    }
    return true;
  }();
  (void)checked;
}

// One device's worker: a thread that runs the tasks given to it, in order.
class Worker {
 public:
  explicit Worker(fluxion::Device d) : device_(d), thread_([this] { loop(); }) { thread_.detach(); }
  void submit(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    push_default_device(device_);  // arrays this worker makes live on its device
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !tasks_.empty(); });
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }
  fluxion::Device device_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::thread thread_;
};

// Workers start on first use and live as long as the process (never destroyed: a worker may be
// running while static destructors run).
Worker& worker(const fluxion::Device& d) {
  static std::mutex mu;
  static auto* workers = new std::vector<std::unique_ptr<Worker>>();
  std::lock_guard<std::mutex> lock(mu);
  const size_t k = size_t(d.id);
  if (workers->size() <= k) workers->resize(k + 1);
  if (!(*workers)[k]) (*workers)[k] = std::make_unique<Worker>(d);
  return *(*workers)[k];
}
}  // namespace

void check_local(const fluxion::Device& d, std::string_view what, SourceLoc loc) {
  if (is_local(d)) return;
  const bool exists = d.platform == Platform::cpu && d.id < int(fluxion::devices().size());
  throw DeviceError("DeviceError: " + std::string(what) + (loc.known() ? " at " + loc.str() : std::string()) + ": " +
                    d.str() + (exists ? " belongs to another process" : " is not a device") +
                    "; this process has " + device_list(local_devices()) +
                    " (FLUXION_CPU_DEVICES sets the number of CPU devices)");
}

void run_on_devices(std::span<const fluxion::Device> devs, const std::function<void(size_t)>& task) {
  struct Launch {
    std::mutex mu;
    std::condition_variable cv;
    size_t remaining;
    std::exception_ptr error;
  } launch;
  launch.remaining = devs.size();
  auto run = [&launch, &task](size_t k) {
    std::exception_ptr e;
    try {
      task(k);
    } catch (...) {
      e = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(launch.mu);
    if (e && !launch.error) launch.error = e;
    if (--launch.remaining == 0) launch.cv.notify_one();
  };
  for (size_t k = 1; k < devs.size(); ++k) worker(devs[k]).submit([&run, k] { run(k); });
  // The first device's share runs here, as its default device: the caller would only wait, and a
  // launch on one device then costs no thread handoff.
  push_default_device(devs[0]);
  run(0);
  pop_default_device();
  std::unique_lock<std::mutex> lock(launch.mu);
  launch.cv.wait(lock, [&] { return launch.remaining == 0; });
  if (launch.error) std::rethrow_exception(launch.error);
}

}  // namespace runtime

std::vector<Device> devices() {
  const int per = runtime::cpu_devices_per_process(), procs = distributed::process_count();
  std::vector<Device> ds;
  for (int i = 0; i < per * procs; ++i) ds.push_back(Device{Platform::cpu, i});
  runtime::check_env_default();
  return ds;
}

std::vector<Device> devices(std::string_view platform) {
  if (platform == "cpu") return devices();
  if (platform == "cuda") return {};  // no CUDA backend yet (issue 12)
  throw DeviceError("DeviceError: devices(\"" + std::string(platform) + "\"): the platforms are \"cpu\" and \"cuda\"");
}

std::vector<Device> local_devices() {
  const int per = runtime::cpu_devices_per_process(), first = distributed::process_index() * per;
  std::vector<Device> ds;
  for (int i = 0; i < per; ++i) ds.push_back(Device{Platform::cpu, first + i});
  return ds;
}

bool is_local(const Device& d) {
  const int per = runtime::cpu_devices_per_process(), first = distributed::process_index() * per;
  return d.platform == Platform::cpu && d.id >= first && d.id < first + per;
}

Array device_put(const Array& x, const Device& d, std::source_location loc) {
  if (!x.valid()) throw ValueError("ValueError: device_put at " + SourceLoc(loc).str() + ": an empty Array handle");
  if (x.is_tracer()) return x;
  runtime::check_local(d, "device_put", loc);
  Array out = make_concrete(x.aval(), x.data(loc));
  out.impl()->buffer->device = d;
  out.impl()->buffer->committed = true;
  return out;
}

default_device_scope::default_device_scope(const Device& d, std::source_location loc) {
  runtime::check_local(d, "default_device_scope", loc);
  push_default_device(d);
}
default_device_scope::~default_device_scope() { pop_default_device(); }

}  // namespace fluxion
