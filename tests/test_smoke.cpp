#include <doctest/doctest.h>
#include <fluxion.h>

#include "memory/buffer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

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
