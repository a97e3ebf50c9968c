// The communicator of one pmap launch: the local devices' worker threads, sharing host memory,
// and -- after fx::distributed::initialize -- the same axis in every other process, reached through
// MPI by the leader thread (local rank 0). Global rank = process index * local devices + local rank.
//
// all_reduce: every thread publishes its buffers; thread r reduces slice r of all of them and
// writes the result into slice r of every output (n reads and n writes of each byte: what any
// all-reduce that leaves the result on every device must move), then the leader all-reduces its
// output with the other processes and the others copy it. all_gather likewise. Waits give up
// after collective_timeout_s() or when a thread calls abort(): the others then return false
// instead of hanging (a device whose program raised, a process that stopped answering).
#pragma once
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/spmd.h"

namespace fluxion::runtime {

class LocalGroup {
 public:
  /// `local` devices in this process; `processes` processes (the leader talks to the others).
  LocalGroup(int local, int process_index, int processes);
  ~LocalGroup();
  Communicator& member(int local_rank);
  /// Wakes every waiting member with `why`; collectives fail from now on.
  void abort(const std::string& why);
  bool failed() const;

 private:
  class Member;
  friend class Member;
  /// All local members meet here; false when the group failed or the wait timed out.
  bool barrier(int local_rank);

  const int local_, process_index_, processes_;
  std::vector<std::unique_ptr<Member>> members_;
  std::vector<const void*> ins_;
  std::vector<void*> outs_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  int64_t generation_ = 0;
  bool failed_ = false;
  std::string why_;
};

}  // namespace fluxion::runtime
