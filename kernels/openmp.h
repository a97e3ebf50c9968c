// The OpenMP runtime the compiled kernels use (LLVM 14's libomp; lowering/pipeline.cpp loads it for
// kernels with parallel loops), reached from runtime code, so that a library call splits its work
// over the same pinned threads as the kernel that calls it. Two thread pools on one set of cores
// fight: libomp's workers spin for a while after each parallel region, and a second pool's threads
// would then share cores with them.
#pragma once
#include <cstdint>
#include <functional>

namespace fluxion::runtime {

/// Where libomp lives (Debian 12's libomp-dev for LLVM 14; libomp for LLVM 19 is not packaged).
inline constexpr const char* kLibOmpPath = "/usr/lib/llvm-14/lib/libomp.so";

/// Chooses libomp's thread binding before libomp loads, unless the user set OMP_PROC_BIND: pinned
/// (`true`) with one CPU device -- unpinned, OpenMP on 2-vCPU VMs was slower than one thread --
/// and unpinned with several. Each device's thread opens its own OpenMP regions, and libomp binds
/// every such root and its team from the first place on, so two devices' teams would be pinned to
/// the same cores while the others idle.
void default_openmp_binding();

/// Calls body(i) for every i in [0, n) inside one parallel region of libomp's threads (at most
/// `threads` of them, each taking the next unclaimed i), or in a plain loop when threads <= 1,
/// n <= 1 or libomp is not there. `body` must not throw: an exception cannot leave a parallel region.
void parallel_chunks(int threads, int64_t n, const std::function<void(int64_t)>& body);

}  // namespace fluxion::runtime
