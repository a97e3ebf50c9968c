#include "runtime/device_workers.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#ifdef __linux__
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "ir/error.h"
#include "ir/settings.h"

namespace fluxion::runtime {

namespace {

using Clock = std::chrono::steady_clock;
// How long a thread that waits spins before it sleeps: a worker that just finished (the next
// launch of a training loop or a benchmark comes within microseconds), and the caller waiting for
// the last shards of its launch.
constexpr auto kWorkerSpin = std::chrono::microseconds(50);
constexpr auto kCallerSpin = std::chrono::microseconds(20);

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Sleeps while `word` holds `seen` (returns at once if it does not; spurious returns are fine:
// every caller loops), and wakes every thread sleeping on `word`.
void sleep_on(std::atomic<uint32_t>& word, uint32_t seen) {
#ifdef __linux__
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
#else
  word.wait(seen);
#endif
}
void wake_sleepers(std::atomic<uint32_t>& word) {
#ifdef __linux__
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
#else
  word.notify_all();
#endif
}

// Waits until ready(word's value), spinning for `spin` first, and returns that value. Before it
// sleeps it sets `sleeping` and reads the word again; a waker changes the word and then reads
// `sleeping` (both sequentially consistent), so either the waiter sees the change or the waker sees
// that it must make the system call.
template <class Ready>
uint32_t wait_for(std::atomic<uint32_t>& word, std::atomic<uint32_t>& sleeping, Clock::duration spin, Ready ready) {
  if (spin > Clock::duration::zero()) {
    const Clock::time_point until = Clock::now() + spin;
    for (unsigned i = 1;; ++i) {
      const uint32_t v = word.load(std::memory_order_acquire);
      if (ready(v)) return v;
      cpu_relax();
      if (i % 64 == 0 && Clock::now() > until) break;
    }
  }
  for (;;) {
    sleeping.store(1, std::memory_order_seq_cst);
    const uint32_t v = word.load(std::memory_order_seq_cst);
    if (ready(v)) {
      sleeping.store(0, std::memory_order_relaxed);
      return v;
    }
    sleep_on(word, v);
  }
}

// One worker thread's mailbox.
struct alignas(64) Slot {
  std::atomic<uint32_t> wake{0};  // bumped for every order (what the worker sleeps on)
  std::atomic<uint32_t> sleeping{0};
  std::atomic<uint64_t> order{0};  // (launch epoch << 32) | the shard to run, or kClaim
};
constexpr uint32_t kClaim = 0xFFFFFFFF;  // take shards from the launch's counter

// The launch in progress (one at a time, under `launch_mu`). The caller writes the plain fields
// before it publishes the launch (`next`, the slots' orders: release), and a worker reads them only
// after it holds a shard of that launch, which keeps the launch from ending.
struct Pool {
  std::mutex launch_mu;
  std::vector<std::unique_ptr<Slot>> slots;  // slots[k] is worker k's (k >= 1; grown under launch_mu)

  // any_thread: (epoch << 32) | (count << 16) | next unclaimed shard; a worker holding an old
  // epoch, or finding next == count, takes nothing.
  std::atomic<uint64_t> next{0};
  std::atomic<uint32_t> finished{0};  // shards done (the caller sleeps on it)
  std::atomic<uint32_t> caller_sleeping{0};
  uint32_t epoch = 0;
  uint32_t count = 0;
  const fluxion::Device* devs = nullptr;
  const ShardTask* task = nullptr;
  std::atomic<bool> failed{false};
  std::exception_ptr error;
};
// Never destroyed: workers may still be parked while static destructors run.
Pool& pool() {
  static Pool* p = new Pool();
  return *p;
}

thread_local bool t_in_launch = false;

// Pops the thread's default device and leaves the launch, also when a shard throws.
struct ShardScope {
  explicit ShardScope(const fluxion::Device& d) : was_in_launch(t_in_launch) {
    push_default_device(d);
    t_in_launch = true;
  }
  ~ShardScope() {
    t_in_launch = was_in_launch;
    pop_default_device();
  }
  const bool was_in_launch;
};

void run_shard(Pool& p, uint32_t k) {
  const uint32_t count = p.count;  // read now: once every shard is done the launch may be gone
  try {
    ShardScope scope(p.devs[k]);
    (*p.task)(k);
  } catch (...) {
    if (!p.failed.exchange(true)) p.error = std::current_exception();
  }
  if (p.finished.fetch_add(1, std::memory_order_seq_cst) + 1 == count &&
      p.caller_sleeping.load(std::memory_order_seq_cst))
    wake_sleepers(p.finished);
}

// Takes shards of launch `epoch` from the counter until none is left.
void claim_shards(Pool& p, uint32_t epoch) {
  uint64_t v = p.next.load(std::memory_order_acquire);
  for (;;) {
    const uint32_t count = uint32_t(v >> 16) & 0xFFFF, k = uint32_t(v) & 0xFFFF;
    if (uint32_t(v >> 32) != epoch || k >= count) return;
    if (p.next.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      run_shard(p, k);
      v = p.next.load(std::memory_order_acquire);
    }
  }
}

// Worker k: runs each order given to it. Workers beyond the core count sleep at once when idle.
#ifdef __linux__
// The CPUs the process may run on, read when libfluxion loads, before any OpenMP region: libomp
// pins the thread that opens one (OMP_PROC_BIND), and a worker that thread starts would inherit
// the pin -- device 1's shards then shared device 0's core while the other cores idled.
const cpu_set_t kProcessCpus = [] {
  cpu_set_t s;
  CPU_ZERO(&s);
  if (sched_getaffinity(0, sizeof s, &s) != 0) CPU_ZERO(&s);
  return s;
}();
#endif

void work(Slot& s, bool spins) {
#ifdef __linux__
  if (CPU_COUNT(&kProcessCpus) > 0) sched_setaffinity(0, sizeof kProcessCpus, &kProcessCpus);
#endif
  Pool& p = pool();
  uint32_t seen = 0;
  uint64_t done = 0;
  for (;;) {
    seen = wait_for(s.wake, s.sleeping, spins ? Clock::duration(kWorkerSpin) : Clock::duration::zero(),
                    [seen](uint32_t v) { return v != seen; });
    const uint64_t o = s.order.load(std::memory_order_acquire);
    if (o == done) continue;  // woken again for an order it already ran
    done = o;
    if (uint32_t(o) == kClaim)
      claim_shards(p, uint32_t(o >> 32));
    else
      run_shard(p, uint32_t(o));
  }
}

int cores() { return std::max(1, thread_setting()); }

// Workers 1 .. last, started on first use (before a launch is published: starting one may throw).
void start_workers(Pool& p, size_t last) {
  while (p.slots.size() <= last) {
    const size_t id = p.slots.size();
    p.slots.push_back(std::make_unique<Slot>());
    if (id == 0) continue;  // slot 0 stands for the caller
    std::thread(work, std::ref(*p.slots.back()), int(id) < cores()).detach();
  }
}

// Gives worker k the order `what` of the current launch.
void order(Pool& p, size_t k, uint32_t what) {
  Slot& s = *p.slots[k];
  s.order.store((uint64_t(p.epoch) << 32) | what, std::memory_order_release);
  s.wake.fetch_add(1, std::memory_order_seq_cst);
  if (s.sleeping.load(std::memory_order_seq_cst)) wake_sleepers(s.wake);
}

// A launch from inside a shard (a host callback that calls pmap): its shards run here in turn.
void run_here(std::span<const fluxion::Device> devs, ShardTask task, Schedule schedule) {
  if (schedule == Schedule::together && devs.size() > 1)
    throw DeviceError("DeviceError: pmap launched from inside a device's program: its devices meet in collectives, "
                      "which needs every device's thread, and this thread is one of them");
  for (size_t k = 0; k < devs.size(); ++k) {
    ShardScope scope(devs[k]);
    task(k);
  }
}

}  // namespace

bool in_launch() { return t_in_launch; }

int process_cpu_count() {
#ifdef __linux__
  return CPU_COUNT(&kProcessCpus);
#else
  return 0;
#endif
}

void run_on_devices(std::span<const fluxion::Device> devs, ShardTask task, Schedule schedule) {
  const size_t n = devs.size();
  if (n == 0) return;
  if (n >= 0xFFFF) throw DeviceError("DeviceError: pmap over " + std::to_string(n) + " devices of one process (at most 65534)");
  if (t_in_launch) return run_here(devs, task, schedule);
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.launch_mu);
  const size_t helpers = schedule == Schedule::together ? n - 1 : std::min(n, size_t(cores())) - 1;
  start_workers(p, helpers);
  p.devs = devs.data();
  p.task = &task;
  p.count = uint32_t(n);
  p.failed.store(false, std::memory_order_relaxed);
  p.error = nullptr;
  p.finished.store(0, std::memory_order_relaxed);
  const uint32_t epoch = ++p.epoch;
  const uint64_t base = (uint64_t(epoch) << 32) | (uint64_t(n) << 16);
  if (schedule == Schedule::together) {
    p.next.store(base | n, std::memory_order_release);  // nothing to claim
    for (size_t k = 1; k <= helpers; ++k) order(p, k, uint32_t(k));
    run_shard(p, 0);
  } else {
    p.next.store(base, std::memory_order_release);
    for (size_t k = 1; k <= helpers; ++k) order(p, k, kClaim);
    claim_shards(p, epoch);
  }
  wait_for(p.finished, p.caller_sleeping, kCallerSpin, [n](uint32_t v) { return v == n; });
  if (p.failed.load(std::memory_order_relaxed)) std::rethrow_exception(std::exchange(p.error, nullptr));
}

}  // namespace fluxion::runtime
