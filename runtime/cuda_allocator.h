// A caching device allocator with stream-ordered reuse (issue 12: no cuMemAlloc per call in steady
// state). Device memory is requested from a backend (cuMemAlloc/cuMemFree in cuda_driver.cpp; a
// fake in the tests) in size classes, and a released block goes to a free list instead of back to
// the driver.
//
// Why reuse without waiting is safe: every kernel and copy of a device is queued on that device's
// one stream. A block is released once the last work that uses it has been *queued*; whatever later
// allocation receives it queues its work after that, on the same stream, so the GPU runs the two in
// order. (A second stream per device would need an event per block; there is none.)
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>

namespace fluxion::runtime::cuda {

class CachingAllocator {
 public:
  using Allocate = std::function<uint64_t(size_t)>;  // throws DeviceError when out of memory
  using Free = std::function<void(uint64_t)>;
  CachingAllocator(Allocate allocate, Free free) : allocate_(std::move(allocate)), free_(std::move(free)) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// A block of at least `bytes` (the smallest cached one of its size class, else a new one). When
  /// the backend is out of memory, the cache is returned to it and the request tried once more.
  uint64_t allocate(size_t bytes);
  /// Back to the cache. DeviceError for a pointer this allocator did not hand out.
  void release(uint64_t p);
  /// Returns every cached block to the backend.
  void trim();

  /// The size class of a request: multiples of 512 bytes up to 1 MiB, of 2 MiB above (large
  /// tensors of slightly different sizes share blocks without wasting more than 2 MiB each).
  static size_t size_class(size_t bytes);
  size_t backend_allocations() const { return backend_allocations_; }
  size_t cached_bytes() const { return cached_bytes_; }
  size_t live_blocks() const { return live_.size(); }

 private:
  Allocate allocate_;
  Free free_;
  std::multimap<size_t, uint64_t> cached_;     // size -> block
  std::unordered_map<uint64_t, size_t> live_;  // block -> size
  size_t backend_allocations_ = 0, cached_bytes_ = 0;
};

}  // namespace fluxion::runtime::cuda
