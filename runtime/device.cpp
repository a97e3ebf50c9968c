#include "runtime/device.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace fluxion::runtime {

const Device& cpu_device() {
  static const Device d = [] {
    Device dev{"cpu", int(std::max(1u, std::thread::hardware_concurrency()))};
    if (const char* n = std::getenv("FLUXION_NUM_THREADS")) dev.num_threads = std::max(1, std::atoi(n));
    return dev;
  }();
  return d;
}

}  // namespace fluxion::runtime
