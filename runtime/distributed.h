// Several processes, one program (shared/api.md: fx::distributed). Under an MPI launcher
// (`mpirun -np 4 --oversubscribe prog`), initialize() reads Open MPI's environment
// (OMPI_COMM_WORLD_RANK/SIZE), starts MPI, checks that every process has the same number of
// devices, and from then on fx::devices() lists every process's devices and collectives among
// devices of different processes go through MPI (runtime/collectives_local.cpp calls the
// functions below from the axis's leader thread). Without MPI in the build, or without a
// launcher, there is one process. docs/distributed.md has the whole story, faults included.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/dtype.h"
#include "ir/spmd.h"

namespace fluxion::distributed {

/// Joins the processes started by the launcher (a no-op without one, or when already joined).
/// DeviceError when the launcher says there are several processes but MPI is not in the build, or
/// when the processes disagree on their device count.
void initialize();
/// Leaves MPI (also done at exit).
void shutdown();
bool is_initialized();
int process_index();
int process_count();

}  // namespace fluxion::distributed

namespace fluxion::runtime {
/// Whether this build has MPI.
bool mpi_available();
/// Across processes (one call per process, from the thread that leads its local devices): the MPI
/// collective from `in` into `buf` (in place when `in` is null or `buf`). They give up after
/// collective_timeout_s() seconds when a peer does not arrive; then they return false and `why`
/// says what happened.
bool interprocess_all_reduce(ReduceOp op, DType dtype, const void* in, void* buf, int64_t count, std::string& why);
/// `buf` receives process_count() blocks of `bytes`, in process order; this process's block comes
/// from `in` (from its place in `buf` when `in` is null).
bool interprocess_all_gather(const void* in, void* buf, size_t bytes, std::string& why);
/// Seconds a collective waits for its peers: FLUXION_COLLECTIVE_TIMEOUT (default 60).
double collective_timeout_s();
}  // namespace fluxion::runtime
