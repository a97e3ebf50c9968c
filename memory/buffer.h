// Host memory owned by arrays: 64-byte aligned, so kernels (eager and compiled) can use aligned
// vector loads. Freed blocks are kept by size and handed out again (a caching allocator): eager
// loops then stop paying for page faults on every fresh result, and small arrays skip malloc.
#pragma once
#include <cstddef>
#include <memory>

#include "memory/device.h"

namespace fluxion {

struct Buffer {
  void* data = nullptr;
  size_t nbytes = 0;
  size_t capacity = 0;  // bytes actually reserved (the size class)
  /// The device the bytes belong to. Host memory serves every CPU device; a GPU device's
  /// allocator (not written yet) would hand out buffers of MemoryKind::device.
  Device device = default_device();
  /// Placed there on purpose (device_put, or computed from committed operands): eager ops follow
  /// committed operands and refuse two different ones; uncommitted buffers (new arrays, scalars)
  /// go wherever their op runs -- JAX's rule.
  bool committed = false;

  /// Memory the Buffer did not allocate (fx::from_buffer, from_eigen, DLPack import): `owner` is
  /// released when the last array using the bytes goes; the bytes never enter the cache.
  std::shared_ptr<void> owner;
  bool external = false;

  explicit Buffer(size_t n);
  Buffer(void* external_data, size_t n, std::shared_ptr<void> keep_alive);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  static std::shared_ptr<Buffer> allocate(size_t nbytes) { return std::make_shared<Buffer>(nbytes); }
  static std::shared_ptr<Buffer> wrap(void* data, size_t nbytes, std::shared_ptr<void> keep_alive) {
    return std::make_shared<Buffer>(data, nbytes, std::move(keep_alive));
  }
};

/// Scratch memory for compiled kernels' temporaries (the jit's memref.alloc and dealloc), from the
/// same cache: a kernel that needs the same temporaries on every call gets them without malloc and
/// without page faults. Aligned to `alignment` (a power of two; at least 64). nullptr when out of
/// memory, like malloc.
void* scratch_alloc(size_t nbytes, size_t alignment = 64) noexcept;
void scratch_free(void* p) noexcept;

/// Statistics of the caching allocator (for tests and benchmarks).
struct AllocatorStats {
  size_t cached_bytes;     // held in the cache, free for reuse
  size_t hits;             // allocations served from the cache
  size_t misses;           // allocations that went to the system
  size_t live_bytes;       // handed out and not yet freed
  size_t peak_live_bytes;  // the most live at once (since the last allocator_trim)
  size_t limit_bytes;      // the most the cache holds now: FLUXION_ALLOCATOR_CACHE_MB when set,
                           // else the peak, at least 1 GiB and at most half the machine's memory
};
AllocatorStats allocator_stats();
/// Returns every cached block to the system, and restarts the peak (so the cache's bound) from
/// what is live now.
void allocator_trim();

}  // namespace fluxion
