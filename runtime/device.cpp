#include "runtime/device.h"

#include "ir/settings.h"

namespace fluxion::runtime {

const Device& cpu_device() {
  static const Device d = [] {
    check_settings();  // the first device: before any kernel can meet a bad setting in a library call
    return Device{"cpu", thread_setting()};
  }();
  return d;
}

}  // namespace fluxion::runtime
