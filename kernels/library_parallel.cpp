// Installs libomp's parallel_chunks (kernels/openmp.h), the thread pool of the compiled kernels, as
// the pool the kernels of prims/ split their work over (prims/library_threads.h: a batch of small
// matrices, FFTW's parallel loops). prims/ sits below runtime/ and cannot call it, so it is installed
// here when the library loads; eager calls and the jit's library calls run the same kernels.
#include "prims/library_threads.h"
#include "kernels/openmp.h"

namespace fluxion::runtime {
namespace {

const bool installed = [] {
  set_library_parallel(&parallel_chunks);
  return true;
}();

}  // namespace
}  // namespace fluxion::runtime
