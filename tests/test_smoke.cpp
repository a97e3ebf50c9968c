#include <doctest/doctest.h>
#include <fluxion.h>

#include "memory/buffer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

namespace fx = fluxion;

TEST_CASE("eager elementwise and tracing") {
  fx::Array a = fx::array({1.f, 2.f, 3.f});
  CHECK(a.shape() == fx::Shape{3});
  CHECK(a.dtype() == fx::float32);
  fx::Array y = a * 2.f + fx::sin(a);
  auto v = y.to_vector<float>();
  CHECK(v[1] == doctest::Approx(4 + std::sin(2.f)));
  auto f = [](const fx::Array& x, const fx::Array& z) { return fx::sin(x * z) + 1.f; };
  fx::Program p = fx::make_ir(f)(a, a);
  std::ostringstream os;
  os << p;
  MESSAGE(os.str());
  CHECK(p.eqns.size() == 3);
  auto r = fx::eval(p, {a, a});
  CHECK(r[0].to_vector<float>()[2] == doctest::Approx(std::sin(9.f) + 1));
}

TEST_CASE("runtime: freed buffers are reused by size class, 64-byte aligned") {
  fx::AllocatorStats before = fx::allocator_stats();
  for (int i = 0; i < 3; ++i) {
    fx::Array a = fx::ones({1000});
    CHECK(reinterpret_cast<uintptr_t>(a.data()) % 64 == 0);
  }
  fx::AllocatorStats after = fx::allocator_stats();
  CHECK(after.hits >= before.hits + 2);  // the second and third arrays reuse the first's block
}

// After allocator_trim the cache's bound is its 1 GiB floor (nothing large is live). Two 500 MB
// blocks freed fill it; two blocks of the next size class, freed after them, each make room by
// dropping the block freed longest ago, so the cache ends holding the two freed last. (Untouched,
// the blocks cost address space, not memory.)
TEST_CASE("runtime: a full allocator cache drops the block freed longest ago") {
  if (std::getenv("FLUXION_ALLOCATOR_CACHE_MB")) return;  // the arithmetic below assumes the 1 GiB floor
  fx::allocator_trim();
  REQUIRE(fx::allocator_stats().limit_bytes == size_t(1) << 30);
  constexpr size_t kOld = size_t(500) << 20, kNew = kOld + 4096;
  void* old_blocks[] = {fx::scratch_alloc(kOld), fx::scratch_alloc(kOld)};
  for (void* p : old_blocks) fx::scratch_free(p);
  void* new_blocks[] = {fx::scratch_alloc(kNew), fx::scratch_alloc(kNew)};
  for (void* p : new_blocks) fx::scratch_free(p);
  CHECK(fx::allocator_stats().limit_bytes == size_t(1) << 30);  // 1000 MB were live at most
  CHECK(fx::allocator_stats().cached_bytes <= size_t(1) << 30);
  const fx::AllocatorStats before = fx::allocator_stats();
  void* again[] = {fx::scratch_alloc(kNew), fx::scratch_alloc(kNew), fx::scratch_alloc(kOld)};
  const fx::AllocatorStats after = fx::allocator_stats();
  CHECK(after.hits == before.hits + 2);      // the two freed last
  CHECK(after.misses == before.misses + 1);  // the two freed first were dropped
  for (void* p : again) fx::scratch_free(p);
  fx::allocator_trim();
}

// A working set larger than 1 GiB, freed and asked for again (a training step), comes back from
// the cache: its bound follows the most ever live at once.
TEST_CASE("runtime: the allocator cache grows to the peak of live memory") {
  if (std::getenv("FLUXION_ALLOCATOR_CACHE_MB")) return;  // a fixed bound
  fx::allocator_trim();
  constexpr size_t kBlock = size_t(500) << 20;
  for (int step = 0; step < 2; ++step) {
    const fx::AllocatorStats before = fx::allocator_stats();
    std::vector<void*> working_set;
    for (int i = 0; i < 3; ++i) working_set.push_back(fx::scratch_alloc(kBlock));
    CHECK(fx::allocator_stats().live_bytes >= before.live_bytes + 3 * kBlock);
    for (void* p : working_set) fx::scratch_free(p);
    const fx::AllocatorStats after = fx::allocator_stats();
    CHECK(after.peak_live_bytes >= 3 * kBlock);
    CHECK(after.limit_bytes >= 3 * kBlock);
    CHECK(after.cached_bytes >= 3 * kBlock);  // all of it kept
    if (step == 1) CHECK(after.hits == before.hits + 3);  // the second step faults nothing in
  }
  fx::allocator_trim();
  CHECK(fx::allocator_stats().limit_bytes == size_t(1) << 30);
}

TEST_CASE("runtime: kernel scratch memory is aligned as asked, writable, and reused") {
  for (size_t align : {size_t(1), size_t(16), size_t(64), size_t(128), size_t(4096)}) {
    for (size_t n : {size_t(0), size_t(1), size_t(100), size_t(1) << 20}) {
      CAPTURE(align);
      CAPTURE(n);
      void* p = fx::scratch_alloc(n, align);
      REQUIRE(p != nullptr);
      CHECK(reinterpret_cast<uintptr_t>(p) % std::max<size_t>(align, 64) == 0);
      std::memset(p, 0xab, n);
      fx::scratch_free(p);
    }
  }
  CHECK(fx::scratch_alloc(64, 48) == nullptr);  // not a power of two
  fx::scratch_free(nullptr);
  fx::AllocatorStats before = fx::allocator_stats();
  for (int i = 0; i < 3; ++i) fx::scratch_free(fx::scratch_alloc(5000));
  CHECK(fx::allocator_stats().hits >= before.hits + 2);
}
