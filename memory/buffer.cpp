#include "memory/buffer.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <optional>
#include <unistd.h>
#include <deque>
#include <unordered_map>
#include <vector>

namespace fluxion {

namespace {

// Size classes: multiples of 64 bytes up to 4 KiB, then multiples of 4 KiB (pages). Large blocks
// are reused only at their exact page-rounded size, which is what eager loops and training steps
// ask for again and again.
size_t size_class(size_t n) {
  if (n <= 4096) return n ? (n + 63) / 64 * 64 : 64;
  return (n + 4095) / 4096 * 4096;
}

// FLUXION_ALLOCATOR_CACHE_MB, when set: a fixed bound on the cache.
std::optional<size_t> fixed_limit() {
  static const std::optional<size_t> limit = []() -> std::optional<size_t> {
    // memory/ sits below ir/settings: a value that is not an integer >= 0 reads as unset here and
    // is raised by check_settings() when the first device is made.
    const char* s = std::getenv("FLUXION_ALLOCATOR_CACHE_MB");
    if (!s || !*s) return std::nullopt;
    char* end = nullptr;
    const long long mb = std::strtoll(s, &end, 10);
    if (*end || mb < 0) return std::nullopt;
    return size_t(mb) << 20;
  }();
  return limit;
}

constexpr size_t kLimitFloor = size_t(1) << 30;

// Half the machine's memory: the most the cache grows to on its own.
size_t limit_ceiling() {
  static const size_t ceiling = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? std::max(kLimitFloor, size_t(pages) * size_t(page) / 2) : kLimitFloor;
  }();
  return ceiling;
}

struct Cache {
  std::mutex mu;
  struct Freed {
    void* block;
    uint64_t when;  // the order blocks were freed in
  };
  std::unordered_map<size_t, std::deque<Freed>> free_blocks;  // by size class, oldest first
  size_t cached = 0, hits = 0, misses = 0;
  size_t live = 0, peak = 0;  // bytes handed out and not yet given back; the most ever at once
  uint64_t frees = 0;

  // The most the cache holds: FLUXION_ALLOCATOR_CACHE_MB when set; otherwise as much as the process
  // has had live at once, at least 1 GiB and at most half the machine's memory. A training step
  // frees its whole working set and asks for it again in the next step: a cache smaller than that
  // hands the blocks back to the system and the next step faults every page in again (ResNet-18's
  // float32 step: 0.8 GB re-faulted per step, 1.5x its time with a fixed 1 GiB cache).
  size_t limit() const {
    if (std::optional<size_t> fixed = fixed_limit()) return *fixed;
    return std::clamp(peak, kLimitFloor, limit_ceiling());
  }
};
Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: buffers may be freed during static destruction
  return *c;
}

// A block of exactly `capacity` bytes (a size class), from the cache or the system.
void* take_block(size_t capacity) {
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.live += capacity;
    c.peak = std::max(c.peak, c.live);
    auto it = c.free_blocks.find(capacity);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* p = it->second.back().block;
      it->second.pop_back();
      c.cached -= capacity;
      ++c.hits;
      return p;
    }
    ++c.misses;
  }
  void* p = std::aligned_alloc(64, capacity);
  if (!p) {
    allocator_trim();
    p = std::aligned_alloc(64, capacity);
    if (!p) {
      std::lock_guard<std::mutex> lock(c.mu);
      c.live -= capacity;
      throw std::bad_alloc();
    }
  }
  return p;
}

// A freed block is kept if the cache has room, making room by dropping the blocks freed longest
// ago: the block just freed is the likeliest to be asked for again (the next step of a loop that
// all-reduces 4 x 256 MB frees and wants back four 256 MB blocks, while the 1 GB array it was
// split from long ago is not wanted again). A block larger than the whole cache goes back to the
// system.
void give_block(void* p, size_t capacity) {
  Cache& c = cache();
  std::vector<void*> dropped;  // freed after the lock
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.live -= capacity;
    const size_t limit = c.limit();
    if (capacity <= limit) {
      while (c.cached + capacity > limit) {
        auto oldest = c.free_blocks.end();
        for (auto it = c.free_blocks.begin(); it != c.free_blocks.end(); ++it)
          if (!it->second.empty() && (oldest == c.free_blocks.end() || it->second.front().when < oldest->second.front().when))
            oldest = it;
        dropped.push_back(oldest->second.front().block);
        oldest->second.pop_front();
        c.cached -= oldest->first;
      }
      c.free_blocks[capacity].push_back({p, c.frees++});
      c.cached += capacity;
      p = nullptr;
    }
  }
  for (void* q : dropped) std::free(q);
  std::free(p);
}

}  // namespace

namespace {
// The device a new host buffer says it is on: the default device when that is a CPU device (the
// CPU devices share host memory), else cpu:0 (host bytes are not a GPU's).
Device host_device() {
  const Device d = default_device();
  return d.memory_kind() == MemoryKind::host ? d : Device{};
}

DeviceMemory* g_device_memory[2] = {nullptr, nullptr};  // by Platform
}  // namespace

void set_device_memory(Platform p, DeviceMemory* memory) { g_device_memory[size_t(p)] = memory; }

DeviceMemory& device_memory(Platform p) {
  DeviceMemory* m = g_device_memory[size_t(p)];
  if (!m) throw std::logic_error(std::string("no device memory is registered for platform ") + std::string(platform_name(p)));
  return *m;
}

Buffer::Buffer(size_t n) : nbytes(n), capacity(size_class(n)), device(host_device()) { data = take_block(capacity); }

Buffer::Buffer(void* external_data, size_t n, std::shared_ptr<void> keep_alive)
    : data(external_data), nbytes(n), capacity(n), device(host_device()), owner(std::move(keep_alive)), external(true) {}

Buffer::Buffer(const Device& d, size_t n) : nbytes(n), device(d) {
  if (d.memory_kind() == MemoryKind::host) {
    capacity = size_class(n);
    data = take_block(capacity);
    return;
  }
  memory = MemoryKind::device;
  capacity = n;
  address = device_memory(d.platform).allocate(d.id, n);
}

Buffer::~Buffer() {
  if (memory == MemoryKind::device) {
    device_memory(device.platform).release(device.id, address);
    return;
  }
  if (!external) give_block(data, capacity);
}

const void* Buffer::host_bytes() const {
  if (memory == MemoryKind::host) return data;
  std::lock_guard<std::mutex> lock(host_copy_mutex_);
  if (!host_copy_) {
    auto copy = std::make_shared<Buffer>(nbytes);
    if (nbytes) device_memory(device.platform).copy_to_host(device.id, copy->data, address, nbytes);
    host_copy_ = std::move(copy);
  }
  return host_copy_->data;
}

void Buffer::device_written() {
  std::lock_guard<std::mutex> lock(host_copy_mutex_);
  host_copy_.reset();
}

void Buffer::synchronize() const {
  if (memory == MemoryKind::device) device_memory(device.platform).synchronize(device.id);
}

// The block and its capacity sit in the 16 bytes in front of the pointer handed out, which is
// placed at the first `alignment` boundary after them, so scratch_free needs nothing else.
struct ScratchHeader {
  void* block;
  size_t capacity;
};

void* scratch_alloc(size_t nbytes, size_t alignment) noexcept {
  if ((alignment & (alignment - 1)) != 0) return nullptr;  // not a power of two
  alignment = std::max<size_t>(alignment, 64);
  // The block is 64-byte aligned, so the first boundary after the header is at most `alignment`
  // bytes in: a 4 KiB temporary stays in the 4 KiB + 64 class.
  const size_t capacity = size_class(nbytes + alignment);
  void* block;
  try {
    block = take_block(capacity);
  } catch (const std::bad_alloc&) {
    return nullptr;  // as malloc would: kernels are C code and must not see exceptions
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(block) + sizeof(ScratchHeader);
  auto* p = reinterpret_cast<char*>((start + alignment - 1) & ~uintptr_t(alignment - 1));
  new (p - sizeof(ScratchHeader)) ScratchHeader{block, capacity};
  return p;
}

void scratch_free(void* p) noexcept {
  if (!p) return;
  const auto* h = reinterpret_cast<const ScratchHeader*>(static_cast<char*>(p) - sizeof(ScratchHeader));
  give_block(h->block, h->capacity);
}

AllocatorStats allocator_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return {c.cached, c.hits, c.misses, c.live, c.peak, c.limit()};
}

void allocator_trim() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& [size, blocks] : c.free_blocks)
    for (const Cache::Freed& f : blocks) std::free(f.block);
  c.free_blocks.clear();
  c.cached = 0;
  c.peak = c.live;  // the cache's bound starts again from what is live now
}

}  // namespace fluxion
