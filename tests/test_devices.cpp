// Devices (shared/api.md "Devices"): the list, placement, the default device and DeviceError.
// The suite runs with one CPU device and again with FLUXION_CPU_DEVICES=4 (tests/meson.build), so
// every case checks what holds for the device count it finds.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "test_helpers.h"

namespace fx = fluxion;

namespace {
int expected_devices() {
  const char* s = std::getenv("FLUXION_CPU_DEVICES");
  return s ? std::atoi(s) : 1;
}
}  // namespace

TEST_CASE("devices: the list follows FLUXION_CPU_DEVICES and prints as cpu:k; GPUs come after") {
  const std::vector<fx::Device> ds = fx::devices("cpu");
  REQUIRE(int(ds.size()) == expected_devices());
  for (size_t k = 0; k < ds.size(); ++k) {
    CHECK(ds[k].str() == "cpu:" + std::to_string(k));
    std::ostringstream os;
    os << ds[k];
    CHECK(os.str() == ds[k].str());
  }
  std::vector<fx::Device> all = ds;
  for (const fx::Device& g : fx::devices("cuda")) all.push_back(g);  // none without a GPU (or the emulated one)
  CHECK(fx::devices() == all);
  CHECK_THROWS_AS(fx::devices("tpu"), fx::DeviceError);
  CHECK(fx::local_devices() == all);
  CHECK(fx::parse_device("cpu:3") == fx::Device{fx::Platform::cpu, 3});
  CHECK(!fx::parse_device("cpu:x").has_value());
}

TEST_CASE("devices: device_put places and commits, computation follows data") {
  const fx::Device last = fx::devices("cpu").back();
  fx::Array x = fx::array({1.f, 2.f, 3.f});
  fx::Array xd = fx::device_put(x, last);
  CHECK(xd.device() == last);
  CHECK(xd.to_vector<float>() == x.to_vector<float>());
  // An uncommitted operand (a new array, a C++ scalar) goes where the committed one is.
  fx::Array y = xd * 2.f + fx::ones({3});
  CHECK(y.device() == last);
  CHECK(y.to_vector<float>() == std::vector<float>{3.f, 5.f, 7.f});
  y.block_until_ready();
  // A device this process does not have.
  const std::string missing = test_helpers::error_of<fx::DeviceError>([&] { fx::device_put(x, fx::Device{fx::Platform::cpu, expected_devices()}); });
  CHECK(missing.find("DeviceError: device_put at test_devices.cpp") == 0);
  CHECK(missing.find("is not a device") != std::string::npos);
}

TEST_CASE("devices: operands committed to two devices raise DeviceError naming op, devices and line") {
  const std::vector<fx::Device> ds = fx::devices("cpu");
  if (ds.size() < 2) {
    // One device: committing to it never conflicts.
    fx::Array a = fx::device_put(fx::ones({2}), ds[0]);
    CHECK((a + a).device() == ds[0]);
    return;
  }
  fx::Array a = fx::device_put(fx::ones({2}), ds[0]), b = fx::device_put(fx::ones({2}), ds[1]);
  const std::string msg = test_helpers::error_of<fx::DeviceError>([&] { (void)(a + b); });
  CHECK(msg.find("DeviceError: add(f32[2], f32[2]) at test_devices.cpp") == 0);
  CHECK(msg.find("cpu:0") != std::string::npos);
  CHECK(msg.find("cpu:1") != std::string::npos);
  // Moving one operand resolves it.
  CHECK((fx::device_put(a, ds[1]) + b).device() == ds[1]);
}

TEST_CASE("devices: the default device, from FLUXION_DEFAULT_DEVICE and scoped") {
  const char* env = std::getenv("FLUXION_DEFAULT_DEVICE");
  const fx::Device outer = env ? *fx::parse_device(env) : fx::Device{};
  CHECK(fx::zeros({3}).device() == outer);
  const fx::Device last = fx::devices("cpu").back();
  {
    fx::default_device_scope s(last);
    CHECK(fx::zeros({3}).device() == last);
    CHECK((fx::ones({2}) + 1.f).device() == last);
  }
  CHECK(fx::zeros({3}).device() == outer);
  CHECK_THROWS_AS(fx::default_device_scope(fx::Device{fx::Platform::cpu, 99}), fx::DeviceError);
}
