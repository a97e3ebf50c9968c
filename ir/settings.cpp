#include "ir/settings.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "ir/error.h"

namespace fluxion {

int parse_positive_setting(const char* name, const char* text, const char* if_unset) {
  int n = 0;
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, n);
  if (ec != std::errc() || ptr != end || n < 1)
    throw ValueError(std::string("ValueError: ") + name + "='" + text + "' is not a positive integer (unset it " +
                     if_unset + ")");
  return n;
}

int thread_setting() {
  if (const char* n = std::getenv("FLUXION_NUM_THREADS"))
    return parse_positive_setting("FLUXION_NUM_THREADS", n, "to use every core");
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace fluxion
