// Fluxion from 8 threads at once (issue 35, item 3): eager ops, tracing, grad, vmap, jit compile
// and call, on shared and on separate functions and arrays. Results equal the single-threaded ones
// bit for bit (every path is deterministic), nothing deadlocks, and a signature 8 threads ask for
// together compiles once (per shape, for jit, jit of grad and jit of vmap). Also: random keys, data
// loaders with their prefetching threads, checkpoints saved to one path and to separate ones, and
// pmap, each from 8 threads. A deadlock ends the run with a message rather than hanging it.
// scripts/sanitize.sh tsan runs these under ThreadSanitizer.
#include <doctest/doctest.h>
#include <fluxion.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "compile/compile_cache.h"
#include "tests/test_helpers.h"

namespace fx = fluxion;
namespace fs = std::filesystem;

namespace {

constexpr int kThreads = 8;

// Runs body(t) on kThreads threads released together, so their calls overlap. A deadlock is a
// failure, not a hang: threads still running after kDeadlock end the process with a message
// (scripts/test.sh counts a crash as a failure).
constexpr auto kDeadlock = std::chrono::seconds(300);
void together(const std::function<void(int)>& body) {
  std::latch start(kThreads);
  std::mutex m;
  std::condition_variable cv;
  int finished = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      body(t);
      std::lock_guard lock(m);
      ++finished;
      cv.notify_all();
    });
  {
    std::unique_lock lock(m);
    if (!cv.wait_for(lock, kDeadlock, [&] { return finished == kThreads; })) {
      std::fprintf(stderr, "threads: %d of %d threads still running after %lld s: a deadlock\n", kThreads - finished,
                   kThreads, static_cast<long long>(kDeadlock.count()));
      std::abort();
    }
  }
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
  add(fx::random::normal(fx::random::fold_in(fx::random::key(7), int64_t(x.size())), {5}));
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

TEST_CASE("threads: one jitted function, its grad and vmap, called with 4 shapes from 8 threads, compile once per shape") {
  auto body = [](const fx::Array& a) { return fx::sum(fx::sin(a) * a) + fx::max(a); };
  auto jf = fx::jit(body);
  auto jg = fx::jit(fx::grad(body));
  auto jv = fx::jit(fx::vmap(fx::grad(body)));
  auto shaped = [](int t) { return fx::reshape(input(t), {t % 4 + 1 == 3 ? 4 : t % 4 + 1, -1}); };  // [1,24] [2,12] [4,6] [4,6]...
  std::vector<std::vector<float>> want(kThreads), got(kThreads);
  auto run = [&](int t, auto& f, auto& g, auto& v) {
    std::vector<float> out = f(shaped(t)).template to_vector<float>();
    for (float x : g(shaped(t)).template to_vector<float>()) out.push_back(x);
    for (float x : v(shaped(t)).template to_vector<float>()) out.push_back(x);
    return out;
  };
  auto eager_grad = fx::grad(body);
  auto eager_vmap = fx::vmap(fx::grad(body));
  for (int t = 0; t < kThreads; ++t) want[size_t(t)] = run(t, body, eager_grad, eager_vmap);
  for (int round = 0; round < 3; ++round) {  // the first round compiles, racing; the others hit
    together([&](int t) { got[size_t(t)] = run(t, jf, jg, jv); });
    for (int t = 0; t < kThreads; ++t) {
      CAPTURE(t);
      REQUIRE(got[size_t(t)].size() == want[size_t(t)].size());
      for (size_t i = 0; i < want[size_t(t)].size(); ++i)
        CHECK(got[size_t(t)][i] == doctest::Approx(want[size_t(t)][i]).epsilon(1e-5));
    }
  }
  // Three distinct shapes ([1,24], [2,12], [4,6]) for each of the three functions.
  CHECK(jf.compilations() == 3);
  CHECK(jg.compilations() == 3);
  CHECK(jv.compilations() == 3);
}

TEST_CASE("threads: 8 data loaders with prefetching threads over one dataset give the single-threaded batches") {
  const fx::Array rows = fx::reshape(fx::arange(float(60 * 3)), {60, 3});
  const fx::data::Dataset ds = fx::data::from_arrays({{"x", rows}, {"y", fx::arange(60)}});
  auto epochs = [&](int t) {
    auto l = fx::data::loader(ds, 7, fx::data::shuffle(fx::random::key(t)), fx::data::prefetch(2),
                              fx::data::map([](fx::data::Batch b) {
                                b["x"] = b["x"] * 2.f;
                                return b;
                              }));
    std::vector<float> out;
    for (int e = 0; e < 2; ++e)
      for (const fx::data::Batch& b : l) {
        for (float v : b.at("x").to_vector<float>()) out.push_back(v);
        for (int32_t v : b.at("y").to_vector<int32_t>()) out.push_back(float(v));
      }
    return out;
  };
  std::vector<std::vector<float>> want(kThreads), got(kThreads);
  for (int t = 0; t < kThreads; ++t) want[size_t(t)] = epochs(t);
  together([&](int t) { got[size_t(t)] = epochs(t); });
  for (int t = 0; t < kThreads; ++t) CHECK(got[size_t(t)] == want[size_t(t)]);
  CHECK(want[0] != want[1]);  // the keys differ, so do the orders: each thread's result is its own
}

TEST_CASE("threads: 8 threads saving to one checkpoint path at once leave one whole version, and each loads its own file") {
  const fs::path dir = fs::temp_directory_path() / ("fluxion_threads_ckpt_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string shared = (dir / "shared.safetensors").string();
  auto version = [](int t) { return std::map<std::string, fx::Array>{{"w", fx::full({4096}, float(t))}, {"t", fx::full({}, t)}}; };
  std::vector<float> own(kThreads, -1.f);
  together([&](int t) {
    fx::save(shared, version(t));
    const std::string mine = (dir / ("own" + std::to_string(t) + ".npz")).string();
    fx::save(mine, version(t));
    own[size_t(t)] = fx::load<std::map<std::string, fx::Array>>(mine).at("w").to_vector<float>()[4095];
  });
  const auto got = fx::load<std::map<std::string, fx::Array>>(shared);
  const int32_t t = got.at("t").item<int32_t>();
  CHECK((t >= 0 && t < kThreads));
  const std::vector<float> w = got.at("w").to_vector<float>();
  CHECK(std::all_of(w.begin(), w.end(), [&](float v) { return v == float(t); }));  // one writer's whole file
  for (int k = 0; k < kThreads; ++k) CHECK(own[size_t(k)] == float(k));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  CHECK(files == size_t(kThreads) + 1);  // no temporary file left behind
  fs::remove_all(dir);
}

TEST_CASE("pmap: called from 8 threads at once, every call equals the single-threaded one") {
  const int64_t n = int64_t(fx::devices("cpu").size());
  auto step = fx::pmap([](const fx::Array& x) { return fx::psum(fx::tanh(x) * 2.f, "i"); }, "i");
  auto arg = [&](int t) { return fx::reshape(fx::arange(float(3 * n)) * (0.1f * float(t + 1)), {n, 3}); };
  std::vector<std::vector<float>> want(kThreads), got(kThreads);
  for (int t = 0; t < kThreads; ++t) want[size_t(t)] = step(arg(t)).to_vector<float>();
  together([&](int t) { got[size_t(t)] = step(arg(t)).to_vector<float>(); });
  for (int t = 0; t < kThreads; ++t) CHECK(got[size_t(t)] == want[size_t(t)]);
  CHECK(step.compilations() == 1);
}
