// fx::distributed over MPI (Open MPI from Debian), compiled in when meson finds MPI
// (FLUXION_HAVE_MPI). Collectives are MPI's non-blocking ones, polled until they complete or the
// timeout passes: a process that stops answering makes the others fail with a DeviceError instead
// of hanging forever. (After such a failure MPI's state is undefined: the process should report
// and exit; docs/distributed.md.)
#include "runtime/distributed.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "ir/error.h"
#include "ir/settings.h"
#include "runtime/devices.h"

#ifdef FLUXION_HAVE_MPI
#include <mpi.h>
#endif

namespace fluxion::runtime {

double collective_timeout_s() {
  static const double t = seconds_setting("FLUXION_COLLECTIVE_TIMEOUT", 60.0);
  return t;
}

bool mpi_available() {
#ifdef FLUXION_HAVE_MPI
  return true;
#else
  return false;
#endif
}

}  // namespace fluxion::runtime

namespace fluxion::distributed {

namespace {
struct State {
  bool initialized = false;
  int index = 0, count = 1;
};
State& state() {
  static State s;
  return s;
}

// The launcher's process count, from Open MPI's environment (1 without a launcher).
int launcher_size() {
  const char* s = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!s) s = std::getenv("PMI_SIZE");
  return s ? std::max(1, std::atoi(s)) : 1;
}
}  // namespace

bool is_initialized() { return state().initialized; }
int process_index() { return state().index; }
int process_count() { return state().count; }

#ifdef FLUXION_HAVE_MPI

namespace {
MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    case DType::int32: return MPI_INT32_T;
    case DType::int64: return MPI_INT64_T;
    case DType::int8: return MPI_INT8_T;
    case DType::uint8: return MPI_UINT8_T;
    case DType::uint32: return MPI_UINT32_T;
    default: return MPI_DATATYPE_NULL;  // float16, bfloat16: gathered and reduced here
  }
}

// Polls `req` until it completes or the timeout passes. It spins at first (a peer that is running
// answers within microseconds, and giving the core away costs a scheduler quantum on a busy
// machine), then yields between polls.
bool wait_request(MPI_Request& req, const char* what, std::string& why) {
  const auto start = std::chrono::steady_clock::now();
  const auto spin_until = start + std::chrono::microseconds(200);
  const auto deadline = start + std::chrono::duration<double>(runtime::collective_timeout_s());
  for (unsigned polls = 1;; ++polls) {
    int done = 0;
    if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      why = std::string(what) + " between processes failed in MPI";
      return false;
    }
    if (done) return true;
    if (polls % 16 != 0) continue;
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline) {
      why = std::string(what) + " between processes: process " + std::to_string(process_index()) + " waited " +
            std::to_string(runtime::collective_timeout_s()) +
            " s (FLUXION_COLLECTIVE_TIMEOUT) for the others; a process has died or stopped answering";
      return false;
    }
    if (now > spin_until) std::this_thread::yield();
  }
}

// Every process has reached this collective, or `why` says which did not within the timeout.
// Then the collective itself is MPI's blocking one: Open MPI's blocking collectives are faster
// than its non-blocking ones (MPI_Iallreduce of 1 MB between 2 processes ran at 0.7x of
// MPI_Allreduce here), and once every process is inside, the collective can only block on a
// process that dies in it, which mpirun sees and answers by ending the job.
bool arrive(const char* what, std::string& why) {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  return wait_request(req, what, why);
}

}  // namespace

void initialize() {
  State& s = state();
  if (s.initialized || launcher_size() == 1) return;
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    std::atexit([] { shutdown(); });
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &s.index);
  MPI_Comm_size(MPI_COMM_WORLD, &s.count);
  s.initialized = true;
  // Every process must drive the same number of devices (the global list is process-major).
  int mine = runtime::cpu_devices_per_process();
  std::vector<int> all(size_t(s.count));
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int p = 0; p < s.count; ++p)
    if (all[size_t(p)] != mine)
      throw DeviceError("DeviceError: distributed::initialize: process " + std::to_string(p) + " has " +
                        std::to_string(all[size_t(p)]) + " CPU devices and process " + std::to_string(s.index) +
                        " has " + std::to_string(mine) + "; set the same FLUXION_CPU_DEVICES in every process");
}

void shutdown() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Finalize();
}

}  // namespace fluxion::distributed

namespace fluxion::runtime {

// Below this many bytes a collective is one non-blocking MPI call, polled: its time is the round
// trip, which the arrival barrier would double (a signature check, a pmean of a scalar loss).
constexpr size_t kSmallBytes = 64 << 10;

bool interprocess_all_gather(const void* in, void* buf, size_t bytes, std::string& why) {
  if (bytes * size_t(distributed::process_count()) <= kSmallBytes) {
    MPI_Request req;
    MPI_Iallgather(in ? in : MPI_IN_PLACE, int(bytes), MPI_BYTE, buf, int(bytes), MPI_BYTE, MPI_COMM_WORLD, &req);
    return distributed::wait_request(req, "all_gather", why);
  }
  if (!distributed::arrive("all_gather", why)) return false;
  if (MPI_Allgather(in ? in : MPI_IN_PLACE, int(bytes), MPI_BYTE, buf, int(bytes), MPI_BYTE, MPI_COMM_WORLD) == MPI_SUCCESS)
    return true;
  why = "all_gather between processes failed in MPI";
  return false;
}

bool interprocess_all_reduce(ReduceOp op, DType dtype, const void* in, void* buf, int64_t count, std::string& why) {
  const MPI_Datatype t = distributed::mpi_type(dtype);
  if (t == MPI_DATATYPE_NULL) {
    // No MPI type: gather every process's values and reduce them here, in the compute type.
    const size_t bytes = size_t(count) * itemsize(dtype);
    const int n = distributed::process_count();
    std::vector<char> all(bytes * size_t(n));
    std::memcpy(all.data() + bytes * size_t(distributed::process_index()), in ? in : buf, bytes);
    if (!interprocess_all_gather(nullptr, all.data(), bytes, why)) return false;
    dispatch_dtype(dtype, [&](auto zero) {
      using T = decltype(zero);
      using C = compute_t<T>;
      if constexpr (!std::is_same_v<T, bool>) {
        T* out = static_cast<T*>(buf);
        for (int64_t i = 0; i < count; ++i) {
          C acc = C(reinterpret_cast<const T*>(all.data())[i]);
          for (int p = 1; p < n; ++p) {
            const C x = C(reinterpret_cast<const T*>(all.data() + bytes * size_t(p))[i]);
            acc = op == ReduceOp::sum ? acc + x : op == ReduceOp::max ? (x > acc ? x : acc) : (x < acc ? x : acc);
          }
          out[i] = T(acc);
        }
      }
    });
    return true;
  }
  const MPI_Op mop = op == ReduceOp::sum ? MPI_SUM : op == ReduceOp::max ? MPI_MAX : MPI_MIN;
  const void* send = in && in != buf ? in : MPI_IN_PLACE;
  if (size_t(count) * itemsize(dtype) <= kSmallBytes) {
    MPI_Request req;
    MPI_Iallreduce(send, buf, int(count), t, mop, MPI_COMM_WORLD, &req);
    return distributed::wait_request(req, "all_reduce", why);
  }
  if (!distributed::arrive("all_reduce", why)) return false;
  if (MPI_Allreduce(send, buf, int(count), t, mop, MPI_COMM_WORLD) == MPI_SUCCESS) return true;
  why = "all_reduce between processes failed in MPI";
  return false;
}

}  // namespace fluxion::runtime

#else  // no MPI in this build: one process

void initialize() {
  if (launcher_size() > 1)
    throw DeviceError("DeviceError: distributed::initialize: the launcher started " + std::to_string(launcher_size()) +
                      " processes but this build of Fluxion has no MPI (install libopenmpi-dev: scripts/setup.sh)");
}
void shutdown() {}

}  // namespace fluxion::distributed

namespace fluxion::runtime {
bool interprocess_all_gather(const void*, void*, size_t, std::string& why) {
  why = "no MPI in this build";
  return false;
}
bool interprocess_all_reduce(ReduceOp, DType, const void*, void*, int64_t, std::string& why) {
  why = "no MPI in this build";
  return false;
}
}  // namespace fluxion::runtime

#endif
