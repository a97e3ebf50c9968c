// Fluxion from 8 threads at once (issue 35, item 3): eager ops, tracing, grad, vmap, jit compile
// and call, on shared and on separate functions and arrays. Results equal the single-threaded ones
// bit for bit (every path is deterministic), nothing deadlocks, and a signature 8 threads ask for
// together compiles once. scripts/sanitize.sh tsan runs these under ThreadSanitizer.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <atomic>
#include <functional>
#include <latch>
#include <thread>
#include <vector>

#include "compile/compile_cache.h"
#include "tests/test_helpers.h"

namespace fx = fluxion;

namespace {

constexpr int kThreads = 8;

// Runs body(t) on kThreads threads released together, so their calls overlap.
void together(const std::function<void(int)>& body) {
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      body(t);
    });
  for (std::thread& th : threads) th.join();
}

fx::Array input(int t) { return fx::array(test_helpers::ramp(24, -1.f - 0.1f * float(t), 2.f + 0.05f * float(t))); }

// The work each thread does: eager ops, a traced program, grad, vmap of grad; one flat result.
std::vector<float> work(const fx::Array& x) {
  auto f = [](const fx::Array& a) { return fx::sum(fx::tanh(a) * a + fx::sin(a * 2.f)); };
  std::vector<float> out;
  auto add = [&](const fx::Array& a) {
    for (float v : fx::astype(a, fx::float32).to_vector<float>()) out.push_back(v);
  };
  add(fx::exp(x) / (1.f + fx::abs(x)));
  add(fx::cumsum(fx::sort(x, 0), 0));
  add(fx::grad(f)(x));
  add(fx::vmap(fx::grad(f))(fx::reshape(x, {4, 6})));
  add(fx::eval(fx::make_ir(f)(x), {x})[0]);
  return out;
}

}  // namespace

TEST_CASE("threads: eager ops, tracing, grad and vmap from 8 threads equal the single-threaded results") {
  std::vector<std::vector<float>> want(kThreads), got(kThreads), shared_got(kThreads);
  const fx::Array shared = input(0);
  for (int t = 0; t < kThreads; ++t) want[size_t(t)] = work(input(t));
  together([&](int t) {
    got[size_t(t)] = work(input(t));      // separate arrays
    shared_got[size_t(t)] = work(shared);  // one array read by every thread
  });
  for (int t = 0; t < kThreads; ++t) {
    CAPTURE(t);
    CHECK(got[size_t(t)] == want[size_t(t)]);
    CHECK(shared_got[size_t(t)] == want[0]);
  }
}

TEST_CASE("threads: a signature 8 threads ask for together compiles once, and every call is right") {
  // A function of its own, so no earlier test compiled it.
  auto jf = fx::jit([](const fx::Array& a) { return fx::logsumexp(a * 1.25f + fx::cos(a), {0}) + fx::max(a); });
  const fx::Array x = input(3);
  const std::vector<float> want = fx::astype(jf(x), fx::float32).to_vector<float>();  // compiles it
  auto fresh = fx::jit([](const fx::Array& a) { return fx::tanh(a) * 3.5f - fx::floor(a); });
  const fx::runtime::CacheStats before = fx::runtime::cache_stats();
  std::vector<std::vector<float>> results(kThreads), fresh_results(kThreads);
  together([&](int t) {
    results[size_t(t)] = jf(x).to_vector<float>();               // compiled before: a hit
    fresh_results[size_t(t)] = fresh(x).to_vector<float>();      // compiled by whichever thread is first
  });
  const fx::runtime::CacheStats after = fx::runtime::cache_stats();
  CHECK(jf.compilations() == 1);
  CHECK(fresh.compilations() == 1);
  CHECK(after.compiles - before.compiles == 1);
  const std::vector<float> fresh_want = (fx::tanh(x) * 3.5f - fx::floor(x)).to_vector<float>();
  for (int t = 0; t < kThreads; ++t) {
    CHECK(results[size_t(t)] == want);
    REQUIRE(fresh_results[size_t(t)].size() == fresh_want.size());
    for (size_t i = 0; i < fresh_want.size(); ++i) CHECK(fresh_results[size_t(t)][i] == doctest::Approx(fresh_want[i]).epsilon(1e-6));
  }
}

TEST_CASE("threads: separate jitted functions of separate shapes compile and run at once") {
  std::vector<std::vector<float>> got(kThreads), want(kThreads);
  auto body = [](const fx::Array& a) { return fx::sum(fx::exp(-a * a), {1}) + fx::mean(a); };
  for (int t = 0; t < kThreads; ++t) want[size_t(t)] = body(fx::reshape(input(t), {2 + t % 2, -1})).to_vector<float>();
  together([&](int t) {
    auto jf = fx::jit(body);  // one callable per thread; shapes [2,12] and [3,8]: two signatures in all
    got[size_t(t)] = jf(fx::reshape(input(t), {2 + t % 2, -1})).to_vector<float>();
  });
  for (int t = 0; t < kThreads; ++t) {
    REQUIRE(got[size_t(t)].size() == want[size_t(t)].size());
    for (size_t i = 0; i < want[size_t(t)].size(); ++i) CHECK(got[size_t(t)][i] == doctest::Approx(want[size_t(t)][i]).epsilon(1e-5));
  }
}
