// How one fx::pmap launch runs its shards (one per local device) on threads: the calling thread
// and a pool of persistent worker threads, woken by one atomic store (and a futex system call only
// when the worker was asleep). Nothing is allocated per launch: the task is a function pointer and
// its context, the launch's state lives in the pool, and each shard writes its own slot of the
// caller's result arrays.
//
// Two schedules:
//  - together: every shard runs at the same time on a thread of its own (shard 0 on the caller,
//    shard k on worker k). Programs whose devices meet in collectives need this: a shard waits in
//    the collective for all the others.
//  - any_thread: the shards are independent (no collectives), so the caller and up to cores - 1
//    workers take them one at a time from a shared counter. With more devices than cores this
//    does not oversubscribe the machine, and a launch of tiny shards costs no thread handoff at all
//    when the caller has taken every shard before a worker woke up.
// Either way shard k runs with devs[k] as its thread's default device, and the launch returns when
// every shard has returned; the first exception a shard threw is rethrown.
//
// Workers that just finished spin briefly before they sleep, so back-to-back launches find them
// awake; only as many as there are cores spin (the others sleep at once, leaving the cores to the
// threads that work). One launch runs at a time (others wait for it).
#pragma once
#include <cstddef>
#include <span>

#include "memory/device.h"

namespace fluxion::runtime {

enum class Schedule { together, any_thread };

/// A callable over shard indices, by reference (the callable must outlive the launch).
class ShardTask {
 public:
  template <class F>
  explicit ShardTask(const F& f) : ctx_(&f), call_([](const void* c, size_t k) { (*static_cast<const F*>(c))(k); }) {}
  void operator()(size_t k) const { call_(ctx_, k); }

 private:
  const void* ctx_;
  void (*call_)(const void*, size_t);
};

/// Runs task(k) for every k in [0, devs.size()) as described at the top of this file.
void run_on_devices(std::span<const fluxion::Device> devs, ShardTask task, Schedule schedule);

/// Whether the calling thread is running a shard of a launch (a launch from there runs its shards
/// on this thread, one after another; `together` is then a DeviceError, as it could not meet).
bool in_launch();

/// How many CPUs the process could run on when libfluxion loaded (0 where that is not known): the
/// set every worker runs on, whatever pin the thread that started it has since been given.
int process_cpu_count();

}  // namespace fluxion::runtime
