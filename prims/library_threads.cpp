#include "prims/library_threads.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace fluxion {

int library_threads() {
  static const int threads = [] {
    const char* e = std::getenv("FLUXION_NUM_THREADS");
    if (!e) return int(std::max(1u, std::thread::hardware_concurrency()));
    int n = 0;
    const char* end = e + std::strlen(e);
    auto [ptr, ec] = std::from_chars(e, end, n);
    return ec == std::errc() && ptr == end && n >= 1 ? n : 1;
  }();
  return threads;
}

}  // namespace fluxion
