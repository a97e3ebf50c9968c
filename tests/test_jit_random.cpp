// Random programs: a seeded generator composes elementwise, broadcasting, reduction and selection
// ops into programs of 5-50 eqns; the compiled program must agree with the reference interpreter.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <random>

namespace fx = fluxion;

namespace {

// Builds one random computation over four inputs a,b:[R,C], c:[C], d:[R,1]. Every op keeps values
// bounded (squashing after growth) so that float32 results stay comparable.
struct RandomProgram {
  uint64_t seed;
  int steps;

  fx::Array operator()(const fx::Array& a, const fx::Array& b, const fx::Array& c, const fx::Array& d) const {
    std::mt19937_64 rng(seed);
    auto pick = [&](size_t n) { return size_t(rng() % n); };
    std::vector<fx::Array> pool{a, b, c, d};
    for (int s = 0; s < steps; ++s) {
      const fx::Array& x = pool[pick(pool.size())];
      const fx::Array& y = pool[pick(pool.size())];
      fx::Array r;
      switch (pick(14)) {
        case 0: r = fx::sin(x); break;
        case 1: r = fx::cos(x) * 0.5f; break;
        case 2: r = fx::tanh(x * 2.f); break;
        case 3: r = fx::exp(-fx::abs(x)); break;
        case 4: r = fx::log(fx::abs(x) + 1.f); break;
        case 5: r = fx::sqrt(fx::abs(x)) - x; break;
        case 6: r = (x + y) * 0.5f; break;
        case 7: r = x - y; break;
        case 8: r = fx::tanh(x * y); break;
        case 9: r = x / (fx::abs(y) + 1.f); break;
        case 10: r = fx::maximum(x, y); break;
        case 11: r = fx::where(x > y, x, -y); break;
        case 12: r = x.ndim() == 2 ? fx::mean(x, {1}, true) : fx::minimum(x, y); break;
        default: r = x.ndim() == 2 ? fx::max(x, {0}, true) : fx::nn::sigmoid(x); break;
      }
      pool.push_back(r);
    }
    // Use the last values (and so most of the program) in one [R,C] result.
    return pool[pool.size() - 1] + pool[pool.size() - 2] * a;
  }
};

}  // namespace

TEST_CASE("jit random programs: jit == eval for a few hundred seeded programs") {
  std::mt19937_64 shapes(12345);
  int programs = 0;
  size_t eqns_min = 1000, eqns_max = 0;
  for (uint64_t seed = 1; seed <= 240; ++seed) {
    const int64_t R = 1 + int64_t(shapes() % 9), C = 1 + int64_t(shapes() % 70);
    RandomProgram f{seed, 2 + int(shapes() % 14)};
    auto host = [&](int64_t n, float lo, float hi, uint64_t k) {
      std::mt19937 g(uint32_t(seed * 7 + k));
      std::uniform_real_distribution<float> u(lo, hi);
      std::vector<float> v(static_cast<size_t>(n));
      for (float& x : v) x = u(g);
      return v;
    };
    fx::Array a = fx::array(host(R * C, -2, 2, 1), fx::Shape{R, C});
    fx::Array b = fx::array(host(R * C, -2, 2, 2), fx::Shape{R, C});
    fx::Array c = fx::array(host(C, -2, 2, 3), fx::Shape{C});
    fx::Array d = fx::array(host(R, -2, 2, 4), fx::Shape{R, 1});
    fx::Program p = fx::make_ir(f)(a, b, c, d);
    eqns_min = std::min(eqns_min, p.eqns.size());
    eqns_max = std::max(eqns_max, p.eqns.size());
    CAPTURE(seed);
    CAPTURE(p.str());
    fx::Array want = fx::eval(p, {a, b, c, d})[0];
    fx::Array got;
    try {
      got = fx::jit(f)(a, b, c, d);
    } catch (const std::exception& e) {
      FAIL_CHECK("jit raised: " << std::string(e.what()));
      continue;
    }
    ++programs;
    REQUIRE(got.aval() == want.aval());
    auto g = got.to_vector<float>(), w = want.to_vector<float>();
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < g.size(); ++i)
      if (!(std::fabs(g[i] - w[i]) <= 2e-5f + 1e-4f * std::fabs(w[i])) && bad++ == 0) first = i;
    CHECK_MESSAGE(bad == 0, bad << " mismatches, first at " << first << ": jit " << g[first] << " eval " << w[first]);
  }
  MESSAGE(programs << " random programs of " << eqns_min << " to " << eqns_max << " eqns");
  CHECK(programs == 240);
  CHECK(eqns_min >= 5);
  CHECK(eqns_max <= 50);
}
