#include "runtime/buffer.h"

#include <cstdlib>
#include <new>

namespace fluxion {

Buffer::Buffer(size_t n) : nbytes(n) {
  // Never a null pointer, even for empty arrays, so kernels need no special case.
  size_t rounded = (n + 63) / 64 * 64;
  data = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!data) throw std::bad_alloc();
}

Buffer::~Buffer() { std::free(data); }

}  // namespace fluxion
