#include "prims/library_threads.h"

#include "ir/error.h"
#include "ir/settings.h"

namespace fluxion {

int library_threads() {
  static const int threads = [] {
    try {
      return thread_setting();
    } catch (const Error&) {
      return 1;  // a kernel never throws for it: the jit and devices raise the ValueError
    }
  }();
  return threads;
}

}  // namespace fluxion
