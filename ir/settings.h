// Environment settings that are counts, read the same way wherever they are read: the compiled
// kernels' threads (runtime/device.h), the libraries behind the primitives' kernels
// (prims/library_threads.h) and the CPU device count (runtime/devices.h).
#pragma once

namespace fluxion {

/// The value of the environment setting `name` as a positive count, or a ValueError naming the
/// setting and what unsetting it gives (`if_unset`).
int parse_positive_setting(const char* name, const char* text, const char* if_unset);

/// FLUXION_NUM_THREADS, or the number of cores when it is unset; ValueError when it is not a
/// positive integer.
int thread_setting();

}  // namespace fluxion
