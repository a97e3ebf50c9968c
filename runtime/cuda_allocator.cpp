#include "runtime/cuda_allocator.h"

#include <string>

#include "ir/error.h"

namespace fluxion::runtime::cuda {

size_t CachingAllocator::size_class(size_t bytes) {
  constexpr size_t small = 512, large = size_t(2) << 20, threshold = size_t(1) << 20;
  if (bytes == 0) bytes = 1;
  const size_t unit = bytes <= threshold ? small : large;
  return (bytes + unit - 1) / unit * unit;
}

CachingAllocator::~CachingAllocator() { trim(); }

uint64_t CachingAllocator::allocate(size_t bytes) {
  const size_t size = size_class(bytes);
  // Exactly the size class: a bigger cached block would be split-free waste for small requests,
  // and large ones already share classes 2 MiB wide.
  if (auto it = cached_.find(size); it != cached_.end()) {
    const uint64_t p = it->second;
    cached_.erase(it);
    cached_bytes_ -= size;
    live_.emplace(p, size);
    return p;
  }
  uint64_t p;
  try {
    p = allocate_(size);
  } catch (const DeviceError&) {
    if (cached_.empty()) throw;
    trim();  // out of memory with blocks cached: give them back and try once more
    p = allocate_(size);
  }
  ++backend_allocations_;
  live_.emplace(p, size);
  return p;
}

void CachingAllocator::release(uint64_t p) {
  auto it = live_.find(p);
  if (it == live_.end())
    throw DeviceError("DeviceError: the CUDA allocator was given back the address " + std::to_string(p) +
                      ", which it did not hand out (or which was given back already)");
  cached_.emplace(it->second, p);
  cached_bytes_ += it->second;
  live_.erase(it);
}

void CachingAllocator::trim() {
  for (const auto& [size, p] : cached_) free_(p);
  cached_.clear();
  cached_bytes_ = 0;
}

}  // namespace fluxion::runtime::cuda
