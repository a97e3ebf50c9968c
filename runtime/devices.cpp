#include "runtime/devices.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "ir/trace.h"
#include "memory/buffer.h"
#include "runtime/cuda_driver.h"
#include "ir/settings.h"
#include "runtime/distributed.h"

namespace fluxion {

namespace runtime {

int cpu_devices_per_process() {
  static const int n = cpu_devices_setting();
  return n;
}

namespace {
std::string device_list(const std::vector<fluxion::Device>& ds) {
  std::string s;
  for (const fluxion::Device& d : ds) s += (s.empty() ? "" : ", ") + d.str();
  return s;
}

void check_placeable(const fluxion::Device& d, std::string_view what, SourceLoc loc);  // below

// FLUXION_DEFAULT_DEVICE must name a device of this process; checked once, when the device list is
// first read (memory/device.cpp cannot know the list).
void check_env_default() {
  static const bool checked = [] {
    if (const char* s = std::getenv("FLUXION_DEFAULT_DEVICE")) {
      const std::optional<fluxion::Device> d = parse_device(s);
      if (!d) throw DeviceError(std::string("DeviceError: FLUXION_DEFAULT_DEVICE=") + s + " is not a device name like cpu:0");
      check_placeable(*d, "FLUXION_DEFAULT_DEVICE", SourceLoc{});
    }
    return true;
  }();
  (void)checked;
}

}  // namespace

void check_local(const fluxion::Device& d, std::string_view what, SourceLoc loc) {
  if (is_local(d)) return;
  const bool exists = d.platform == Platform::cpu && d.id < int(fluxion::devices("cpu").size());
  const std::string where = "DeviceError: " + std::string(what) + (loc.known() ? " at " + loc.str() : std::string()) + ": ";
  // A GPU that is not there: say why (no driver, the stub library, no device) in the driver's words.
  const std::string no_gpu = d.platform != Platform::cuda ? std::string()
                             : cuda::driver() ? " (the CUDA driver sees " + std::to_string(cuda::device_count()) + " GPU(s))"
                                              : " (" + cuda::unavailable_reason() + ")";
  throw DeviceError(where + d.str() + (exists ? " belongs to another process" : " is not a device") + no_gpu +
                    "; this process has " + device_list(local_devices()) +
                    " (FLUXION_CPU_DEVICES sets the number of CPU devices)");
}

namespace {
// check_local, and for a GPU that the process can make its runtime (the driver's context and
// stream): a DeviceError in the driver's words otherwise.
void check_placeable(const fluxion::Device& d, std::string_view what, SourceLoc loc) {
  check_local(d, what, loc);
  if (d.platform != Platform::cuda) return;
  try {
    (void)cuda::Gpu::get(d.id);
  } catch (const DeviceError& e) {
    throw DeviceError("DeviceError: " + std::string(what) + (loc.known() ? " at " + loc.str() : std::string()) + ": " +
                      d.str() + " cannot be used: " + e.what());
  }
}
}  // namespace

}  // namespace runtime

namespace {
// The GPUs of this process (the driver's, loaded with dlopen: none without a driver or GPU).
std::vector<Device> cuda_devices() {
  std::vector<Device> ds;
  for (int i = 0; i < runtime::cuda::device_count(); ++i) ds.push_back(Device{Platform::cuda, i});
  return ds;
}
}  // namespace

std::vector<Device> devices() {
  std::vector<Device> ds = devices("cpu");
  for (const Device& d : cuda_devices()) ds.push_back(d);
  return ds;
}

std::vector<Device> devices(std::string_view platform) {
  if (platform == "cpu") {
    const int per = runtime::cpu_devices_per_process(), procs = distributed::process_count();
    std::vector<Device> ds;
    for (int i = 0; i < per * procs; ++i) ds.push_back(Device{Platform::cpu, i});
    runtime::check_env_default();
    return ds;
  }
  if (platform == "cuda") return cuda_devices();
  throw DeviceError("DeviceError: devices(\"" + std::string(platform) + "\"): the platforms are \"cpu\" and \"cuda\"");
}

std::vector<Device> local_devices() {
  const int per = runtime::cpu_devices_per_process(), first = distributed::process_index() * per;
  std::vector<Device> ds;
  for (int i = 0; i < per; ++i) ds.push_back(Device{Platform::cpu, first + i});
  for (const Device& d : cuda_devices()) ds.push_back(d);
  return ds;
}

std::vector<Device> local_devices(std::string_view platform) {
  (void)devices(platform);  // an unknown platform is the same DeviceError as there
  std::vector<Device> ds;
  for (const Device& d : local_devices())
    if (platform_name(d.platform) == platform) ds.push_back(d);
  return ds;
}

bool is_local(const Device& d) {
  if (d.platform == Platform::cuda) return d.id >= 0 && d.id < runtime::cuda::device_count();
  const int per = runtime::cpu_devices_per_process(), first = distributed::process_index() * per;
  return d.platform == Platform::cpu && d.id >= first && d.id < first + per;
}

Array device_put(const Array& x, const Device& d, std::source_location loc) {
  if (!x.valid()) throw ValueError("ValueError: device_put at " + SourceLoc(loc).str() + ": an empty Array handle");
  if (x.is_tracer()) return x;
  runtime::check_placeable(d, "device_put", loc);
  const std::shared_ptr<Buffer>& from = x.impl()->buffer;
  if (from && from->committed && from->device == d) return x;  // already there
  const void* host = x.data(loc);  // a GPU array's host copy, a sharded array gathered
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = x.aval();
  impl->buffer = Buffer::allocate_on(d, x.aval().nbytes());
  if (x.aval().nbytes()) {
    if (impl->buffer->memory == MemoryKind::device)
      device_memory(d.platform).copy_to_device(d.id, impl->buffer->address, host, x.aval().nbytes());
    else
      std::memcpy(impl->buffer->data, host, x.aval().nbytes());
  }
  impl->buffer->committed = true;
  return Array(std::move(impl));
}

default_device_scope::default_device_scope(const Device& d, std::source_location loc) {
  runtime::check_placeable(d, "default_device_scope", loc);
  push_default_device(d);
}
default_device_scope::~default_device_scope() { pop_default_device(); }

}  // namespace fluxion
