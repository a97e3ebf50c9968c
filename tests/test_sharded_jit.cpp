// Sharded jit (fx::jit with fx::in_shardings / fx::out_shardings, transforms/jit.h; the partitioner,
// interpreters/partition.h): each program partitioned over 1-d and 2-d meshes against the same
// function on one device, the layouts of the results, the collectives the dump says were inserted,
// and the errors. Meshes are sized from the device count (the suite runs with 1, 4 and 8 devices).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "test_helpers.h"

namespace fx = fluxion;
using test_helpers::error_of;
using test_helpers::max_abs_diff;
using test_helpers::ScopedEnv;

namespace {
int64_t ndev() { return int64_t(fx::devices().size()); }
fx::Mesh mesh1d() { return fx::make_mesh({ndev()}, {"data"}); }
fx::Mesh mesh2d() {
  const int64_t n = ndev();
  return n >= 4 ? fx::make_mesh({n / 2, 2}, {"data", "model"}) : fx::make_mesh({n, 1}, {"data", "model"});
}
fx::Array normal(int seed, const fx::Shape& s) { return fx::random::normal(fx::random::key(seed), s); }
void check_close(const fx::Array& got, const fx::Array& want, double tol = 1e-4) {
  CHECK(max_abs_diff(got, want) <= tol * (1 + max_abs_diff(want, fx::zeros_like(want))));
}
fx::NamedSharding at(const fx::Mesh& m, fx::PartitionSpec p) { return fx::NamedSharding(m, std::move(p)); }

// Runs `call` with FLUXION_DUMP set to a fresh folder and returns the partitioned dumps it wrote.
template <class F>
std::string partition_dump(F call) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("fx_sharded_jit_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    ScopedEnv env("FLUXION_DUMP", dir.string());
    call();
  }
  std::string all;
  if (std::filesystem::exists(dir))
    for (const auto& f : std::filesystem::directory_iterator(dir))
      if (f.path().string().ends_with(".partitioned.txt")) {
        std::ifstream in(f.path());
        std::stringstream ss;
        ss << in.rdbuf();
        all += ss.str();
      }
  std::filesystem::remove_all(dir);
  return all;
}
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("sharded jit: a batch-split layer keeps its batch split and equals one device") {
  const fx::Mesh m = mesh1d();
  const int64_t n = ndev();
  const fx::Array x = normal(1, {4 * n, 6}), w = normal(2, {6, 5}), b = normal(3, {5});
  auto f = [](const fx::Array& x, const fx::Array& w, const fx::Array& b) { return fx::tanh(fx::matmul(x, w) + b); };
  auto jf = fx::jit(f, fx::in_shardings(at(m, fx::P("data")), fx::replicated(m), fx::replicated(m)));
  std::string dump;
  const fx::Array y = [&] {
    fx::Array r;
    dump = partition_dump([&] { r = jf(x, w, b); });
    return r;
  }();
  CHECK(y.shape() == fx::Shape{4 * n, 5});
  check_close(y, f(x, w, b));
  // Nothing asked the batch to be gathered: the result stays split as the input was.
  CHECK(y.sharding() == at(m, fx::P("data")));
  CHECK(has(dump, "partitioned over"));
  CHECK(!has(dump, "all_gather"));
  CHECK(!has(dump, "psum"));
  // Inputs already laid out as asked are used as they are; another call does not recompile.
  const fx::Array x2 = fx::device_put(x * 2.f, at(m, fx::P("data")));
  check_close(jf(x2, w, b), f(x * 2.f, w, b));
  CHECK(jf.compilations() == 1);
}

TEST_CASE("sharded jit: a Megatron MLP over a 2-d mesh sums once over 'model'") {
  const fx::Mesh m = mesh2d();
  const int64_t nd = m.shape[0], nm = m.shape[1];
  const fx::Array x = normal(4, {2 * nd, 6}), w1 = normal(5, {6, 4 * nm}), w2 = normal(6, {4 * nm, 6});
  auto mlp = [](const fx::Array& x, const fx::Array& w1, const fx::Array& w2) {
    return fx::matmul(fx::nn::relu(fx::matmul(x, w1)), w2);
  };
  auto jf = fx::jit(mlp, fx::in_shardings(at(m, fx::P("data", fx::none)), at(m, fx::P(fx::none, "model")), at(m, fx::P("model", fx::none))),
                    fx::out_shardings(at(m, fx::P("data", fx::none))));
  fx::Array y;
  const std::string dump = partition_dump([&] { y = jf(x, w1, w2); });
  check_close(y, mlp(x, w1, w2));
  CHECK(y.sharding() == at(m, fx::P("data", fx::none)));
  // Column-parallel then row-parallel: one all-reduce over 'model' and no gathers of the weights.
  if (nm > 1) CHECK(has(dump, "psum over 'model'"));
  CHECK(!has(dump, "all_gather"));
  CHECK(has(dump, "B per device"));
}

TEST_CASE("sharded jit: a contraction over a split batch reduce-scatters into a split output") {
  const fx::Mesh m = mesh1d();
  const int64_t n = ndev();
  const fx::Array x = normal(7, {4 * n, 2 * n}), y = normal(8, {4 * n, 3});
  auto f = [](const fx::Array& x, const fx::Array& y) { return fx::matmul(fx::transpose(x), y); };
  auto scattered = fx::jit(f, fx::in_shardings(at(m, fx::P("data"))), fx::out_shardings(at(m, fx::P("data"))));
  auto summed = fx::jit(f, fx::in_shardings(at(m, fx::P("data"))), fx::out_shardings(fx::replicated(m)));
  fx::Array a, b;
  const std::string d1 = partition_dump([&] { a = scattered(x, y); });
  const std::string d2 = partition_dump([&] { b = summed(x, y); });
  check_close(a, f(x, y));
  check_close(b, f(x, y));
  CHECK(a.sharding() == at(m, fx::P("data")));
  CHECK(b.sharding() == fx::replicated(m));
  if (n > 1) {
    CHECK(has(d1, "psum_scatter over 'data'"));
    CHECK(has(d2, "psum over 'data'"));
  }
}

TEST_CASE("sharded jit: with_sharding_constraint moves a value between layouts") {
  const fx::Mesh m = mesh1d();
  const int64_t n = ndev();
  const fx::Array x = normal(9, {2 * n, 3 * n});
  auto f = [&](const fx::Array& x) {
    fx::Array t = fx::with_sharding_constraint(fx::exp(x), at(m, fx::P(fx::none, "data")));
    return fx::sum(t * 2.f, {1});
  };
  auto jf = fx::jit(f, fx::in_shardings(at(m, fx::P("data"))), fx::out_shardings(fx::replicated(m)));
  fx::Array y;
  const std::string dump = partition_dump([&] { y = jf(x); });
  check_close(y, fx::sum(fx::exp(x) * 2.f, {1}));
  if (n > 1) CHECK(has(dump, "all_to_all over 'data'"));
  // Outside sharded jit the constraint changes nothing but the layout.
  check_close(fx::jit(f)(x), fx::sum(fx::exp(x) * 2.f, {1}));
}

TEST_CASE("sharded jit: with_sharding_constraint steers the partitioner's layouts") {
  const fx::Mesh m = mesh1d();
  const int64_t n = ndev();
  const fx::Array x = normal(14, {4 * n, 2 * n}), w = normal(15, {2 * n, 5});
  // x comes in whole; the constraint splits the batch there (a local slice, nothing moves), and
  // the layout propagates from it: the product and the output stay split, with no collective.
  auto batch = [&](const fx::Array& x, const fx::Array& w) {
    return fx::matmul(fx::with_sharding_constraint(fx::tanh(x), at(m, fx::P("data"))), w) * 2.f;
  };
  auto jb = fx::jit(batch, fx::in_shardings(fx::replicated(m)));
  fx::Array y;
  const std::string d1 = partition_dump([&] { y = jb(x, w); });
  check_close(y, batch(x, w));
  CHECK(y.sharding() == at(m, fx::P("data")));
  CHECK(has(d1, "a local slice"));
  CHECK(!has(d1, "all_gather"));
  CHECK(!has(d1, "psum"));
  // Backward hints: x is sliced before tanh, which runs on each device's rows.
  const std::string rows = "f32[4," + std::to_string(2 * n) + "] = tanh";
  const std::string whole = "f32[" + std::to_string(4 * n) + "," + std::to_string(2 * n) + "] = tanh";
  if (n > 1) CHECK(has(d1, rows));
  // A value that another use needs whole gets no hint: tanh runs whole, and nothing is gathered.
  auto both = [&](const fx::Array& x) {
    const fx::Array t = fx::tanh(x);
    return std::vector<fx::Array>{fx::with_sharding_constraint(t, at(m, fx::P("data"))) * 3.f, t + 1.f};
  };
  auto jboth = fx::jit(both, fx::in_shardings(fx::replicated(m)), fx::out_shardings(at(m, fx::P("data")), fx::replicated(m)));
  std::vector<fx::Array> ys;
  const std::string d3 = partition_dump([&] { ys = jboth(x); });
  check_close(ys[0], fx::tanh(x) * 3.f);
  check_close(ys[1], fx::tanh(x) + 1.f);
  CHECK(has(d3, whole));
  CHECK(!has(d3, "all_gather"));
  // The same program without the constraint is computed whole on every device.
  auto plain = [](const fx::Array& x, const fx::Array& w) { return fx::matmul(fx::tanh(x), w) * 2.f; };
  CHECK(fx::jit(plain, fx::in_shardings(fx::replicated(m)))(x, w).sharding() == fx::replicated(m));
  // Constraints that split the contracted dimension: each device multiplies its slices and one
  // psum adds the partial products for the replicated output.
  auto contract = [&](const fx::Array& x, const fx::Array& w) {
    return fx::matmul(fx::with_sharding_constraint(x, at(m, fx::P(fx::none, "data"))),
                      fx::with_sharding_constraint(w, at(m, fx::P("data"))));
  };
  auto jc = fx::jit(contract, fx::in_shardings(fx::replicated(m)), fx::out_shardings(fx::replicated(m)));
  const std::string d2 = partition_dump([&] { y = jc(x, w); });
  check_close(y, fx::matmul(x, w));
  if (n > 1) CHECK(has(d2, "psum over 'data'"));
  CHECK(!has(d2, "all_gather"));
}

namespace {
struct Mlp {
  fx::Array w1, b1, w2;
};
FLUXION_TREE(Mlp, w1, b1, w2);
}  // namespace

TEST_CASE("sharded jit: data-parallel and FSDP training steps equal the single-device step") {
  const fx::Mesh m = mesh1d();
  const int64_t n = ndev();
  auto loss = [](const Mlp& p, const fx::Array& x, const fx::Array& y) {
    return fx::mean(fx::square(fx::matmul(fx::tanh(fx::matmul(x, p.w1) + p.b1), p.w2) - y));
  };
  auto step = [&](const Mlp& p, const fx::Array& x, const fx::Array& y) {
    return fx::tree::map([](const fx::Array& a, const fx::Array& g) { return a - 0.1f * g; }, p, fx::grad(loss)(p, x, y));
  };
  const fx::NamedSharding batch = at(m, fx::P("data")), whole = fx::replicated(m);
  auto dp = fx::jit(step, fx::in_shardings(whole, batch, batch), fx::out_shardings(whole));
  // FSDP: every parameter split along its first dimension, gathered where it is used.
  const fx::NamedSharding rows = at(m, fx::P("data"));
  auto fsdp = fx::jit(step, fx::in_shardings(rows, batch, batch), fx::out_shardings(rows));
  auto single = fx::jit(step);
  Mlp a{normal(10, {2 * n, 4 * n}) * 0.3f, fx::zeros({4 * n}), normal(11, {4 * n, 2}) * 0.3f}, b = a, c = a;
  for (int s = 0; s < 3; ++s) {
    const fx::Array x = normal(20 + s, {4 * n, 2 * n}), y = normal(30 + s, {4 * n, 2});
    a = dp(a, x, y);
    const std::string dump = partition_dump([&] { b = fsdp(b, x, y); });
    // The gradients, partial sums over 'data' through the update's scaling, reduce-scatter into
    // the parameters' rows.
    if (s == 0 && n > 1) CHECK(has(dump, "psum_scatter over 'data'"));
    c = single(c, x, y);
  }
  for (const auto& [got, want] : {std::pair{a.w1, c.w1}, {a.b1, c.b1}, {a.w2, c.w2}, {b.w1, c.w1}, {b.b1, c.b1}, {b.w2, c.w2}})
    check_close(got, want, 1e-5);
  CHECK(a.w1.sharding() == whole);
  CHECK(b.w1.sharding() == rows);
  CHECK(dp.compilations() == 1);
}

TEST_CASE("sharded jit: a primitive without a sharding rule is computed replicated, and the dump says so") {
  const fx::Mesh m = mesh1d();
  const int64_t n = ndev();
  const fx::Array x = normal(12, {2 * n, 3});
  auto f = [](const fx::Array& x) { return fx::cumsum(x * 3.f, 0) + 1.f; };
  auto jf = fx::jit(f, fx::in_shardings(at(m, fx::P("data"))), fx::out_shardings(at(m, fx::P("data"))));
  fx::Array y;
  const std::string dump = partition_dump([&] { y = jf(x); });
  check_close(y, f(x));
  CHECK(has(dump, "computed replicated (no sharding rule)"));
  if (n > 1) CHECK(has(dump, "all_gather over 'data'"));
}

TEST_CASE("sharded jit: errors name jit, the leaf, the dimension and the user's line") {
  const fx::Mesh m = mesh1d();
  auto id = [](const fx::Array& x) { return x * 2.f; };
  if (ndev() > 1) {
    const std::string uneven =
        error_of([&] { fx::jit(id, fx::in_shardings(at(m, fx::P("data"))))(fx::ones({ndev() + 1, 2})); });
    CHECK(uneven.find("ShapeError: jit at test_sharded_jit.cpp") == 0);
    CHECK(has(uneven, "argument leaf 0"));
    CHECK(has(uneven, "dimension 0"));
    CHECK(has(uneven, "'data' of size"));
  }
  const std::string count = error_of([&] {
    fx::jit([](const fx::Array& a, const fx::Array&) { return a; }, fx::in_shardings(fx::replicated(m), fx::replicated(m), fx::replicated(m)))(
        fx::ones({2}), fx::ones({2}));
  });
  CHECK(count.find("ValueError: jit at test_sharded_jit.cpp") == 0);
  CHECK(has(count, "in_shardings has 3 entries for 2 arguments"));
  const fx::Mesh other = fx::make_mesh({ndev(), 1}, {"data", "model"});
  const std::string meshes = error_of([&] {
    fx::jit([](const fx::Array& a, const fx::Array& b) { return a + b; }, fx::in_shardings(fx::replicated(m), fx::replicated(other)))(
        fx::ones({2}), fx::ones({2}));
  });
  CHECK(has(meshes, "different meshes"));
  const std::string axis = error_of([&] { fx::jit(id, fx::in_shardings(at(m, fx::P("model"))))(fx::ones({4})); });
  CHECK(axis.find("ValueError: jit at test_sharded_jit.cpp") == 0);
  CHECK(has(axis, "'model'"));
}

TEST_CASE("sharded jit: the shape rules under every layout of a 2-d mesh equal one device") {
  const fx::Mesh m = mesh2d();
  const int64_t n = m.size(), a = 2 * n, b = 3 * n;
  const fx::Array x = normal(13, {a, b});
  using F = std::function<fx::Array(const fx::Array&)>;
  const std::vector<std::pair<std::string, F>> programs{
      {"reshape to 3-d", [&](const fx::Array& v) { return fx::reshape(v, {a / 2, 2, b}) * 2.f; }},
      {"reshape flat", [&](const fx::Array& v) { return fx::reshape(v, {a * b}) + 1.f; }},
      {"reshape split last", [&](const fx::Array& v) { return fx::reshape(v, {a, b / 3, 3}); }},
      {"transpose", [](const fx::Array& v) { return fx::transpose(v) - 1.f; }},
      {"sums and max", [](const fx::Array& v) { return fx::sum(v, {0}) + fx::max(v, {0}) * fx::sum(fx::exp(v), {0}); }},
      {"broadcast", [&](const fx::Array& v) { return fx::broadcast_to(fx::reshape(v, {a, 1, b}), {a, 2, b}) * 3.f; }},
      {"gram", [](const fx::Array& v) { return fx::matmul(v, fx::transpose(v)); }},
  };
  const std::vector<fx::PartitionSpec> specs{fx::P("data"), fx::P(fx::none, "model"), fx::P("data", "model"),
                                             fx::P(fx::axes("data", "model"))};
  for (const auto& [name, f] : programs)
    for (const fx::PartitionSpec& spec : specs) {
      CAPTURE(name);
      CAPTURE(spec.str());
      check_close(fx::jit(f, fx::in_shardings(at(m, spec)))(x), f(x));
    }
}
