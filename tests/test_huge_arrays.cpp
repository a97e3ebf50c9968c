// Arrays of more than 2^31 elements (issue 35, item 5): uint8 and bool arrays of 2^31 + 7 elements
// through eager ops and jit -- reductions, a static slice, a gather and a scatter at an index past
// 2^31 -- give the right answer, so no index or count on the way is 32-bit. Each case holds a few
// GB at a time; scripts/sanitize.sh leaves them out (the sanitizers' shadow memory multiplies that).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cstdint>
#include <vector>

namespace fx = fluxion;

namespace {
constexpr int64_t kHuge = (int64_t(1) << 31) + 7;  // past int32 and uint31 indexing
constexpr int64_t kFar = kHuge - 3;                 // an index past 2^31
}  // namespace

TEST_CASE("huge arrays: reductions over 2^31 + 7 uint8 and bool elements, eager and jit") {
  fx::Array x = fx::ones({kHuge}, fx::uint8);
  auto sum = [](const fx::Array& a) { return fx::sum(a); };  // uint8 sums to uint32, as in JAX
  CHECK(sum(x).item<uint32_t>() == uint32_t(kHuge));
  CHECK(fx::jit(sum)(x).item<uint32_t>() == uint32_t(kHuge));
  x = x.at(kFar).set(9);
  auto max = [](const fx::Array& a) { return fx::max(a); };
  CHECK(max(x).item<uint8_t>() == 9);
  CHECK(fx::jit(max)(x).item<uint8_t>() == 9);
  x = fx::Array();
  fx::Array b = fx::zeros({kHuge}, fx::bool_).at(kFar).set(true);
  auto any = [](const fx::Array& a) { return fx::any(a); };
  CHECK(any(b).item<bool>());
  CHECK(fx::jit(any)(b).item<bool>());
  auto count = [](const fx::Array& a) { return fx::sum(fx::astype(a, fx::int32)); };
  CHECK(count(b).item<int32_t>() == 1);
  CHECK(fx::jit(count)(b).item<int32_t>() == 1);
}

TEST_CASE("huge arrays: slice, gather and scatter at an index past 2^31, eager and jit") {
  const fx::Array x = fx::zeros({kHuge}, fx::uint8).at(kFar).set(42);
  auto tail = [](const fx::Array& a) { return a[fx::Slice(kFar - 1, kFar + 2)]; };
  CHECK(tail(x).to_vector<uint8_t>() == std::vector<uint8_t>{0, 42, 0});
  CHECK(fx::jit(tail)(x).to_vector<uint8_t>() == std::vector<uint8_t>{0, 42, 0});
  const fx::Array where = fx::array(std::vector<int64_t>{kFar, 5, kFar});
  auto take = [](const fx::Array& a, const fx::Array& i) { return fx::take(a, i, 0); };
  CHECK(take(x, where).to_vector<uint8_t>() == std::vector<uint8_t>{42, 0, 42});
  CHECK(fx::jit(take)(x, where).to_vector<uint8_t>() == std::vector<uint8_t>{42, 0, 42});
  auto bump = [](const fx::Array& a, const fx::Array& i) { return a.at(i).add(1); };
  const fx::Array y = fx::jit(bump)(x, fx::array(std::vector<int64_t>{kFar + 1}));
  CHECK(tail(y).to_vector<uint8_t>() == std::vector<uint8_t>{0, 42, 1});
  CHECK(tail(bump(x, fx::array(std::vector<int64_t>{kFar + 1}))).to_vector<uint8_t>() == std::vector<uint8_t>{0, 42, 1});
}
