// How many threads the multithreaded libraries behind the primitives' kernels (OpenBLAS's LAPACK,
// prims/linalg_lapack.cpp; FFTW's threads, prims/fft_kernel.cpp) may use: Fluxion's thread setting,
// FLUXION_NUM_THREADS, or every core (ir/settings.h, as for the compiled kernels' loops). A setting
// that is not a positive integer is the jit's and the devices' ValueError; here it falls back to
// one thread, so a kernel never throws for it.
#pragma once

namespace fluxion {

int library_threads();

}  // namespace fluxion
