// Scratch memory of the calling thread that lives across calls (declare it thread_local): the
// runtime's convolution, product and pooling kernels need buffers of megabytes per call, and a
// fresh allocation would zero them and fault their pages in every time.
#pragma once
#include <cstdint>
#include <memory>

namespace fluxion::runtime {

/// Grows on demand and never shrinks; its contents are undefined (no zero fill).
template <class T>
struct Scratch {
  std::unique_ptr<T[]> data;
  int64_t size = 0;
  T* get(int64_t n) {
    if (n > size) data.reset(new T[size_t(n)]), size = n;  // default-initialised: no zero fill
    return data.get();
  }
};

}  // namespace fluxion::runtime
