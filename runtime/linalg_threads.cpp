// Hands the linear-algebra kernels (prims/linalg.cpp, run_each_matrix) the thread pool of the
// compiled kernels, libomp's (runtime/openmp.h), for splitting a batch of small matrices over the
// cores. prims/ sits below runtime/ and cannot call it, so it is installed here when the library
// loads; the kernels run eagerly and as the jit's library calls alike.
#include "prims/linalg.h"
#include "runtime/openmp.h"

namespace fluxion::runtime {
namespace {

const bool installed = [] {
  linalg_rules::set_batch_parallel(&parallel_chunks);
  return true;
}();

}  // namespace
}  // namespace fluxion::runtime
