// The examples' progress bar: one line, rewritten in place, with the batch count, the running loss
// and the elapsed time.
#pragma once
#include <cstdint>
#include <cstdio>

namespace example {

inline void progress(int64_t done, int64_t total, double loss, double seconds) {
  const int width = 30;
  int filled = int(width * done / total);
  std::printf("\r  [%.*s%s%*s] %4lld/%lld  loss %.4f  %.1fs", filled, "==============================",
              filled < width ? ">" : "", width - filled - (filled < width), "", (long long)done, (long long)total, loss,
              seconds);
  std::fflush(stdout);
}

}  // namespace example
