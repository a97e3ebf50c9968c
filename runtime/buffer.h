// Host memory owned by arrays: 64-byte aligned, so kernels (eager and compiled) can use aligned
// vector loads.
#pragma once
#include <cstddef>
#include <memory>

namespace fluxion {

struct Buffer {
  void* data = nullptr;
  size_t nbytes = 0;

  explicit Buffer(size_t n);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  static std::shared_ptr<Buffer> allocate(size_t nbytes) { return std::make_shared<Buffer>(nbytes); }
};

}  // namespace fluxion
