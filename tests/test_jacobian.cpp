// Jacobians over trees (transforms/jacobian.h): argument and output trees, argnums, the shapes JAX
// gives, hessian of a struct of parameters; forward against reverse mode and against the
// closed-form derivative; jit and vmap of them; errors.
#include <doctest/doctest.h>

#include <fluxion.h>

#include "tests/test_helpers.h"

#include <cmath>

namespace fx = fluxion;
using test_helpers::max_abs_diff;

namespace {
struct Lin {
  fx::Array w, b;
};
FLUXION_TREE(Lin, w, b);


// y = [w.x + b, b * sum(tanh w)]: d y / d w = [x; b (1 - tanh^2 w)], d y / d b = [1, sum tanh w],
// d y / d x = [w; 0].
fx::Array model(const Lin& p, const fx::Array& x) {
  return fx::stack({fx::sum(p.w * x) + p.b, p.b * fx::sum(fx::tanh(p.w))});
}

Lin params() { return {fx::array({0.3, -0.7, 1.1}), fx::scalar(0.5)}; }
fx::Array input() { return fx::array({2.0, -1.0, 0.25}); }
}  // namespace

TEST_CASE("jacrev and jacfwd of a struct argument: a struct of blocks out.shape + leaf.shape") {
  Lin p = params();
  fx::Array x = input();
  Lin jr = fx::jacrev(model)(p, x);
  Lin jf = fx::jacfwd(model)(p, x);
  CHECK(jr.w.shape() == fx::Shape{2, 3});
  CHECK(jr.b.shape() == fx::Shape{2});
  fx::Array sech2 = 1.0 - fx::square(fx::tanh(p.w));
  fx::Array dw = fx::stack({x, p.b * sech2});
  fx::Array db = fx::stack({fx::scalar(1.0), fx::sum(fx::tanh(p.w))});
  CHECK(max_abs_diff(jr.w, dw) < 1e-12);
  CHECK(max_abs_diff(jr.b, db) < 1e-12);
  CHECK(max_abs_diff(jf.w, dw) < 1e-12);
  CHECK(max_abs_diff(jf.b, db) < 1e-12);
}

TEST_CASE("jacrev<0, 1> and jacfwd<1>: argnums choose the arguments; several give a tuple") {
  Lin p = params();
  fx::Array x = input();
  auto [jp, jx] = fx::jacrev<0, 1>(model)(p, x);
  CHECK(jp.w.shape() == fx::Shape{2, 3});
  CHECK(jx.shape() == fx::Shape{2, 3});
  fx::Array dx = fx::stack({p.w, fx::zeros({3}, fx::float64)});
  CHECK(max_abs_diff(jx, dx) < 1e-12);
  CHECK(max_abs_diff(fx::jacfwd<1>(model)(p, x), dx) < 1e-12);
  auto [fp, fxx] = fx::jacfwd<0, 1>(model)(p, x);
  CHECK(max_abs_diff(fp.b, jp.b) < 1e-12);
  CHECK(max_abs_diff(fxx, jx) < 1e-12);
}

TEST_CASE("output trees: each output leaf becomes the argument's tree") {
  auto f = [](const fx::Array& x) { return std::pair{fx::sin(x) * 2.0, fx::sum(x * x)}; };
  fx::Array x = input();
  auto [a, b] = fx::jacfwd(f)(x);
  auto [ra, rb] = fx::jacrev(f)(x);
  CHECK(a.shape() == fx::Shape{3, 3});
  CHECK(b.shape() == fx::Shape{3});
  CHECK(max_abs_diff(a, fx::eye(3, fx::float64) * (2.0 * fx::cos(x))) < 1e-12);
  CHECK(max_abs_diff(b, 2.0 * x) < 1e-12);
  CHECK(max_abs_diff(ra, a) < 1e-12);
  CHECK(max_abs_diff(rb, b) < 1e-12);
  // An output vector of leaves and a tree argument: a vector of structs.
  auto g = [](const Lin& p) { return std::vector<fx::Array>{p.w * p.b, fx::sum(p.w)}; };
  std::vector<Lin> j = fx::jacrev(g)(params());
  REQUIRE(j.size() == 2);
  CHECK(j[0].w.shape() == fx::Shape{3, 3});
  CHECK(j[0].b.shape() == fx::Shape{3});
  CHECK(j[1].w.shape() == fx::Shape{3});
  CHECK(max_abs_diff(j[0].b, params().w) < 1e-12);
}

TEST_CASE("hessian of a struct of parameters: H[&Lin::w].b is d2 f / dw db") {
  // f = b^2 sum(w^3): d2f/dw2 = diag(6 b w), d2f/dwdb = 6 b w^2... written out below.
  auto f = [](const Lin& p) { return p.b * p.b * fx::sum(p.w * p.w * p.w); };
  Lin p = params();
  fx::tree::StructOf<Lin, Lin> h = fx::hessian(f)(p);
  const double b = 0.5;
  fx::Array w = p.w;
  CHECK(max_abs_diff(h[&Lin::w].w, fx::eye(3, fx::float64) * (6.0 * b * b * w)) < 1e-12);
  CHECK(max_abs_diff(h[&Lin::w].b, 6.0 * b * w * w) < 1e-12);
  CHECK(max_abs_diff(h[&Lin::b].w, 6.0 * b * w * w) < 1e-12);
  CHECK(max_abs_diff(h[&Lin::b].b, 2.0 * fx::sum(w * w * w)) < 1e-12);
  // The result is a tree: four leaves, in field order.
  CHECK(fx::tree::leaves(h).size() == 4);
  // hessian over two arguments: ((H00, H01), (H10, H11)) as in JAX.
  auto g = [](const fx::Array& a, const fx::Array& c) { return fx::sum(a * a * c); };
  fx::Array a = input(), c = fx::array({1.0, 2.0, 3.0});
  auto [h0, h1] = fx::hessian<0, 1>(g)(a, c);
  CHECK(max_abs_diff(std::get<0>(h0), fx::eye(3, fx::float64) * (2.0 * c)) < 1e-12);
  CHECK(max_abs_diff(std::get<1>(h0), fx::eye(3, fx::float64) * (2.0 * a)) < 1e-12);
  CHECK(max_abs_diff(std::get<1>(h1), fx::zeros({3, 3}, fx::float64)) < 1e-12);
}

TEST_CASE("jacobians over trees compose with jit and vmap; jvp and vjp take trees") {
  Lin p = params();
  fx::Array x = input();
  Lin eager = fx::jacrev(model)(p, x);
  Lin compiled = fx::jit(fx::jacrev(model))(p, x);
  CHECK(max_abs_diff(compiled.w, eager.w) < 1e-12);
  CHECK(max_abs_diff(compiled.b, eager.b) < 1e-12);
  fx::Array xs = fx::stack({x, 2.0 * x});
  Lin batched = fx::vmap(fx::jacfwd(model), fx::in_axes(fx::none, 0))(p, xs);
  CHECK(batched.w.shape() == fx::Shape{2, 2, 3});
  CHECK(max_abs_diff(fx::slice(batched.w, {1, 0, 0}, {2, 2, 3}),
                     fx::expand_dims(fx::jacfwd(model)(p, 2.0 * x).w, 0)) < 1e-12);
  // jvp with a struct tangent, vjp returning a tuple of (struct, array) cotangents.
  Lin t{fx::array({1.0, 0.0, 0.0}), fx::scalar(0.0)};
  auto [y, yt] = fx::jvp(model, std::tuple{p, x}, std::tuple{t, fx::zeros({3}, fx::float64)});
  CHECK(max_abs_diff(yt, fx::reshape(fx::slice(eager.w, {0, 0}, {2, 1}), {2})) < 1e-12);
  auto [y2, pull] = fx::vjp(model, p, x);
  auto [cp, cx] = pull(fx::array({1.0, 0.0}));
  CHECK(max_abs_diff(cp.w, x) < 1e-12);
  CHECK(max_abs_diff(cx, p.w) < 1e-12);
}

TEST_CASE("jacobian errors name the transformation and the line") {
  fx::Array x = input();
  auto idx = [](const fx::Array& a, const fx::Array& i) { return a * fx::astype(i, fx::float64); };
  CHECK_THROWS_AS(fx::jacfwd<1>(idx)(x, fx::array({1, 2, 3})), fx::TypeError);
  auto to_int = [](const fx::Array& a) { return fx::astype(a, fx::int32); };
  try {
    fx::jacrev(to_int)(x);
    FAIL("expected a TypeError");
  } catch (const fx::TypeError& e) {
    CHECK(std::string(e.what()).find("jacrev at test_jacobian.cpp:") != std::string::npos);
  }
}
