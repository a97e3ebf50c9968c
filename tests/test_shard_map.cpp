// fx::shard_map (transforms/shard_map.h): per-device code over 1-d and 2-d meshes against the same
// computation on one device or a host loop; collectives by mesh axis names and lists of names;
// composition with jit, grad, vmap and control flow; check_rep; errors. Meshes are sized from the
// device count (the suite runs with 1, 4 and 8 devices).
#include <doctest/doctest.h>
#include <fluxion.h>

#include "test_helpers.h"

namespace fx = fluxion;
using test_helpers::error_of;
using test_helpers::max_abs_diff;

namespace {
int64_t ndev() { return int64_t(fx::devices().size()); }
fx::Mesh mesh2d() {
  const int64_t n = ndev();
  return n >= 4 ? fx::make_mesh({n / 2, 2}, {"data", "model"}) : fx::make_mesh({n, 1}, {"data", "model"});
}
fx::Array normal(int seed, const fx::Shape& s) { return fx::random::normal(fx::random::key(seed), s); }
void check_close(const fx::Array& got, const fx::Array& want, double tol = 1e-4) {
  CHECK(max_abs_diff(got, want) <= tol * (1 + max_abs_diff(want, fx::zeros_like(want))));
}
}  // namespace

TEST_CASE("shard_map: a matmul split over a 2-d mesh, summed over 'model', equals one device's") {
  const fx::Mesh m = mesh2d();
  const int64_t nd = m.shape[0], nm = m.shape[1];
  const fx::Array x = normal(1, {4 * nd, 3 * nm}), w = normal(2, {3 * nm, 5});
  auto g = fx::shard_map([](const fx::Array& xb, const fx::Array& wb) { return fx::psum(fx::matmul(xb, wb), "model"); }, m,
                         fx::in_specs(fx::P("data", "model"), fx::P("model", fx::none)), fx::out_specs(fx::P("data", fx::none)));
  const fx::Array y = g(x, w);
  CHECK(y.shape() == fx::Shape{4 * nd, 5});
  CHECK(y.sharding() == fx::NamedSharding(m, fx::P("data", fx::none)));
  check_close(y, fx::matmul(x, w));
  // Fed inputs laid out as the specs say, the shards are used as they are; one compile.
  const fx::Array y2 = g(fx::device_put(x, fx::NamedSharding(m, fx::P("data", "model"))),
                         fx::device_put(w, fx::NamedSharding(m, fx::P("model"))));
  check_close(y2, y, 1e-6);
  CHECK(g.compilations() == 1);
}

TEST_CASE("shard_map: collectives by mesh axis names and lists of names, against the host") {
  const fx::Mesh m = mesh2d();
  const int64_t nd = m.shape[0], nm = m.shape[1], n = m.size();
  const fx::Array x = fx::reshape(fx::astype(fx::arange(2 * nd * 3 * nm), fx::float32), {2 * nd, 3 * nm});
  auto f = [](const fx::Array& b) {
    return std::vector<fx::Array>{fx::psum(b, "data"), fx::psum(b, {"data", "model"}),
                                  fx::reshape(fx::axis_index({"data", "model"}), {1}), fx::all_gather(b, "model", 1, true),
                                  fx::all_gather(b, {"data", "model"}, 0, true), fx::pmax(b, {"data", "model"})};
  };
  auto g = fx::shard_map(f, m, fx::in_specs(fx::P("data", "model")),
                         fx::out_specs(fx::leaf_specs({fx::P(fx::none, "model"), fx::P(), fx::P(fx::axes("data", "model")),
                                                       fx::P("data"), fx::P(), fx::P()})));
  const std::vector<fx::Array> r = g(x);
  // The blocks of x, [2, 3] each, indexed (d, k).
  auto block = [&](int64_t d, int64_t k) { return fx::slice(x, {2 * d, 3 * k}, {2 * d + 2, 3 * k + 3}); };
  std::vector<fx::Array> col_sums, rows_of_blocks;
  fx::Array total = fx::zeros({2, 3}), biggest = block(0, 0);
  for (int64_t k = 0; k < nm; ++k) {
    fx::Array s = fx::zeros({2, 3});
    for (int64_t d = 0; d < nd; ++d) s = s + block(d, k);
    col_sums.push_back(s);
    total = total + s;
  }
  for (int64_t d = 0; d < nd; ++d)
    for (int64_t k = 0; k < nm; ++k) rows_of_blocks.push_back(block(d, k)), biggest = fx::maximum(biggest, block(d, k));
  check_close(r[0], fx::concatenate(col_sums, 1));
  check_close(r[1], total);
  check_close(r[2], fx::astype(fx::arange(n), fx::float32) * 1.f);
  check_close(r[3], x);
  check_close(r[4], fx::concatenate(rows_of_blocks, 0));
  check_close(r[5], biggest);
}

TEST_CASE("shard_map: an output claimed replicated that varies along an axis is an error (check_rep)") {
  const fx::Mesh m = fx::make_mesh({ndev()}, {"data"});
  const fx::Array x = fx::ones({2 * ndev(), 3});
  const std::string e = error_of([&] {
    fx::shard_map([](const fx::Array& b) { return b * 2.f; }, m, fx::in_specs(fx::P("data")), fx::out_specs(fx::P()))(x);
  });
  CHECK(e.find("ValueError: shard_map at test_shard_map.cpp") == 0);
  CHECK(e.find("output 0") != std::string::npos);
  CHECK(e.find("mesh axis 'data'") != std::string::npos);
  // Reduced over the axis first, or with the check off, it is accepted.
  auto summed = fx::shard_map([](const fx::Array& b) { return fx::psum(b, "data"); }, m, fx::in_specs(fx::P("data")),
                              fx::out_specs(fx::P()));
  check_close(summed(x), fx::full({2, 3}, float(ndev())));
  auto unchecked = fx::shard_map([](const fx::Array& b) { return b * 2.f; }, m, fx::in_specs(fx::P("data")),
                                 fx::out_specs(fx::P()), fx::check_rep(false));
  check_close(unchecked(x), fx::full({2, 3}, 2.f));
  // A value computed inside a loop and a branch keeps the axes it varies along.
  const std::string loop = error_of([&] {
    fx::shard_map(
        [](const fx::Array& b) {
          return fx::fori_loop(0, 3, [](const fx::Array&, const fx::Array& acc) { return acc * 2.f; }, b);
        },
        m, fx::in_specs(fx::P("data")), fx::out_specs(fx::P()))(x);
  });
  CHECK(loop.find("output 0") != std::string::npos);
}

TEST_CASE("shard_map: inside jit, grad and vmap it gives the single-device values") {
  const fx::Mesh m = mesh2d();
  const int64_t nd = m.shape[0], nm = m.shape[1];
  const fx::Array x = normal(3, {2 * nd, 3 * nm}), w = normal(4, {3 * nm}) * 0.5f;
  auto per_device = [](const fx::Array& xb, const fx::Array& wb) { return fx::psum(fx::sum(fx::tanh(xb * wb)), {"data", "model"}); };
  auto g = fx::shard_map(per_device, m, fx::in_specs(fx::P("data", "model"), fx::P("model")), fx::out_specs(fx::P()));
  auto one = [](const fx::Array& x, const fx::Array& w) { return fx::sum(fx::tanh(x * w)); };
  check_close(g(x, w), one(x, w));
  auto jg = fx::jit(g);
  check_close(jg(x, w), one(x, w));
  check_close(jg(x * 2.f, w), one(x * 2.f, w));
  CHECK(jg.compilations() == 1);
  // grad through the shard_map: its transpose sums w's cotangent over "data", where w is replicated.
  auto [gx, gw] = fx::grad<0, 1>(g)(x, w);
  auto [hx, hw] = fx::grad<0, 1>(one)(x, w);
  check_close(gx, hx);
  check_close(gw, hw);
  check_close(fx::jit(fx::grad<1>(g))(x, w), hw);
  // vmap over a batch of x: the batch is a dimension no axis splits.
  const fx::Array xs = normal(5, {3, 2 * nd, 3 * nm});
  const fx::Array batched = fx::vmap(g, fx::in_axes(0, fx::none))(xs, w);
  REQUIRE(batched.shape() == fx::Shape{3});
  for (int64_t b = 0; b < 3; ++b) check_close(batched[b], one(xs[b], w));
}

TEST_CASE("shard_map: control flow inside the body and around the call") {
  const fx::Mesh m = fx::make_mesh({ndev()}, {"data"});
  const int64_t n = ndev();
  const fx::Array x = fx::astype(fx::reshape(fx::arange(2 * n), {n, 2}), fx::float32);
  auto body = [](const fx::Array& b) {
    fx::Array first = fx::cond(fx::axis_index("data") == 0, [&] { return b * 10.f; }, [&] { return -b; });
    fx::Array acc = fx::fori_loop(0, 2, [](const fx::Array&, const fx::Array& a) { return fx::psum(a, "data") * 0.5f; }, b);
    return std::pair{first, acc};
  };
  auto g = fx::shard_map(body, m, fx::in_specs(fx::P("data")), fx::out_specs(fx::P("data"), fx::P()));
  auto [first, acc] = g(x);
  std::vector<float> host = x.to_vector<float>(), want_first, col(2, 0.f);
  for (size_t i = 0; i < host.size(); ++i) want_first.push_back(i < 2 ? 10.f * host[i] : -host[i]);
  for (size_t i = 0; i < host.size(); ++i) col[i % 2] += host[i];
  CHECK(first.to_vector<float>() == want_first);
  // Two rounds of psum * 0.5: n/2 * (column sums) * 0.5 * n ... computed on the host.
  std::vector<float> want_acc{col[0] * 0.5f * float(n) * 0.5f, col[1] * 0.5f * float(n) * 0.5f};
  check_close(acc, fx::array(want_acc, {1, 2}));
  // shard_map inside fx::cond runs on the devices when the branch is taken.
  fx::Array chosen = fx::cond(fx::scalar(true), [&] { return g(x).first; }, [&] { return x; });
  CHECK(chosen.to_vector<float>() == want_first);
}

TEST_CASE("shard_map: errors name shard_map, the argument and the user's line") {
  const fx::Mesh m = fx::make_mesh({ndev()}, {"data"});
  auto id = [](const fx::Array& b) { return b; };
  if (ndev() > 1) {
    const std::string uneven =
        error_of([&] { fx::shard_map(id, m, fx::in_specs(fx::P("data")), fx::out_specs(fx::P("data")))(fx::ones({ndev() + 1})); });
    CHECK(uneven.find("ShapeError: shard_map at test_shard_map.cpp") == 0);
    CHECK(uneven.find("argument leaf 0") != std::string::npos);
    CHECK(uneven.find("'data' of size") != std::string::npos);
  }
  const std::string axis =
      error_of([&] { fx::shard_map(id, m, fx::in_specs(fx::P("model")), fx::out_specs(fx::P()))(fx::ones({4})); });
  CHECK(axis.find("ValueError: shard_map at test_shard_map.cpp") == 0);
  CHECK(axis.find("'model'") != std::string::npos);
  const std::string count = error_of([&] {
    fx::shard_map([](const fx::Array& a, const fx::Array&) { return a; }, m,
                  fx::in_specs(fx::P(), fx::P(), fx::P()), fx::out_specs(fx::P()))(fx::ones({2}), fx::ones({2}));
  });
  CHECK(count.find("in_specs has 3 entries for 2 arguments") != std::string::npos);
  const std::string unbound = error_of(
      [&] { fx::shard_map([](const fx::Array& b) { return fx::psum(b, "model"); }, m, fx::in_specs(fx::P()), fx::out_specs(fx::P()))(fx::ones({2})); });
  CHECK(unbound.find("'model' is not bound (bound here: 'data')") != std::string::npos);
}

namespace {
struct Mlp {
  fx::Array w1, b1, w2;
};
FLUXION_TREE(Mlp, w1, b1, w2);
}  // namespace

TEST_CASE("shard_map: a data-parallel training step equals the single-device step") {
  const fx::Mesh m = fx::make_mesh({ndev()}, {"data"});
  auto loss = [](const Mlp& p, const fx::Array& x, const fx::Array& y) {
    return fx::mean(fx::square(fx::matmul(fx::tanh(fx::matmul(x, p.w1) + p.b1), p.w2) - y));
  };
  auto sgd = [](const Mlp& p, const Mlp& g) { return fx::tree::map([](const fx::Array& a, const fx::Array& b) { return a - 0.1f * b; }, p, g); };
  auto step = fx::jit(fx::shard_map(
      [&](const Mlp& p, const fx::Array& x, const fx::Array& y) {
        return sgd(p, fx::tree::map([](const fx::Array& d) { return fx::pmean(d, "data"); }, fx::grad(loss)(p, x, y)));
      },
      m, fx::in_specs(fx::P(), fx::P("data"), fx::P("data")), fx::out_specs(fx::P())));
  auto single = fx::jit([&](const Mlp& p, const fx::Array& x, const fx::Array& y) { return sgd(p, fx::grad(loss)(p, x, y)); });
  Mlp a{normal(6, {5, 8}) * 0.3f, fx::zeros({8}), normal(7, {8, 2}) * 0.3f}, b = a;
  for (int s = 0; s < 3; ++s) {
    const fx::Array x = normal(10 + s, {4 * ndev(), 5}), y = normal(20 + s, {4 * ndev(), 2});
    a = step(a, x, y);
    b = single(b, x, y);
  }
  check_close(a.w1, b.w1, 1e-5);
  check_close(a.b1, b.b1, 1e-5);
  check_close(a.w2, b.w2, 1e-5);
  CHECK(a.w1.sharding() == fx::replicated(m));
}
