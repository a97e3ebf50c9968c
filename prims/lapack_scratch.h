// Workspaces for the LAPACK kernels (prims/linalg_lapack.cpp, prims/linalg_eigh_lapack.cpp).
#pragma once
#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>

#include "memory/buffer.h"

namespace fluxion::linalg_rules {

// A workspace LAPACK writes before it reads, from Fluxion's caching allocator (memory/buffer.h): not
// zeroed (syevd's is 2n^2 + 6n elements, 4 MiB at 512, which std::vector would clear on every call)
// and, when the same sizes come again, without malloc's page faults.
struct ScratchFree {
  void operator()(void* p) const { scratch_free(p); }
};
template <class T>
using Scratch = std::unique_ptr<T[], ScratchFree>;
template <class T>
Scratch<T> workspace(size_t elements) {
  void* p = scratch_alloc(std::max<size_t>(elements, 1) * sizeof(T));
  if (!p) throw std::bad_alloc();
  return Scratch<T>(static_cast<T*>(p));
}

}  // namespace fluxion::linalg_rules
