// The launch of pmap's shards (runtime/device_workers.h): `together` runs every shard at once on a
// thread of its own (shards that rendezvous would otherwise never meet), `any_thread` runs every
// shard exactly once on at most `cores` threads; each shard sees its device as the default; a
// shard's exception reaches the caller; a launch from inside a shard runs there. Device lists of
// 2 to 9 are made up here (the pool does not care which devices they are), so the cases hold with
// any FLUXION_CPU_DEVICES.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sched.h>
#endif

#include "compile/target.h"
#include "ir/settings.h"
#include "runtime/device_workers.h"

namespace fx = fluxion;
namespace rt = fluxion::runtime;

namespace {
std::vector<fx::Device> made_up(int n) {
  std::vector<fx::Device> d;
  for (int i = 0; i < n; ++i) d.push_back(fx::Device{fx::Platform::cpu, 10 + i});
  return d;
}
}  // namespace

TEST_CASE("devices: a together launch runs every shard at once, each on its own thread") {
  for (int n : {2, 5, 9}) {
    const std::vector<fx::Device> devs = made_up(n);
    for (int round = 0; round < 20; ++round) {
      std::atomic<int> arrived{0};
      std::mutex mu;
      std::set<std::thread::id> threads;
      std::vector<int> device_seen(size_t(n), -1);
      auto shard = [&](size_t k) {
        {
          std::lock_guard<std::mutex> lock(mu);
          threads.insert(std::this_thread::get_id());
        }
        device_seen[k] = fx::default_device().id;
        // A rendezvous: every shard waits here for all the others (with a way out, so that a
        // launch that runs them one after another fails instead of hanging).
        arrived.fetch_add(1);
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (arrived.load() < n && std::chrono::steady_clock::now() < until) std::this_thread::yield();
      };
      rt::run_on_devices(devs, rt::ShardTask(shard), rt::Schedule::together);
      REQUIRE(arrived.load() == n);
      CHECK(threads.size() == size_t(n));
      CHECK(threads.count(std::this_thread::get_id()) == 1);  // shard 0 ran on the caller
      for (int k = 0; k < n; ++k) CHECK(device_seen[size_t(k)] == 10 + k);
    }
  }
}

#ifdef __linux__
// libomp pins the thread that opens an OpenMP region (OMP_PROC_BIND); the workers that thread
// starts must not inherit the pin, or every device would share its one core. 16 devices: more
// workers than the other cases start, so some are started here, by a pinned caller. (An earlier
// test's OpenMP region may have pinned this thread already: the set to compare with is the one
// the process had when libfluxion loaded.)
TEST_CASE("devices: workers run on every CPU of the process even when the caller is pinned") {
  cpu_set_t all, one;
  REQUIRE(sched_getaffinity(0, sizeof all, &all) == 0);
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &one);
      break;
    }
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  const int n = 16;
  std::vector<int> cpus(size_t(n), 0);
  rt::run_on_devices(made_up(n), rt::ShardTask([&](size_t k) {
                       cpu_set_t mine;
                       if (sched_getaffinity(0, sizeof mine, &mine) == 0) cpus[k] = CPU_COUNT(&mine);
                     }),
                     rt::Schedule::together);
  sched_setaffinity(0, sizeof all, &all);
  CHECK(cpus[0] == 1);  // shard 0 ran on the (pinned) caller
  REQUIRE(rt::process_cpu_count() >= CPU_COUNT(&all));
  for (int k = 1; k < n; ++k) CHECK(cpus[size_t(k)] == rt::process_cpu_count());
}
#endif

TEST_CASE("devices: an any_thread launch runs every shard once on at most cores threads") {
  const int cores = fx::thread_setting();
  for (int n : {1, 2, 8, 9}) {
    const std::vector<fx::Device> devs = made_up(n);
    for (int round = 0; round < 200; ++round) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
      std::vector<int> device_seen(size_t(n), -1);
      std::mutex mu;
      std::set<std::thread::id> threads;
      auto shard = [&](size_t k) {
        runs[k].fetch_add(1);
        device_seen[k] = fx::default_device().id;
        std::lock_guard<std::mutex> lock(mu);
        threads.insert(std::this_thread::get_id());
      };
      rt::run_on_devices(devs, rt::ShardTask(shard), rt::Schedule::any_thread);
      for (int k = 0; k < n; ++k) {
        CHECK(runs[size_t(k)].load() == 1);
        CHECK(device_seen[size_t(k)] == 10 + k);
      }
      CHECK(int(threads.size()) <= std::min(n, cores));
    }
  }
  // The caller's default device is its own again afterwards.
  CHECK(fx::default_device().id != 10);
}

TEST_CASE("devices: a shard's exception reaches the caller, and the pool keeps working") {
  const std::vector<fx::Device> devs = made_up(4);
  for (rt::Schedule s : {rt::Schedule::together, rt::Schedule::any_thread}) {
    std::atomic<int> ran{0};
    auto failing = [&](size_t k) {
      ran.fetch_add(1);
      if (k == 2) throw std::runtime_error("shard 2 failed");
    };
    CHECK_THROWS_WITH_AS(rt::run_on_devices(devs, rt::ShardTask(failing), s), "shard 2 failed", std::runtime_error);
    CHECK(ran.load() == 4);  // the others still ran (and the launch waited for them)
    std::atomic<int> again{0};
    auto fine = [&](size_t) { again.fetch_add(1); };
    rt::run_on_devices(devs, rt::ShardTask(fine), s);
    CHECK(again.load() == 4);
  }
}

TEST_CASE("devices: a launch from inside a shard runs its shards on that thread") {
  const std::vector<fx::Device> outer = made_up(3), inner = made_up(2);
  std::atomic<int> inner_runs{0};
  std::atomic<int> refused{0};
  auto shard = [&](size_t) {
    CHECK(rt::in_launch());
    const std::thread::id me = std::this_thread::get_id();
    auto nested = [&](size_t) {
      CHECK(std::this_thread::get_id() == me);
      inner_runs.fetch_add(1);
    };
    rt::run_on_devices(inner, rt::ShardTask(nested), rt::Schedule::any_thread);
    CHECK(rt::in_launch());
    try {
      rt::run_on_devices(inner, rt::ShardTask(nested), rt::Schedule::together);
    } catch (const fx::DeviceError&) {
      refused.fetch_add(1);
    }
  };
  rt::run_on_devices(outer, rt::ShardTask(shard), rt::Schedule::any_thread);
  CHECK(inner_runs.load() == 6);
  CHECK(refused.load() == 3);
  CHECK_FALSE(rt::in_launch());
}
