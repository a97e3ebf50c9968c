// The bytes of an array: host memory (64-byte aligned, so kernels, eager and compiled, can use
// aligned vector loads) or a device's memory (a GPU's: memory/device_memory.h). Freed host blocks
// are kept by size and handed out again (a caching allocator): eager loops then stop paying for
// page faults on every fresh result, and small arrays skip malloc. A GPU's blocks are cached by
// its own allocator (runtime/cuda_allocator.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "memory/device.h"
#include "memory/device_memory.h"

namespace fluxion {

struct Buffer {
  /// The host bytes (MemoryKind::host); null for device memory, whose bytes host_bytes() copies.
  void* data = nullptr;
  /// The device address (MemoryKind::device); 0 for host memory.
  uint64_t address = 0;
  MemoryKind memory = MemoryKind::host;
  size_t nbytes = 0;
  size_t capacity = 0;  // bytes actually reserved (the size class)
  /// The device the bytes belong to. Host memory serves every CPU device (new host buffers say the
  /// default device when it is a CPU device, else cpu:0); a GPU's memory belongs to that GPU.
  Device device;
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
  Buffer(const Device& d, size_t n);  // on d's memory: host memory for a CPU device
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  /// Host memory.
  static std::shared_ptr<Buffer> allocate(size_t nbytes) { return std::make_shared<Buffer>(nbytes); }
  /// Memory of device d (host memory for a CPU device), owned by d.
  static std::shared_ptr<Buffer> allocate_on(const Device& d, size_t nbytes) { return std::make_shared<Buffer>(d, nbytes); }
  static std::shared_ptr<Buffer> wrap(void* data, size_t nbytes, std::shared_ptr<void> keep_alive) {
    return std::make_shared<Buffer>(data, nbytes, std::move(keep_alive));
  }

  /// The bytes as the host reads them: `data` for host memory; for device memory a host copy,
  /// made on first use (after the work queued on the device) and kept until the device bytes are
  /// written again (`device_written`).
  const void* host_bytes() const;
  /// Device memory only: the bytes were (or are about to be) overwritten on the device, so the host
  /// copy is stale (a donated buffer a kernel writes into).
  void device_written();
  /// Waits for the work queued on the buffer's device (a no-op for host memory).
  void synchronize() const;

 private:
  mutable std::mutex host_copy_mutex_;
  mutable std::shared_ptr<Buffer> host_copy_;
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
