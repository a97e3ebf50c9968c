// How many threads the multithreaded libraries behind the primitives' kernels (OpenBLAS's LAPACK,
// prims/linalg_lapack.cpp; FFTW's threads, prims/fft_kernel.cpp) may use: Fluxion's thread setting,
// FLUXION_NUM_THREADS, or every core (ir/settings.h, as for the compiled kernels' loops). A setting
// that is not a positive integer is the jit's and the devices' ValueError; here it falls back to
// one thread, so a kernel never throws for it.
#pragma once
#include <cstdint>
#include <functional>

namespace fluxion {

int library_threads();

/// Runs body(i) for every i in [0, n) on at most `threads` threads of the compiled kernels' pool:
/// libomp's parallel_chunks (kernels/openmp.h), which kernels/library_parallel.cpp installs when the
/// library loads (prims/ sits below runtime/ and cannot call it); one i after another before that.
/// The kernels that split work (a batch of small matrices, FFTW's loops) use it rather than threads
/// of their own: libomp pins the calling thread to one core at its first parallel region
/// (OMP_PROC_BIND, kernels/openmp.h), and threads created after that inherit the pin -- FFTW's own
/// threads then shared one core (2^20 points: 15.7 ms on two such threads, 7.4 ms unpinned).
/// `body` must not throw.
using ParallelChunks = void (*)(int threads, int64_t n, const std::function<void(int64_t)>& body);
void library_parallel(int threads, int64_t n, const std::function<void(int64_t)>& body);
void set_library_parallel(ParallelChunks parallel);

}  // namespace fluxion
