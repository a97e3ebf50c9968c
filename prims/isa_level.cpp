#include "prims/isa_level.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace fluxion {

int host_isa_level() {
#if defined(__x86_64__)
  static const int level = __builtin_cpu_supports("x86-64-v4")   ? 4
                           : __builtin_cpu_supports("x86-64-v3") ? 3
                           : __builtin_cpu_supports("x86-64-v2") ? 2
                                                                 : 1;
  return level;
#else
  return 1;
#endif
}

int kernel_isa_level() {
  static const int level = [] {
    const char* e = std::getenv("FLUXION_CPU");
    const std::string cpu = e ? e : "";
    int named = 4;
    if (cpu == "x86-64") named = 1;
    else if (cpu.size() == 9 && cpu.starts_with("x86-64-v") && cpu[8] >= '2' && cpu[8] <= '4') named = cpu[8] - '0';
    return std::min(named, host_isa_level());
  }();
  return level;
}

}  // namespace fluxion
