// The emulated GPU's cuLaunchKernel (runtime/cuda_emulator.h): the checks a GPU makes at launch,
// then every thread of every block through the kernel's host code.
//
// Threads. A kernel without barriers or shuffles runs each thread straight through, one after the
// other. A kernel with them runs each thread of a block as a fiber (ucontext) on a stack of its
// own: a thread runs until it reaches a barrier or a shuffle (or returns), then the next one runs;
// once none can go on, the scheduler releases the lanes of a shuffle once every live lane of its
// member mask waits there (each gets the value its source lane left), or the block when every
// live thread waits at a barrier (threads that returned count as arrived, as on a GPU).
// Fibers, not loops split at barriers: a barrier may sit in a loop or a branch (MLIR's all_reduce
// lowering puts them in both), a value may live across it in a register, and a fiber keeps all of
// that exactly as the kernel wrote it, with no rewrite of the kernel's control flow. If neither a
// shuffle nor the block can go on, the threads cannot all meet (a barrier in a branch not every
// thread takes, with others at a shuffle): a GPU hangs or computes garbage; the emulator fails the
// launch.
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/cuda_emulator_state.h"

namespace fluxion::runtime::cuda::emulator::detail {

namespace {

constexpr uint32_t kMaxThreads = 1024, kMaxBlock[3] = {1024, 1024, 64};
constexpr uint64_t kMaxGrid[3] = {(uint64_t(1) << 31) - 1, 65535, 65535};
constexpr size_t kSharedLimit = 48 << 10, kSharedOptInLimit = 227 << 10;
constexpr uint32_t kWarp = 32;
constexpr size_t kStackBytes = 256 << 10;

std::string dims(const std::array<uint32_t, 3>& d) {
  return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ")";
}

// Why a GPU refuses the launch's dims or shared memory (empty when it does not).
std::string refused(const Function& f, const std::array<uint32_t, 3>& grid, const std::array<uint32_t, 3>& block,
                    uint32_t dynamic_shared) {
  const std::string& k = f.entry.name;
  const uint64_t threads = uint64_t(block[0]) * block[1] * block[2];
  const char* axis[3] = {"x", "y", "z"};
  for (int d = 0; d < 3; ++d) {
    if (block[d] == 0 || block[d] > kMaxBlock[d])
      return "kernel " + k + ": block " + dims(block) + ": " + axis[d] + " = " + std::to_string(block[d]) +
             " is outside 1.." + std::to_string(kMaxBlock[d]);
    if (grid[d] == 0 || grid[d] > kMaxGrid[d])
      return "kernel " + k + ": grid " + dims(grid) + ": " + axis[d] + " = " + std::to_string(grid[d]) + " is outside 1.." +
             std::to_string(kMaxGrid[d]);
  }
  if (threads > kMaxThreads)
    return "kernel " + k + ": block " + dims(block) + " has " + std::to_string(threads) + " threads, over the limit of 1024";
  if (const auto& m = f.entry.maxntid; m[0] && threads > uint64_t(m[0]) * std::max(m[1], 1u) * std::max(m[2], 1u))
    return "kernel " + k + ": block " + dims(block) + " has more threads than the entry's .maxntid " + dims(m);
  const size_t total = f.entry.static_shared + dynamic_shared;
  const bool opted = f.max_dynamic_shared > 0;
  if (opted ? dynamic_shared > size_t(f.max_dynamic_shared) || total > kSharedOptInLimit : total > kSharedLimit)
    return "kernel " + k + ": " + std::to_string(f.entry.static_shared) + " bytes of static and " +
           std::to_string(dynamic_shared) + " of dynamic shared memory exceed the block's " +
           (opted ? std::to_string(std::min<size_t>(kSharedOptInLimit, f.entry.static_shared + f.max_dynamic_shared)) +
                        " (what the kernel opted in to)"
                  : std::string("49152 (48 KiB; a kernel opts in to more with cuFuncSetAttribute)"));
  return "";
}

// The number of parameters of a null-terminated kernelParams (Gpu::launch's layout).
size_t count_params(void** params) {
  size_t n = 0;
  while (params && n < 4096 && params[n]) ++n;
  return n;
}

struct Launch;
struct Block;

// One thread: its arguments to the host code and, for fibers, its context and what it waits at.
struct Thread {
  Launch* launch = nullptr;
  Block* block = nullptr;  // null when threads run straight through
  std::array<int64_t, 12> ids{};  // thread x y z, block x y z, block dims, grid dims
  std::vector<void*> args;
  Thread* self = nullptr;  // the context argument: args' last entry points here (set_args)
  uint32_t linear = 0;
  enum class Wait { running, barrier, shuffle, done } wait = Wait::running;
  bool started = false;
  ucontext_t context{};
  uint64_t value = 0, result = 0;  // a shuffle's value out and in
  int32_t offset = 0, width = 0, mode = 0, valid = 0;
};

struct Block {
  std::vector<Thread> threads;
  ucontext_t scheduler{};
};

struct Launch {
  const Function& f;
  const HostKernel& kernel;
  std::string fault;  // the first out-of-bounds access
  size_t faults = 0;
};

// Fiber stacks, kept for the process (the emulator runs one launch at a time, under `mu`), each
// above a page that faults: a kernel overflowing its stack crashes rather than corrupt another's.
constexpr size_t kGuardBytes = 4096;
std::vector<void*>& stacks(size_t n) {
  static auto* pool = new std::vector<void*>;
  while (pool->size() < n) {
    void* s = mmap(nullptr, kGuardBytes + kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (s == MAP_FAILED) break;
    mprotect(s, kGuardBytes, PROT_NONE);
    pool->push_back(static_cast<char*>(s) + kGuardBytes);
  }
  return *pool;
}

thread_local Thread* starting = nullptr;
void fiber_main() {
  Thread* t = starting;
  t->launch->kernel.run(t->args.data());
  t->wait = Thread::Wait::done;  // returning resumes uc_link: the block's scheduler
}

// The arguments of thread `t`: the launch's parameters, the block's shared buffers, its ids, itself.
void set_args(Thread& t, void** params, size_t num_params, std::vector<void*>& shared) {
  t.args.clear();
  for (size_t i = 0; i < num_params; ++i) t.args.push_back(params[i]);
  for (void*& s : shared) t.args.push_back(&s);
  for (int64_t& id : t.ids) t.args.push_back(&id);
  t.self = &t;
  t.args.push_back(&t.self);
}

void set_ids(Thread& t, const std::array<uint32_t, 3>& tid, const std::array<uint32_t, 3>& bid,
             const std::array<uint32_t, 3>& block, const std::array<uint32_t, 3>& grid) {
  for (int d = 0; d < 3; ++d) t.ids[size_t(d)] = tid[size_t(d)], t.ids[size_t(3 + d)] = bid[size_t(d)],
                              t.ids[size_t(6 + d)] = block[size_t(d)], t.ids[size_t(9 + d)] = grid[size_t(d)];
  t.linear = tid[0] + block[0] * (tid[1] + block[1] * tid[2]);
}

// The lane a shuffle reads, as PTX's shfl.sync computes it with the clamp MLIR's NVVM lowering
// passes (width - 1; 32 - width for `up`) and no segment mask; `valid` is its predicate.
uint32_t source_lane(uint32_t lane, const Thread& t, int32_t& valid) {
  const int32_t c = t.mode == int32_t(ShuffleMode::up) ? kWarp - t.width : t.width - 1;
  int32_t j = 0;
  bool p = false;
  switch (ShuffleMode(t.mode)) {
    case ShuffleMode::up: j = int32_t(lane) - t.offset, p = j >= c; break;
    case ShuffleMode::down: j = int32_t(lane) + t.offset, p = j <= c; break;
    case ShuffleMode::xor_: j = int32_t(lane) ^ t.offset, p = j <= c; break;
    case ShuffleMode::idx: j = t.offset & 31, p = j <= c; break;
  }
  valid = p;
  return p ? uint32_t(j) : lane;
}

// Releases the shuffles that can complete; whether any could. A shuffle's member mask is the
// lanes below its width (MLIR's NVVM lowering passes (-1) >> (32 - width) to shfl.sync), so it
// completes once every live lane of the mask waits at a shuffle of that width -- lanes outside the
// mask may be anywhere (MLIR's all_reduce has lanes 0..3 of a warp shuffle while the rest wait at
// a barrier). Each waiting lane then gets the value its source lane left.
bool release_shuffles(Block& b) {
  bool released = false;
  for (size_t first = 0; first < b.threads.size(); first += kWarp) {
    const size_t last = std::min(b.threads.size(), first + kWarp);
    for (size_t i = first; i < last; ++i) {
      if (b.threads[i].wait != Thread::Wait::shuffle) continue;
      const int32_t width = b.threads[i].width;
      bool complete = true;
      for (size_t j = first; j < std::min(last, first + size_t(std::clamp(width, 0, 32))); ++j) {
        const Thread& u = b.threads[j];
        complete = complete && (u.wait == Thread::Wait::done || (u.wait == Thread::Wait::shuffle && u.width == width));
      }
      if (!complete) continue;
      for (size_t k = first; k < last; ++k) {
        Thread& t = b.threads[k];
        if (t.wait != Thread::Wait::shuffle || t.width != width) continue;
        const size_t j = first + source_lane(uint32_t(k - first), t, t.valid);
        const bool there = j < last && b.threads[j].wait == Thread::Wait::shuffle && b.threads[j].width == width;
        t.result = there ? b.threads[j].value : t.value;
      }
      for (size_t k = first; k < last; ++k)
        if (b.threads[k].wait == Thread::Wait::shuffle && b.threads[k].width == width) b.threads[k].wait = Thread::Wait::running;
      released = true;
    }
  }
  return released;
}

// Runs the block's threads as fibers until all have returned; a message when they cannot all meet.
// `reverse`: each round resumes the threads from the last one. A race between barriers shows in
// one order or the other -- thread 0 writing what the others then read shows when they run
// first, the others writing what thread 0 then reads when it does -- so run_grid alternates.
std::string run_fibers(Block& b, bool reverse) {
  std::vector<void*>& pool = stacks(b.threads.size());
  if (pool.size() < b.threads.size()) return "no memory for the stacks of " + std::to_string(b.threads.size()) + " fibers";
  for (size_t i = 0; i < b.threads.size(); ++i) {
    Thread& t = b.threads[i];
    getcontext(&t.context);
    t.context.uc_stack.ss_sp = pool[i];
    t.context.uc_stack.ss_size = kStackBytes;
    t.context.uc_link = &b.scheduler;
    makecontext(&t.context, fiber_main, 0);
  }
  for (;;) {
    for (size_t n = 0; n < b.threads.size(); ++n) {
      Thread& t = b.threads[reverse ? b.threads.size() - 1 - n : n];
      if (t.wait != Thread::Wait::running) continue;
      if (!t.started) t.started = true, starting = &t;
      swapcontext(&b.scheduler, &t.context);
    }
    size_t done = 0, at_barrier = 0;
    for (const Thread& t : b.threads) done += t.wait == Thread::Wait::done, at_barrier += t.wait == Thread::Wait::barrier;
    if (done == b.threads.size()) return "";
    if (release_shuffles(b)) continue;
    if (done + at_barrier == b.threads.size()) {
      for (Thread& t : b.threads)
        if (t.wait == Thread::Wait::barrier) t.wait = Thread::Wait::running;
      continue;
    }
    return "the threads of a block cannot all meet: " + std::to_string(at_barrier) + " wait at a barrier, " +
           std::to_string(b.threads.size() - done - at_barrier) + " at a shuffle, " + std::to_string(done) +
           " have returned (a barrier or shuffle that not every thread reaches)";
  }
}

// Every block of the grid, in order (x fastest); the fibers of odd blocks resume from the last thread.
std::string run_grid(Launch& l, const std::array<uint32_t, 3>& grid, const std::array<uint32_t, 3>& block,
                     uint32_t dynamic_shared, void** params) {
  const HostKernel& k = l.kernel;
  std::vector<size_t> offsets;
  size_t arena_bytes = 0;
  for (size_t bytes : k.shared_buffers) offsets.push_back(arena_bytes), arena_bytes += (bytes + 15) / 16 * 16;
  std::vector<char> arena(arena_bytes + dynamic_shared + 16);
  std::vector<void*> shared(k.shared_buffers.size());
  for (size_t i = 0; i < shared.size(); ++i) shared[i] = arena.data() + offsets[i];
  const uint32_t threads = block[0] * block[1] * block[2];
  Block b;
  b.threads.resize(k.synchronizes ? threads : 1);
  for (Thread& t : b.threads) t.launch = &l, t.block = k.synchronizes ? &b : nullptr;
  std::array<uint32_t, 3> bid{}, tid{};
  for (bid[2] = 0; bid[2] < grid[2]; ++bid[2])
    for (bid[1] = 0; bid[1] < grid[1]; ++bid[1])
      for (bid[0] = 0; bid[0] < grid[0]; ++bid[0]) {
        std::memset(arena.data(), 0xFF, arena.size());  // shared memory starts undefined on a GPU
        for (uint32_t i = 0; i < threads; ++i) {
          tid = {i % block[0], i / block[0] % block[1], i / (block[0] * block[1])};
          Thread& t = b.threads[k.synchronizes ? i : 0];
          set_ids(t, tid, bid, block, grid);
          set_args(t, params, k.params.size(), shared);
          if (!k.synchronizes) k.run(t.args.data());
          else t.wait = Thread::Wait::running, t.started = false;
        }
        if (k.synchronizes)
          if (std::string why = run_fibers(b, (bid[0] + bid[1] + bid[2]) % 2 == 1); !why.empty()) return "kernel " + k.name + ", block " + dims(bid) + ": " + why;
      }
  return "";
}

}  // namespace

int launch(const Function& f, const std::array<uint32_t, 3>& grid, const std::array<uint32_t, 3>& block,
           uint32_t dynamic_shared, void** params, void** extra) {
  if (std::string why = refused(f, grid, block, dynamic_shared); !why.empty()) return fail(kInvalidValue, why);
  if (extra) return fail(kNotSupported, "the emulated driver takes kernel parameters through kernelParams only");
  const size_t n = count_params(params);
  if (n != f.entry.params.size())
    return fail(kInvalidValue, "kernel " + f.entry.name + " takes " + std::to_string(f.entry.params.size()) +
                                   " parameters (its PTX .entry lists them), the launch passed " + std::to_string(n));
  std::shared_ptr<const HostModule> host = f.module->host.lock();
  if (!host) return fail(kInvalidHandle, "kernel " + f.entry.name + ": its host code went with its GpuProgram");
  const HostKernel* k = nullptr;
  for (const HostKernel& h : host->kernels)
    if (h.name == f.entry.name) k = &h;
  if (!k || k->params.size() != n)
    return fail(kInvalidPtx, "kernel " + f.entry.name + ": the host code and the PTX disagree on the kernel's parameters");
  for (size_t i = 0; i < n; ++i) {
    const HostParam& p = k->params[i];
    if (!p.pointer || p.bytes == 0) continue;
    uint64_t address = 0;
    std::memcpy(&address, params[i], sizeof(address));
    if (std::string why = outside_allocations(state(), address, p.bytes); !why.empty())
      return fail_sticky(kIllegalAddress, "kernel " + f.entry.name + " parameter " + std::to_string(i) + " (" + p.type +
                                              ", " + std::to_string(p.bytes) + " bytes): " + why);
  }
  Launch l{f, *k, "", 0};
  if (std::string why = run_grid(l, grid, block, dynamic_shared, params); !why.empty()) return fail_sticky(kLaunchFailed, why);
  if (l.faults)
    return fail_sticky(kIllegalAddress, l.fault + (l.faults > 1 ? " (and " + std::to_string(l.faults - 1) + " more)" : ""));
  return fail(kSuccess, "");
}

}  // namespace fluxion::runtime::cuda::emulator::detail

using fluxion::runtime::cuda::emulator::detail::Thread;

extern "C" void fluxion_emu_barrier(void* thread) {
  auto* t = static_cast<Thread*>(thread);
  t->wait = Thread::Wait::barrier;
  swapcontext(&t->context, &t->block->scheduler);
}

extern "C" uint64_t fluxion_emu_shuffle(void* thread, uint64_t value, int32_t offset, int32_t width, int32_t mode) {
  auto* t = static_cast<Thread*>(thread);
  t->value = value, t->offset = offset, t->width = width, t->mode = mode;
  t->wait = Thread::Wait::shuffle;
  swapcontext(&t->context, &t->block->scheduler);
  return t->result;
}

extern "C" int32_t fluxion_emu_shuffle_valid(void* thread) { return static_cast<Thread*>(thread)->valid; }

extern "C" void fluxion_emu_out_of_bounds(void* thread, int64_t site, int64_t dim, int64_t index, int64_t size) {
  if (uint64_t(index) < uint64_t(size)) return;
  auto* t = static_cast<Thread*>(thread);
  auto& l = *t->launch;
  if (l.faults++) return;
  const auto& ids = t->ids;
  auto triple = [&](size_t at) {
    return "(" + std::to_string(ids[at]) + ", " + std::to_string(ids[at + 1]) + ", " + std::to_string(ids[at + 2]) + ")";
  };
  const std::string what = site >= 0 && size_t(site) < l.kernel.sites.size() ? l.kernel.sites[size_t(site)] : "an access";
  l.fault = "kernel " + l.kernel.name + ", block " + triple(3) + ", thread " + triple(0) + ": " + what + " at index " +
            std::to_string(index) + " of dimension " + std::to_string(dim) + ", whose size is " + std::to_string(size);
}
