#include "prims/isa_level.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <string>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

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

bool host_has_avx512bf16() {
#if defined(__x86_64__)
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (host_isa_level() < 4 || !__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
    return (eax >> 5 & 1u) != 0;
  }();
  return has;
#else
  return false;
#endif
}

bool kernel_has_avx512bf16() {
  static const bool allowed = [] {
    const char* e = std::getenv("FLUXION_CPU");
    const std::string cpu = e ? e : "";
    static const char* const with_bf16[] = {"",           "native",        "host",          "cooperlake",
                                            "sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d",
                                            "diamondrapids",  "znver4",        "znver5"};
    return std::find(std::begin(with_bf16), std::end(with_bf16), cpu) != std::end(with_bf16);
  }();
  return allowed && host_has_avx512bf16();
}

}  // namespace fluxion
