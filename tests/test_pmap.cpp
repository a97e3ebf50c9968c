// fx::pmap and the collectives (api/collectives.h): pmap against the vmap with the same axis name
// against a host loop, derivatives with JAX's semantics, composition, errors. The suite runs with
// one device and again with 4 and 8 (tests/meson.build): every case uses the count it finds.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <thread>

#include "runtime/collectives_local.h"

namespace fx = fluxion;

namespace {
int64_t ndev() { return int64_t(fx::devices("cpu").size()); }

std::vector<float> host(const fx::Array& a) { return fx::astype(a, fx::float32).to_vector<float>(); }

void check_close(const fx::Array& got, const std::vector<float>& want, double tol = 1e-5) {
  std::vector<float> g = host(got);
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) CHECK(std::fabs(g[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
}
void check_same(const fx::Array& a, const fx::Array& b, double tol = 1e-5) {
  REQUIRE(a.shape() == b.shape());
  check_close(a, host(b), tol);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const fx::Error& e) {
    return e.what();
  }
  return "";
}

// One device's input is [n, 3]; the global input [n, n, 3] holds X[r][i][j] = r*100 + i*10 + j.
fx::Array global_input(int64_t n) {
  std::vector<float> v;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < 3; ++j) v.push_back(float(r * 100 + i * 10 + j) * (r % 2 ? -1.f : 1.f));
  return fx::array(v, {n, n, 3});
}

// Every collective once.
auto all_collectives = [](const fx::Array& x) {
  const int64_t n = fx::axis_size("i");
  std::vector<std::pair<int64_t, int64_t>> shift;
  for (int64_t r = 0; r < n; ++r) shift.push_back({r, (r + 1) % n});
  return std::vector<fx::Array>{fx::psum(x, "i"),
                                fx::pmean(x, "i"),
                                fx::pmax(x, "i"),
                                fx::pmin(x, "i"),
                                fx::all_gather(x, "i"),
                                fx::all_gather(x, "i", 1, /*tiled=*/true),
                                fx::psum_scatter(x, "i"),
                                fx::ppermute(x, "i", shift),
                                fx::all_to_all(x, "i", 0, 0),
                                fx::axis_index("i")};
};

// The host loop: what device r must compute, output by output, stacked over r.
std::vector<std::vector<float>> loop_reference(const fx::Array& global, int64_t n) {
  std::vector<float> g = host(global);
  auto X = [&](int64_t r, int64_t i, int64_t j) { return g[size_t((r * n + i) * 3 + j)]; };
  std::vector<std::vector<float>> out(10);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        float s = 0, mx = -1e30f, mn = 1e30f;
        for (int64_t c = 0; c < n; ++c) s += X(c, i, j), mx = std::max(mx, X(c, i, j)), mn = std::min(mn, X(c, i, j));
        out[0].push_back(s);
        out[1].push_back(s / float(n));
        out[2].push_back(mx);
        out[3].push_back(mn);
        out[7].push_back(X((r + n - 1) % n, i, j));
        out[8].push_back(X(i, r, j));
      }
    for (int64_t c = 0; c < n; ++c)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < 3; ++j) out[4].push_back(X(c, i, j));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < n; ++c)
        for (int64_t j = 0; j < 3; ++j) out[5].push_back(X(c, i, j));
    for (int64_t j = 0; j < 3; ++j) {
      float s = 0;
      for (int64_t c = 0; c < n; ++c) s += X(c, r, j);
      out[6].push_back(s);
    }
    out[9].push_back(float(r));
  }
  return out;
}
}  // namespace

TEST_CASE("pmap: the api example: psum over the devices, a sharded result") {
  const int64_t n = ndev();
  auto step = fx::pmap([](const fx::Array& x) { return fx::psum(x, "i"); }, "i");
  fx::Array out = step(fx::reshape(fx::arange(float(2 * n)), {n, 2}));
  CHECK(out.shape() == fx::Shape{n, 2});
  REQUIRE(out.shards().size() == size_t(n));
  float even = 0, odd = 0;
  for (int64_t k = 0; k < n; ++k) even += float(2 * k), odd += float(2 * k + 1);
  for (int64_t k = 0; k < n; ++k) {
    CHECK(out.shards()[size_t(k)].device() == fx::devices("cpu")[size_t(k)]);
    CHECK(out.shards()[size_t(k)].to_vector<float>() == std::vector<float>{even, odd});
  }
  std::vector<float> all = out.to_vector<float>();
  CHECK(all.size() == size_t(2 * n));
  CHECK(all[0] == even);
  CHECK_THROWS_AS(out.device(), fx::DeviceError);
  step(fx::reshape(fx::arange(float(2 * n)), {n, 2}));
  CHECK(step.compilations() == 1);
}

TEST_CASE("pmap: every collective, pmap against vmap with the axis name against a loop") {
  const int64_t n = ndev();
  fx::Array x = global_input(n);
  std::vector<fx::Array> by_pmap = fx::pmap(all_collectives, "i")(x);
  std::vector<fx::Array> by_vmap = fx::vmap(all_collectives, fx::in_axes(0), fx::axis_name("i"))(x);
  std::vector<std::vector<float>> want = loop_reference(x, n);
  REQUIRE(by_pmap.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    CAPTURE(k);
    check_close(by_pmap[k], want[k]);
    check_same(by_vmap[k], by_pmap[k]);
  }
}

TEST_CASE("pmap: every linear collective's transpose is its adjoint across the devices") {
  // sum_r <c(v)_r, u_r> == sum_r <c^T(u)_r, v_r>, with c^T from vjp inside pmap.
  const int64_t n = ndev();
  std::vector<std::pair<int64_t, int64_t>> shift;
  for (int64_t r = 0; r < n; ++r) shift.push_back({r, (r + 2) % n});
  std::vector<std::pair<std::string, std::function<fx::Array(const fx::Array&)>>> ops{
      {"psum", [](const fx::Array& x) { return fx::psum(x, "i"); }},
      {"pmean", [](const fx::Array& x) { return fx::pmean(x, "i"); }},
      {"all_gather", [](const fx::Array& x) { return fx::all_gather(x, "i", 1); }},
      {"all_gather tiled", [](const fx::Array& x) { return fx::all_gather(x, "i", 1, true); }},
      {"psum_scatter", [](const fx::Array& x) { return fx::psum_scatter(x, "i"); }},
      {"psum_scatter tiled", [](const fx::Array& x) { return fx::psum_scatter(x, "i", 0, true); }},
      {"ppermute", [shift](const fx::Array& x) { return fx::ppermute(x, "i", shift); }},
      {"all_to_all", [](const fx::Array& x) { return fx::all_to_all(x, "i", 0, 1); }},
  };
  fx::Array v = fx::random::normal(fx::random::key(1), {n, n, 3});
  for (const auto& [name, op] : ops) {
    CAPTURE(name);
    fx::Array out = fx::pmap(op, "i")(v);
    fx::Array u = fx::random::normal(fx::random::key(2), out.shape());
    auto both = fx::pmap(
        [op](const fx::Array& v, const fx::Array& u) {
          auto [y, back] = fx::vjp(op, v);
          return std::pair{fx::sum(y * u), back(u)};
        },
        "i");
    auto [forward, transposed] = both(v, u);
    const float lhs = fx::sum(forward).item<float>(), rhs = fx::sum(transposed * v).item<float>();
    CHECK(std::fabs(lhs - rhs) <= 1e-4f * (1 + std::fabs(lhs)));
    check_same(fx::pmap(op, "i")(v), fx::vmap(op, fx::in_axes(0), fx::axis_name("i"))(v));
  }
}

TEST_CASE("pmap: in_axes none, out_axes none and 1, sharded inputs reused") {
  const int64_t n = ndev();
  fx::Array xs = fx::reshape(fx::astype(fx::arange(3 * n), fx::float32), {n, 3});
  fx::Array w = fx::array({1.f, 2.f, 3.f});
  auto f = fx::pmap([](const fx::Array& x, const fx::Array& w) { return std::pair{x * w, fx::psum(fx::sum(x * w), "i")}; },
                    "i", fx::in_axes(0, fx::none), fx::out_axes(1, fx::none));
  auto [prod, total] = f(xs, w);
  CHECK(prod.shape() == fx::Shape{3, n});
  check_same(prod, fx::transpose(xs * w));
  check_close(total, {fx::sum(xs * w).item<float>()});
  // A sharded result fed back along the axis it is sharded on.
  auto double_it = fx::pmap([](const fx::Array& x) { return x * 2.f; }, "i");
  fx::Array once = double_it(xs);
  fx::Array twice = double_it(once);
  check_same(twice, xs * 4.f);
  CHECK(twice.is_sharded());
}

TEST_CASE("pmap: grad inside pmap and pmap inside grad follow JAX") {
  const int64_t n = ndev();
  fx::Array xs = fx::reshape(fx::astype(fx::arange(2 * n), fx::float32) * 0.25f - 1.f, {n, 2});
  // pmap of grad: psum's transpose is psum, so each device's gradient is 2 x n.
  auto loss_psum = [](const fx::Array& x) { return fx::psum(fx::sum(x * x), "i"); };
  fx::Array g = fx::pmap(fx::grad(loss_psum), "i")(xs);
  check_same(g, xs * float(2 * n));
  check_same(fx::vmap(fx::grad(loss_psum), fx::in_axes(0), fx::axis_name("i"))(xs), g);
  // Data parallelism's form: pmean'd loss, gradient 2 x on each device.
  auto loss_pmean = [](const fx::Array& x) { return fx::pmean(fx::sum(x * x), "i"); };
  check_same(fx::pmap(fx::grad(loss_pmean), "i")(xs), xs * 2.f);
  // grad of a pmapped loss: the n replicated sums, summed, give 2 n x.
  auto total = [&](const fx::Array& x) { return fx::sum(fx::pmap(loss_psum, "i")(x)); };
  check_same(fx::grad(total)(xs), xs * float(2 * n));
  // jit of pmap gives the same values.
  check_same(fx::jit(fx::pmap(loss_psum, "i"))(xs), fx::pmap(loss_psum, "i")(xs));
}

TEST_CASE("pmap: jit, control flow and a nested named vmap inside pmap") {
  const int64_t n = ndev();
  fx::Array xs = fx::reshape(fx::astype(fx::arange(4 * n), fx::float32), {n, 2, 2});
  auto f = [](const fx::Array& x) {
    fx::Array first = fx::cond(fx::axis_index("i") == 0, [&] { return x * 10.f; }, [&] { return -x; });
    fx::Array rows = fx::vmap([](const fx::Array& r) { return fx::psum(fx::psum(r, "j"), "i"); }, fx::in_axes(0),
                              fx::axis_name("j"))(x);
    return std::pair{fx::jit([](const fx::Array& a) { return fx::sin(a); })(first), rows};
  };
  auto [a, rows] = fx::pmap(f, "i")(xs);
  std::vector<float> x = xs.to_vector<float>(), want_a, want_rows;
  float total0 = 0, total1 = 0;
  for (size_t k = 0; k < x.size(); k += 2) total0 += x[k], total1 += x[k + 1];
  for (size_t k = 0; k < x.size(); ++k) want_a.push_back(std::sin(k < 4 ? 10.f * x[k] : -x[k]));
  for (int64_t k = 0; k < 2 * n; ++k) want_rows.insert(want_rows.end(), {total0, total1});
  check_close(a, want_a);
  check_close(rows, want_rows);
}

TEST_CASE("pmap: errors name the axis, the sizes and the user's line") {
  const int64_t n = ndev();
  const std::string size = error_of([&] { fx::pmap([](const fx::Array& x) { return x; }, "i")(fx::zeros({n + 1, 2})); });
  CHECK(size.find("ValueError: pmap over 'i' at test_pmap.cpp") == 0);
  CHECK(size.find("size " + std::to_string(n + 1)) != std::string::npos);
  const std::string unbound =
      error_of([&] { fx::pmap([](const fx::Array& x) { return fx::psum(x, "j"); }, "i")(fx::zeros({n, 2})); });
  CHECK(unbound.find("ValueError: psum at test_pmap.cpp") == 0);
  CHECK(unbound.find("'j' is not bound (bound here: 'i')") != std::string::npos);
  CHECK_THROWS_AS(fx::psum(fx::ones({2}), "i"), fx::ValueError);
  const std::string scatter =
      error_of([&] { fx::pmap([](const fx::Array& x) { return fx::psum_scatter(x, "i"); }, "i")(fx::zeros({n, n + 1})); });
  CHECK(scatter.find("ShapeError: psum_scatter") == 0);
  CHECK(scatter.find("test_pmap.cpp") != std::string::npos);
}

TEST_CASE("pmap: collectives fail with DeviceError instead of hanging") {
  // A collective run outside pmap has no devices to meet.
  fx::Params params{{"axis_name", std::string("k")}, {"axis_size", int64_t(2)}, {"axis_key", fx::axis_key("k")}};
  CHECK_THROWS_AS(fx::bind1(fx::Prim::psum, {fx::ones({2})}, params, {}), fx::DeviceError);
  // A member whose device failed wakes the others waiting in a collective: they return false
  // with the reason (pmap then raises it as a DeviceError).
  fx::runtime::LocalGroup group(2, 0, 1);
  std::vector<float> in{1.f, 2.f}, out(2);
  std::thread waiter([&] {
    CHECK(!group.member(0).all_reduce(fx::ReduceOp::sum, fx::float32, in.data(), out.data(), 2));
    CHECK(group.member(0).failure() == "device 1 raised");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  group.abort("device 1 raised");
  waiter.join();
  CHECK(group.failed());
}

TEST_CASE("pmap: the api.md lines compile and run as written") {
  const int64_t n = ndev();
  std::vector<std::pair<int64_t, int64_t>> ring;
  for (int64_t r = 0; r < n; ++r) ring.push_back({r, (r + 1) % n});
  auto f = [&](const fx::Array& x, const fx::Array& w) {
    fx::Array a = fx::psum(x, "i") + fx::pmean(x, "i") + fx::pmax(x, "i") + fx::pmin(x, "i") + w;
    fx::Array g = fx::sum(fx::all_gather(x, "i")) + fx::sum(fx::all_gather(x, "i", /*axis=*/0, /*tiled=*/true));
    fx::Array s = fx::psum_scatter(fx::broadcast_to(x, {fx::axis_size("i"), 2}), "i");
    fx::Array p = fx::ppermute(x, "i", {{0, 0}}) + fx::ppermute(x, "i", ring);
    fx::Array t = fx::all_to_all(fx::broadcast_to(x, {fx::axis_size("i"), 2}), "i", /*split=*/0, /*concat=*/0);
    return fx::sum(a) + fx::sum(g) + fx::sum(s) + fx::sum(p) + fx::sum(t) + fx::astype(fx::axis_index("i"), fx::float32);
  };
  fx::Array xs = fx::astype(fx::reshape(fx::arange(2 * n), {n, 2}), fx::float32), w = fx::ones({2});
  fx::Array by_pmap = fx::pmap(f, "i", fx::in_axes(0, fx::none))(xs, w);
  fx::Array by_vmap = fx::vmap(f, fx::in_axes(0, fx::none), fx::axis_name("i"))(xs, w);
  check_same(by_pmap, by_vmap);
  CHECK(fx::distributed::process_index() == 0);
  CHECK(fx::distributed::process_count() == 1);
}
