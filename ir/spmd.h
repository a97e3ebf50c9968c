// What a collective's kernel talks to while fx::pmap runs a program on several devices at once
// (SPMD): the communicator of each named axis. The interface is here, at the floor of the kernels
// (prims/collectives.cpp); the implementations are the runtime's -- threads of one process
// sharing memory (runtime/collectives_local.h), extended across processes by MPI
// (runtime/distributed.h). A GPU backend would add one over NCCL.
//
// An axis is found by its key, a stable hash of its name, because compiled code calls the kernels
// with integer params only (kernels/library_calls.h), and a kernel cached on disk by one process
// must find the same axis in another.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"

namespace fluxion {

enum class ReduceOp : uint8_t { sum, max, min };

/// The devices one named axis spans, as seen by one of them.
class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This device's position along the axis, and the axis size.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// out = op over every rank's `in` (`count` elements of `dtype`; in == out is allowed). Returns
  /// false when the group failed -- a peer raised an error or did not arrive within the timeout
  /// -- and then `out` is unspecified and failure() says why.
  virtual bool all_reduce(ReduceOp op, DType dtype, const void* in, void* out, int64_t count) = 0;
  /// out = every rank's `in` (`bytes` each), in rank order. false on failure, as above.
  virtual bool all_gather(const void* in, void* out, size_t bytes) = 0;
  virtual std::string failure() const = 0;
};

/// The key of an axis name (FNV-1a: the same in every process and every run).
int64_t axis_key(std::string_view axis_name);
/// The key of a ppermute's (source, destination) pairs, the same way.
int64_t perm_key(const std::vector<int64_t>& pairs);

/// While alive, collectives over the axis `key` on this thread go to `comm` (pmap's device
/// workers hold one per mapped axis while they run their program).
class AxisBinding {
 public:
  AxisBinding(int64_t key, Communicator* comm);
  ~AxisBinding();
  AxisBinding(const AxisBinding&) = delete;
  AxisBinding& operator=(const AxisBinding&) = delete;
};
/// The communicator bound to `key` on this thread, or nullptr.
Communicator* bound_communicator(int64_t key);

/// A collective kernel cannot throw (compiled code calls it, and exceptions do not unwind through
/// generated code): it records why it failed here and fills its output with zeros; pmap takes the
/// record after the program returns and raises it as a DeviceError.
void record_collective_failure(std::string why);
std::optional<std::string> take_collective_failure();

}  // namespace fluxion
