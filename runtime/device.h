// What compiled code is generated for: the CPU target and its options. (A device's identity --
// cpu:0, cpu:1, ... -- is fluxion::Device, memory/device.h; the device list, placement and the
// workers are runtime/devices.h. Every CPU device compiles for this one target.)
#pragma once
#include <string>

namespace fluxion::runtime {

struct Device {
  std::string name;     // "cpu"
  int num_threads = 1;  // threads of the compiled kernels' outer loops
  /// How dot_general is compiled: "auto" (a library call for float32/float64 matmuls with at
  /// least 32^3 multiply-adds, generated code otherwise), "eigen" or "generated" (benchmarks
  /// compare them).
  std::string matmul = "auto";
};

/// The host CPU. Its thread count is FLUXION_NUM_THREADS, or the number of cores; a setting that
/// is not a positive integer is a ValueError (raised by every call until it is fixed).
const Device& cpu_device();

}  // namespace fluxion::runtime
