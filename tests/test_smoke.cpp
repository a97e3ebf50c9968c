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

// The cache (1 GB unless FLUXION_ALLOCATOR_CACHE_MB says otherwise) holds three 300 MB blocks; a
// fourth freed one makes room by dropping the block freed longest ago, so the three asked for next
// are the three freed last. (Untouched, the blocks cost address space, not memory.)
TEST_CASE("runtime: a full allocator cache drops the block freed longest ago") {
  if (std::getenv("FLUXION_ALLOCATOR_CACHE_MB")) return;  // the arithmetic below assumes 1 GB
  fx::allocator_trim();
  constexpr size_t kBlock = size_t(300) << 20;
  std::vector<void*> freed;
  for (int i = 0; i < 4; ++i) {
    freed.push_back(fx::scratch_alloc(kBlock));
    REQUIRE(freed.back() != nullptr);
  }
  for (void* p : freed) fx::scratch_free(p);
  CHECK(fx::allocator_stats().cached_bytes <= size_t(1) << 30);
  const fx::AllocatorStats before = fx::allocator_stats();
  std::vector<void*> again;
  for (int i = 0; i < 3; ++i) again.push_back(fx::scratch_alloc(kBlock));
  CHECK(fx::allocator_stats().hits == before.hits + 3);
  std::sort(again.begin(), again.end());
  std::vector<void*> newest(freed.begin() + 1, freed.end());
  std::sort(newest.begin(), newest.end());
  CHECK(again == newest);
  for (void* p : again) fx::scratch_free(p);
  fx::allocator_trim();
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
