#include "runtime/device.h"

#include "ir/settings.h"

namespace fluxion::runtime {

const Device& cpu_device() {
  static const Device d{"cpu", thread_setting()};
  return d;
}

}  // namespace fluxion::runtime
