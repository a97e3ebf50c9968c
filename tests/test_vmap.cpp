// vmap through the user API: in_axes/out_axes forms, trees, composition with itself, grad and jit,
// the shape of batched programs, and bad input. (Per-primitive rules: test_vmap_rules.cpp,
// test_vmap_indexing.cpp and the op-table driver test_vmap_optable.cpp.)
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <string>

namespace fx = fluxion;

namespace {
bool same(const fx::Array& a, const fx::Array& b, double tol = 1e-6) {
  if (!(a.shape() == b.shape())) return false;
  std::vector<double> x = fx::astype(a, fx::float64).to_vector<double>(), y = fx::astype(b, fx::float64).to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    if (std::fabs(x[i] - y[i]) > tol * (1 + std::fabs(y[i]))) return false;
  return true;
}
// The per-example loop vmap must agree with: f applied to slice i of each batched argument.
fx::Array slice_at(const fx::Array& x, int64_t axis, int64_t i) {
  return fx::squeeze(fx::slice(x, [&] {
                       std::vector<int64_t> s(size_t(x.ndim()), 0);
                       s[size_t(axis)] = i;
                       return s;
                     }(),
                     [&] {
                       std::vector<int64_t> l = x.shape().dims();
                       l[size_t(axis)] = i + 1;
                       return l;
                     }()),
                     fx::IntList{axis});
}
size_t count(const fx::Program& p, fx::Prim prim) {
  size_t n = 0;
  for (const fx::Eqn& e : p.eqns) n += e.prim == prim;
  return n;
}

struct Layer {
  fx::Array w, b;
};
FLUXION_TREE(Layer, w, b);
}  // namespace

TEST_CASE("vmap: in_axes forms agree with a loop") {
  auto f = [](const fx::Array& x, const fx::Array& y) { return fx::sin(x) * y + fx::sum(x); };
  fx::Array xs = fx::random::normal(fx::random::key(1), {4, 3}), y = fx::random::normal(fx::random::key(2), {3});
  fx::Array batched = fx::vmap(f, fx::in_axes(0, fx::none))(xs, y);
  std::vector<fx::Array> rows;
  for (int64_t i = 0; i < 4; ++i) rows.push_back(f(slice_at(xs, 0, i), y));
  CHECK(same(batched, fx::stack(rows)));
  // Batch along axis 1 of x (and -1 is the same axis), outputs along axis 1.
  fx::Array xt = fx::transpose(xs);
  CHECK(same(fx::vmap(f, fx::in_axes(1, fx::none), fx::out_axes(1))(xt, y), fx::transpose(fx::stack(rows))));
  CHECK(same(fx::vmap(f, fx::in_axes(-1, fx::none))(xt, y), fx::stack(rows)));
  // One in_axes value applies to every argument.
  fx::Array ys = fx::random::normal(fx::random::key(3), {4, 3});
  std::vector<fx::Array> both;
  for (int64_t i = 0; i < 4; ++i) both.push_back(f(slice_at(xs, 0, i), slice_at(ys, 0, i)));
  CHECK(same(fx::vmap(f)(xs, ys), fx::stack(both)));
  // Batch size 1.
  CHECK(fx::vmap(f)(fx::ones({1, 3}), fx::ones({1, 3})).shape() == fx::Shape{1, 3});
}

TEST_CASE("vmap: an explicit axis size when nothing is batched, and unbatched outputs") {
  auto f = [](const fx::Array& x) { return x * 2.f; };
  fx::Array r = fx::vmap(f, fx::in_axes(fx::none), fx::out_axes(0), fx::axis_size(5))(fx::ones({3}));
  CHECK(r.shape() == fx::Shape{5, 3});
  CHECK(fx::vmap([](const fx::Array& x) { return std::pair{x + 1.f, fx::scalar(7.f)}; }, fx::in_axes(0),
                 fx::out_axes(0, fx::none))(fx::ones({4, 2}))
            .second.shape() == fx::Shape{});
}

TEST_CASE("vmap: per-leaf in_axes over a struct argument") {
  Layer l{fx::random::normal(fx::random::key(4), {2, 3}), fx::random::normal(fx::random::key(5), {6, 3})};
  auto apply = [](const Layer& p, const fx::Array& x) { return fx::tanh(fx::matmul(x, p.w) + p.b); };
  fx::Array xs = fx::random::normal(fx::random::key(6), {6, 2});
  // w shared (not batched), b batched along 0, x batched along 0.
  fx::Array r = fx::vmap(apply, fx::in_axes(fx::leaf_axes({fx::none, 0}), 0))(l, xs);
  std::vector<fx::Array> rows;
  for (int64_t i = 0; i < 6; ++i) rows.push_back(apply(Layer{l.w, slice_at(l.b, 0, i)}, slice_at(xs, 0, i)));
  CHECK(same(r, fx::stack(rows)));
}

TEST_CASE("vmap: nested two levels deep") {
  auto f = [](const fx::Array& a, const fx::Array& b) { return fx::dot(a, b); };
  fx::Array as = fx::random::normal(fx::random::key(7), {3, 5}), bs = fx::random::normal(fx::random::key(8), {4, 5});
  // Outer product of dots: r[i, j] = dot(as[i], bs[j]).
  auto inner = [&](const fx::Array& a) { return fx::vmap(f, fx::in_axes(fx::none, 0))(a, bs); };
  fx::Array r = fx::vmap(inner)(as);
  CHECK(same(r, fx::matmul(as, fx::transpose(bs))));
  fx::Program p = fx::make_ir(fx::vmap(inner))(as);
  CHECK(count(p, fx::Prim::dot_general) == 1);  // both levels fold into one contraction
}

TEST_CASE("vmap: per-example gradients (vmap of grad) agree with a loop of grad; grad of vmap") {
  auto loss = [](const Layer& p, const fx::Array& x, const fx::Array& y) {
    return fx::sum(fx::square(fx::tanh(fx::matmul(x, p.w) + p.b) - y));
  };
  Layer p{fx::random::normal(fx::random::key(9), {3, 2}), fx::zeros({2})};
  fx::Array xs = fx::random::normal(fx::random::key(10), {5, 3}), ys = fx::random::normal(fx::random::key(11), {5, 2});
  Layer per = fx::vmap(fx::grad(loss), fx::in_axes(fx::none, 0, 0))(p, xs, ys);
  CHECK(per.w.shape() == fx::Shape{5, 3, 2});
  for (int64_t i = 0; i < 5; ++i) {
    Layer g = fx::grad(loss)(p, slice_at(xs, 0, i), slice_at(ys, 0, i));
    CHECK(same(slice_at(per.w, 0, i), g.w, 1e-5));
    CHECK(same(slice_at(per.b, 0, i), g.b, 1e-5));
  }
  // grad of a vmapped (batched) loss equals the sum of the per-example gradients.
  auto batch_loss = [&](const Layer& q) { return fx::sum(fx::vmap(loss, fx::in_axes(fx::none, 0, 0))(q, xs, ys)); };
  Layer g = fx::grad(batch_loss)(p);
  CHECK(same(g.w, fx::sum(per.w, 0), 1e-5));
}

TEST_CASE("vmap: composes with jit both ways") {
  auto f = [](const fx::Array& x) { return fx::exp(x) * 2.f - x; };
  fx::Array xs = fx::random::normal(fx::random::key(12), {8, 4});
  fx::Array want = fx::vmap(f)(xs);
  auto jv = fx::jit(fx::vmap(f));
  CHECK(same(jv(xs), want));
  CHECK(same(fx::vmap(fx::jit(f))(xs), want));
  CHECK(jv.compilations() == 1);
}

TEST_CASE("vmap: batched programs move batch dimensions only when needed") {
  auto f = [](const fx::Array& x, const fx::Array& y) { return fx::tanh(x * y + 1.f) / y; };
  fx::Program p = fx::make_ir(fx::vmap(f))(fx::ones({8, 3}), fx::ones({8, 3}));
  CHECK(count(p, fx::Prim::transpose) == 0);
  CHECK(p.eqns.size() == fx::make_ir(f)(fx::ones({3}), fx::ones({3})).eqns.size());
  // A batched matmul stays one dot_general (the batch joins its batch dimensions).
  fx::Program m = fx::make_ir(fx::vmap([](const fx::Array& a, const fx::Array& b) { return fx::matmul(a, b); }))(
      fx::ones({4, 2, 3}), fx::ones({4, 3, 5}));
  CHECK(count(m, fx::Prim::dot_general) == 1);
  CHECK(count(m, fx::Prim::transpose) == 0);
  fx::verify(m);
}

TEST_CASE("vmap errors: mismatched sizes, bad axes, bad in_axes trees") {
  auto f = [](const fx::Array& x, const fx::Array& y) { return x + y; };
  try {
    fx::vmap(f)(fx::ones({3, 2}), fx::ones({4, 2}));
    FAIL("no error");
  } catch (const fx::ShapeError& e) {
    std::string m = e.what();
    CHECK(m.find("argument 0 axis 0 has size 3") != std::string::npos);
    CHECK(m.find("argument 1 axis 0 has size 4") != std::string::npos);
    CHECK(m.find("test_vmap.cpp") != std::string::npos);
  }
  try {
    fx::vmap(f, fx::in_axes(2, 0))(fx::ones({3, 2}), fx::ones({3, 2}));
    FAIL("no error");
  } catch (const fx::ShapeError& e) {
    CHECK(std::string(e.what()).find("argument 0") != std::string::npos);
  }
  CHECK_THROWS_AS(fx::vmap(f, fx::in_axes(0, 0, 0))(fx::ones({3}), fx::ones({3})), fx::ValueError);
  Layer l{fx::ones({2, 2}), fx::ones({2})};
  CHECK_THROWS_AS(fx::vmap([](const Layer& p) { return p.w; }, fx::in_axes(fx::leaf_axes({0})))(l), fx::ValueError);
  CHECK_THROWS_AS(fx::vmap([](const fx::Array& x) { return x; }, fx::in_axes(fx::none))(fx::ones({2})), fx::ValueError);
}
