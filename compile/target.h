// What a program is compiled for: a platform and its options. One target serves every device of
// its platform (the CPU's code runs on every cpu:k; the GPU's PTX loads on every cuda:k), so a
// target names no device index; fluxion::Device (memory/device.h) is a device's identity and
// runtime/devices.h the list of devices.
#pragma once
#include <string>

#include "memory/device.h"

namespace fluxion::runtime {

struct CompileTarget {
  Platform platform = Platform::cpu;
  /// CPU: threads of the compiled kernels' outer loops.
  int num_threads = 1;
  /// CPU: how dot_general is compiled: "auto" (a library call for float32/float64 matmuls, and int8
  /// ones with an int32 result, of at least 32^3 multiply-adds, generated code otherwise), "eigen"
  /// or "generated" (benchmarks compare them).
  std::string matmul = "auto";
  /// Only makes the fingerprint differ: tests and benchmarks set it to compile a program again
  /// (a cold compile) or to keep their disk-cache entries apart from everyone else's.
  std::string label;
};

/// The default target of a platform: the host CPU with FLUXION_NUM_THREADS threads (or the number
/// of cores); a setting that is not a positive integer is a ValueError (raised by every call until
/// it is fixed).
const CompileTarget& default_target(Platform platform = Platform::cpu);

}  // namespace fluxion::runtime
