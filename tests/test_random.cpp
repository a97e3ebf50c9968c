// fx::random: the threefry2x32 primitive against Random123's known answers, the JAX bit layout
// against values JAX prints and against a host model of that layout, statistics, determinism, and
// tracing (make_ir of random code contains threefry2x32 and evaluates to the eager result).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <set>
#include <sstream>
#include <vector>


namespace fx = fluxion;

namespace {

// ---- host model: Random123's threefry2x32_20 and JAX's (non-partitionable) counter layout --------
std::array<uint32_t, 2> host_threefry(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1) {
  auto rotl = [](uint32_t v, int r) { return (v << r) | (v >> (32 - r)); };
  const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  x0 += ks[0];
  x1 += ks[1];
  for (int block = 0; block < 5; ++block) {  // 5 x 4 rounds, written as Random123 unrolls them
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = rotl(x1, rot[(block % 2) * 4 + r]) ^ x0;
    }
    x0 += ks[(block + 1) % 3];
    x1 += ks[(block + 2) % 3] + uint32_t(block + 1);
  }
  return {x0, x1};
}

// JAX's threefry_2x32(key, iota(count)).
std::vector<uint32_t> host_hash_iota(uint32_t k0, uint32_t k1, uint32_t count) {
  std::vector<uint32_t> c(count);
  std::iota(c.begin(), c.end(), 0u);
  if (count % 2) c.push_back(0);
  const size_t half = c.size() / 2;
  std::vector<uint32_t> out(c.size());
  for (size_t i = 0; i < half; ++i) {
    auto y = host_threefry(k0, k1, c[i], c[half + i]);
    out[i] = y[0];
    out[half + i] = y[1];
  }
  out.resize(count);
  return out;
}

std::vector<uint32_t> u32s(const fx::Array& a) { return a.to_vector<uint32_t>(); }

std::vector<fx::Array> threefry(uint32_t k0, uint32_t k1, const std::vector<uint32_t>& x0,
                                const std::vector<uint32_t>& x1) {
  return fx::bind(fx::Prim::threefry2x32,
                  {fx::scalar(k0), fx::scalar(k1), fx::array(x0), fx::array(x1)}, {}, {});
}

}  // namespace

TEST_CASE("threefry2x32: Random123 known-answer vectors (kat_vectors, threefry2x32_20)") {
  struct Kat {
    uint32_t k0, k1, x0, x1, y0, y1;
  };
  const Kat kats[] = {
      {0, 0, 0, 0, 0x6b200159u, 0x99ba4efeu},
      {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0x1cb996fcu, 0xbb002be7u},
      {0x13198a2eu, 0x03707344u, 0x243f6a88u, 0x85a308d3u, 0xc4923a9cu, 0x483df7a0u},
  };
  for (const Kat& k : kats) {
    auto y = threefry(k.k0, k.k1, {k.x0}, {k.x1});
    CHECK(u32s(y[0]) == std::vector<uint32_t>{k.y0});
    CHECK(u32s(y[1]) == std::vector<uint32_t>{k.y1});
    auto h = host_threefry(k.k0, k.k1, k.x0, k.x1);
    CHECK(h[0] == k.y0);
    CHECK(h[1] == k.y1);
  }
}

TEST_CASE("threefry2x32: per-element keys, shapes and errors") {
  // Keys of the counters' shape hash each counter under its own key.
  std::vector<uint32_t> k0 = {0, 0xffffffffu, 0x13198a2eu}, k1 = {0, 0xffffffffu, 0x03707344u};
  std::vector<uint32_t> x0 = {0, 0xffffffffu, 0x243f6a88u}, x1 = {0, 0xffffffffu, 0x85a308d3u};
  auto y = fx::bind(fx::Prim::threefry2x32, {fx::array(k0), fx::array(k1), fx::array(x0), fx::array(x1)}, {}, {});
  CHECK(u32s(y[0]) == std::vector<uint32_t>{0x6b200159u, 0x1cb996fcu, 0xc4923a9cu});
  CHECK(u32s(y[1]) == std::vector<uint32_t>{0x99ba4efeu, 0xbb002be7u, 0x483df7a0u});
  // 2-D counters with scalar keys agree with the host model elementwise.
  std::vector<uint32_t> a(6), b(6);
  std::iota(a.begin(), a.end(), 10u);
  std::iota(b.begin(), b.end(), 100u);
  auto z = fx::bind(fx::Prim::threefry2x32,
                    {fx::scalar(7u), fx::scalar(9u), fx::array(a, {2, 3}), fx::array(b, {2, 3})}, {}, {});
  CHECK(z[0].shape() == fx::Shape{2, 3});
  CHECK(z[1].dtype() == fx::uint32);
  for (size_t i = 0; i < 6; ++i) {
    CHECK(u32s(z[0])[i] == host_threefry(7, 9, a[i], b[i])[0]);
    CHECK(u32s(z[1])[i] == host_threefry(7, 9, a[i], b[i])[1]);
  }
  // The shape rule validates dtypes, counter shapes and key shapes.
  auto u = fx::array(std::vector<uint32_t>{1, 2});
  CHECK_THROWS_AS(fx::bind(fx::Prim::threefry2x32, {fx::scalar(1), fx::scalar(1u), u, u}, {}, {}), fx::TypeError);
  CHECK_THROWS_AS(fx::bind(fx::Prim::threefry2x32, {fx::scalar(1u), fx::scalar(1u), u, fx::array({1u, 2u, 3u})}, {}, {}),
                  fx::ShapeError);
  CHECK_THROWS_AS(fx::bind(fx::Prim::threefry2x32, {fx::array({1u, 2u, 3u}), fx::scalar(1u), u, u}, {}, {}),
                  fx::ShapeError);
  CHECK_THROWS_AS(fx::bind(fx::Prim::threefry2x32, {fx::scalar(1u), fx::scalar(1u), u}, {}, {}), fx::TypeError);
}

TEST_CASE("random: the host model of JAX's layout reproduces JAX's printed values") {
  // jax.random.split(jax.random.PRNGKey(0)) (jax_threefry_partitionable=False).
  auto s = host_hash_iota(0, 0, 4);
  CHECK(s == std::vector<uint32_t>{4146024105u, 967050713u, 2718843009u, 1272950319u});
  // jax.random.uniform(PRNGKey(0)): one word, its top 23 bits as the mantissa of [1, 2), minus 1.
  auto w = host_hash_iota(0, 0, 1);
  CHECK(float(w[0] >> 9) * 0x1p-23f == 0.41845703f);
}

TEST_CASE("random.key, split and fold_in follow JAX") {
  fx::Array key = fx::random::key(0);
  CHECK(key.dtype() == fx::uint32);
  CHECK(key.shape() == fx::Shape{2});
  CHECK(u32s(key) == std::vector<uint32_t>{0, 0});
  CHECK(u32s(fx::random::key(0x0000000500000007LL)) == std::vector<uint32_t>{5, 7});
  CHECK(u32s(fx::random::key(-1)) == std::vector<uint32_t>{0xffffffffu, 0xffffffffu});

  auto [k1, k2] = fx::random::split(key);
  CHECK(u32s(k1) == std::vector<uint32_t>{4146024105u, 967050713u});
  CHECK(u32s(k2) == std::vector<uint32_t>{2718843009u, 1272950319u});
  fx::Array keys = fx::random::split(key, 2);
  CHECK(keys.shape() == fx::Shape{2, 2});
  CHECK(u32s(keys) == std::vector<uint32_t>{4146024105u, 967050713u, 2718843009u, 1272950319u});
  // split(key, n) for odd and even n against the host model.
  for (uint32_t n : {1u, 3u, 4u, 7u}) {
    fx::Array ks = fx::random::split(fx::random::key(42), n);
    CHECK(ks.shape() == fx::Shape{int64_t(n), 2});
    CHECK(u32s(ks) == host_hash_iota(0, 42, 2 * n));
  }
  // fold_in(key, d) = threefry_2x32(key, [0, d]).
  fx::Array f = fx::random::fold_in(fx::random::key(3), 17);
  auto h = host_threefry(0, 3, 0, 17);
  CHECK(u32s(f) == std::vector<uint32_t>{h[0], h[1]});
  CHECK(u32s(fx::random::fold_in(key, fx::scalar(17))) != u32s(fx::random::fold_in(key, 18)));

  CHECK_THROWS_AS(fx::random::split(fx::array({1.f, 2.f})), fx::TypeError);
  CHECK_THROWS_AS(fx::random::split(fx::array(std::vector<uint32_t>{1, 2, 3})), fx::TypeError);
  CHECK_THROWS_AS(fx::random::split(key, -1), fx::ValueError);
  CHECK_THROWS_AS(fx::random::fold_in(key, 1.5), fx::TypeError);
}

TEST_CASE("random.bits and uniform follow JAX's layout") {
  fx::Array key = fx::random::key(0);
  fx::Array u0 = fx::random::uniform(key);
  CHECK(u0.shape() == fx::Shape{});
  CHECK(u0.dtype() == fx::float32);
  CHECK(u0.item<float>() == 0.41845703f);

  fx::Array k = fx::random::key(1234);
  for (int64_t n : {1, 5, 6}) {
    fx::Array b = fx::random::bits(k, {n});
    CHECK(b.dtype() == fx::uint32);
    CHECK(u32s(b) == host_hash_iota(0, 1234, uint32_t(n)));
  }
  fx::Array b23 = fx::random::bits(k, {2, 3});
  CHECK(b23.shape() == fx::Shape{2, 3});
  CHECK(u32s(b23) == host_hash_iota(0, 1234, 6));

  // float32: mantissa * 2^-23, scaled to [lo, hi), exactly.
  auto w = host_hash_iota(0, 1234, 7);
  auto u = fx::random::uniform(k, {7}, fx::float32, -2.f, 3.f).to_vector<float>();
  for (size_t i = 0; i < 7; ++i) CHECK(u[i] == std::max(-2.f, float(w[i] >> 9) * 0x1p-23f * 5.f + -2.f));
  // float64: 64-bit values from the (first half, second half) words, top 52 bits as the mantissa.
  auto w64 = host_hash_iota(0, 1234, 6);
  auto d = fx::random::uniform(k, {3}, fx::float64).to_vector<double>();
  for (size_t i = 0; i < 3; ++i) {
    uint64_t v = (uint64_t(w64[i]) << 32) | w64[3 + i];
    CHECK(d[i] == double(v >> 12) * 0x1p-52);
  }
  // float16: 16-bit pieces of each word, low half first; 10 mantissa bits.
  auto h = fx::random::uniform(k, {3}, fx::float16).to_vector<float>();
  auto w16 = host_hash_iota(0, 1234, 2);
  for (size_t i = 0; i < 3; ++i) {
    uint32_t piece = (w16[i / 2] >> (16 * (i % 2))) & 0xffff;
    CHECK(h[i] == float(piece >> 6) * 0x1p-10f);
  }
  // bfloat16: 8-bit pieces, 7 mantissa bits.
  auto bf = fx::random::uniform(k, {5}, fx::bfloat16).to_vector<float>();
  auto w8 = host_hash_iota(0, 1234, 2);
  for (size_t i = 0; i < 5; ++i) {
    uint32_t piece = (w8[i / 4] >> (8 * (i % 4))) & 0xff;
    CHECK(bf[i] == float(piece >> 1) * 0x1p-7f);
  }
  CHECK_THROWS_AS(fx::random::uniform(key, {3}, fx::int32), fx::TypeError);
  CHECK_THROWS_AS(fx::random::uniform(key, {3}, fx::float32, fx::zeros({4})), fx::ShapeError);
}

TEST_CASE("random: statistics of uniform, normal, bernoulli, randint") {
  const int64_t n = 20000;
  auto [ka, kb] = fx::random::split(fx::random::key(7));
  auto mean_var = [](const std::vector<double>& v) {
    double m = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()), s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return std::pair{m, s / double(v.size())};
  };
  {  // uniform on [-1, 3): mean 1, variance 16/12; 5 sigma bounds on the mean.
    auto u = fx::random::uniform(ka, {n}, fx::float32, -1.f, 3.f).to_vector<double>();
    CHECK(*std::min_element(u.begin(), u.end()) >= -1.0);
    CHECK(*std::max_element(u.begin(), u.end()) < 3.0);
    auto [m, v] = mean_var(u);
    CHECK(std::abs(m - 1.0) < 5 * std::sqrt(16.0 / 12 / double(n)));
    CHECK(std::abs(v - 16.0 / 12) < 0.05);
  }
  for (fx::DType t : {fx::float32, fx::float64, fx::float16}) {  // normal: mean 0, variance 1
    auto z = fx::random::normal(kb, {n}, t).to_vector<double>();
    auto [m, v] = mean_var(z);
    CHECK(std::abs(m) < 5 / std::sqrt(double(n)));
    CHECK(std::abs(v - 1) < 0.05);
    double tail = double(std::count_if(z.begin(), z.end(), [](double x) { return std::abs(x) > 1.96; })) / double(n);
    CHECK(std::abs(tail - 0.05) < 0.01);
    CHECK(std::all_of(z.begin(), z.end(), [](double x) { return std::isfinite(x); }));
  }
  {  // bernoulli rate
    auto b = fx::random::bernoulli(ka, 0.3, {n});
    CHECK(b.dtype() == fx::bool_);
    auto v = b.to_vector<bool>();
    double rate = double(std::count(v.begin(), v.end(), true)) / double(n);
    CHECK(std::abs(rate - 0.3) < 5 * std::sqrt(0.3 * 0.7 / double(n)));
    CHECK(fx::random::bernoulli(ka, fx::full({2, 3}, 0.5f)).shape() == fx::Shape{2, 3});
    CHECK(fx::random::bernoulli(ka).shape() == fx::Shape{});
    CHECK_THROWS_AS(fx::random::bernoulli(ka, 1, {3}), fx::TypeError);
  }
  {  // randint: range and roughly uniform counts
    auto r = fx::random::randint(kb, {n}, -3, 4);
    CHECK(r.dtype() == fx::int32);
    auto v = r.to_vector<int32_t>();
    for (int32_t x = -3; x < 4; ++x) {
      double c = double(std::count(v.begin(), v.end(), x)) / double(n);
      CHECK(std::abs(c - 1.0 / 7) < 0.015);
    }
    CHECK(*std::min_element(v.begin(), v.end()) == -3);
    CHECK(*std::max_element(v.begin(), v.end()) == 3);
    auto u8 = fx::random::randint(ka, {1000}, 0, 300, fx::uint8).to_vector<int32_t>();  // maxval clipped: [0, 256)
    CHECK(*std::max_element(u8.begin(), u8.end()) > 200);
    auto e = fx::random::randint(ka, {5}, 4, 4).to_vector<int32_t>();  // empty range gives minval
    CHECK(std::all_of(e.begin(), e.end(), [](int32_t x) { return x == 4; }));
    // array bounds broadcast against the shape
    auto rows = fx::random::randint(ka, {2, 3}, fx::array({0, 10, 100}), fx::array({1, 11, 101})).to_vector<int32_t>();
    CHECK(rows == std::vector<int32_t>{0, 10, 100, 0, 10, 100});
    CHECK_THROWS_AS(fx::random::randint(ka, {3}, 0, 5, fx::float32), fx::TypeError);
    CHECK_THROWS_AS(fx::random::randint(ka, {3}, 0.5, 5), fx::TypeError);
  }
}

TEST_CASE("random.erf_inv inverts erf") {
  std::vector<double> xs;
  for (int i = -99; i <= 99; ++i) xs.push_back(i / 100.0);
  xs.push_back(0.999999);
  xs.push_back(-1e-6);
  auto y64 = fx::random::erf_inv(fx::array(xs)).to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) CHECK(std::erf(y64[i]) == doctest::Approx(xs[i]).epsilon(1e-14));
  // float32 against float64 on the same (rounded) inputs: the polynomial's error away from ±1; next
  // to them the rounding of x*x inside log1p(-x*x) dominates, as in XLA.
  std::vector<float> xf(xs.begin(), xs.end());
  std::vector<double> xr(xf.begin(), xf.end());
  auto y32 = fx::random::erf_inv(fx::array(xf)).to_vector<float>();
  auto yr = fx::random::erf_inv(fx::array(xr)).to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i + 2 < xs.size(); ++i) worst = std::max(worst, std::abs(y32[i] - yr[i]) / std::max(1e-30, std::abs(yr[i])));
  MESSAGE("erf_inv float32 worst relative error on [-0.99, 0.99]: " << worst);
  CHECK(worst < 2e-6);
  CHECK(double(y32[xs.size() - 2]) == doctest::Approx(yr[xs.size() - 2]).epsilon(2e-3));
  CHECK(double(y32[xs.size() - 1]) == doctest::Approx(yr[xs.size() - 1]).epsilon(1e-6));
  auto edges = fx::random::erf_inv(fx::array({-1.f, 1.f, 0.f})).to_vector<float>();
  CHECK(edges[0] == -INFINITY);
  CHECK(edges[1] == INFINITY);
  CHECK(edges[2] == 0.f);
  CHECK_THROWS_AS(fx::random::erf_inv(fx::array({1, 2})), fx::TypeError);
}

TEST_CASE("random: determinism, and different keys give different numbers") {
  fx::Array k = fx::random::key(11);
  CHECK(fx::random::normal(k, {64}).to_vector<float>() == fx::random::normal(fx::random::key(11), {64}).to_vector<float>());
  auto [a, b] = fx::random::split(k);
  CHECK(u32s(fx::random::bits(a, {64})) != u32s(fx::random::bits(b, {64})));
  CHECK(u32s(fx::random::bits(k, {64})) != u32s(fx::random::bits(fx::random::key(12), {64})));
  CHECK(u32s(fx::random::fold_in(k, 0)) != u32s(fx::random::fold_in(k, 1)));
  // Consecutive words are not trivially related: all 64 differ.
  auto w = u32s(fx::random::bits(k, {64}));
  CHECK(std::set<uint32_t>(w.begin(), w.end()).size() == 64);
}

TEST_CASE("random.permutation is a permutation") {
  for (int64_t n : {0, 1, 2, 10, 257}) {
    fx::Array p = fx::random::permutation(fx::random::key(5), n);
    CHECK(p.dtype() == fx::int32);
    CHECK(p.shape() == fx::Shape{n});
    auto v = p.to_vector<int32_t>();
    std::vector<int32_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int32_t> expect(static_cast<size_t>(n));
    std::iota(expect.begin(), expect.end(), 0);
    CHECK(sorted == expect);
  }
  // One round for n = 10: the order is that of (bits of the second split key, index), stably.
  auto [next, sub] = fx::random::split(fx::random::key(5));
  auto keys = u32s(fx::random::bits(sub, {10}));
  std::vector<int32_t> expect(10);
  std::iota(expect.begin(), expect.end(), 0);
  std::stable_sort(expect.begin(), expect.end(), [&](int32_t i, int32_t j) { return keys[size_t(i)] < keys[size_t(j)]; });
  CHECK(fx::random::permutation(fx::random::key(5), 10).to_vector<int32_t>() == expect);
  CHECK(fx::random::permutation(fx::random::key(5), 257).to_vector<int32_t>() !=
        fx::random::permutation(fx::random::key(6), 257).to_vector<int32_t>());
}

TEST_CASE("random: everything traces; make_ir then eval equals eager") {
  auto f = [](const fx::Array& key) {
    auto [k1, k2] = fx::random::split(key);
    fx::Array k3 = fx::random::fold_in(k2, 3);
    return std::tuple{fx::random::normal(k1, {3, 4}), fx::random::uniform(k2, {5}, fx::float64, -1.0, 1.0),
                      fx::random::bernoulli(k3, 0.25, {6}), fx::random::randint(k3, {7}, 0, 10),
                      fx::random::bits(k1, {3}), fx::random::split(k3, 3), fx::random::uniform(k1, {3}, fx::float16)};
  };
  fx::Array key = fx::random::key(2024);
  fx::Program p = fx::make_ir(f)(key);
  std::ostringstream os;
  os << p;
  CHECK(os.str().find("threefry2x32") != std::string::npos);
  CHECK(p.invars.size() == 1);
  auto traced = fx::eval(p, {key});
  auto eager = fx::tree::leaves(f(key));
  REQUIRE(traced.size() == eager.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    CHECK(traced[i].aval() == eager[i].aval());
    CHECK(fx::astype(traced[i], fx::float64).to_vector<double>() == fx::astype(eager[i], fx::float64).to_vector<double>());
  }
  // A traced key (the program's input), not a baked constant: another key gives other numbers.
  auto other = fx::eval(p, {fx::random::key(1)});
  CHECK(other[4].to_vector<uint32_t>() != eager[4].to_vector<uint32_t>());
  auto shapes = fx::eval_shape([](const fx::Array& k) { return fx::random::normal(k, {2, 5}, fx::float64); })(key);
  CHECK(shapes == fx::AbstractArray{fx::Shape{2, 5}, fx::float64, false});
}
