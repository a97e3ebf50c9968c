// Subscripts (api/subscript.h): x[...] and x.at(...).set/add/mul/min/max against host loops
// written from numpy's rules; their gradients against finite differences; jit against eager; vmap
// against a loop; errors that name the op and the line.
#include <doctest/doctest.h>

#include <fluxion.h>

#include <string>

namespace fx = fluxion;

namespace {
// 0, 1, ..., n-1 as float64 of `shape`.
fx::Array counting(const fx::Shape& s) { return fx::reshape(fx::arange(0, int(s.numel()), 1, fx::float64), s); }
std::vector<double> values(const fx::Array& a) { return a.to_vector<double>(); }
}  // namespace

TEST_CASE("x[i], x[{i, j}], slices: numpy's results, one slice and a reshape") {
  fx::Array x = counting({3, 4});  // [[0 1 2 3] [4 5 6 7] [8 9 10 11]]
  CHECK(values(x[1]) == std::vector<double>{4, 5, 6, 7});
  CHECK(values(x[-1]) == std::vector<double>{8, 9, 10, 11});
  CHECK(x[{1, 2}].shape() == fx::Shape{});
  CHECK(x[{1, 2}].item<double>() == 6);
  CHECK(values(x[{fx::colon, 0}]) == std::vector<double>{0, 4, 8});
  CHECK(values(x[{fx::Slice(1, {}), fx::Slice(0, 4, 2)}]) == std::vector<double>{4, 6, 8, 10});
  CHECK(values(x[{0, fx::Slice({}, {}, -1)}]) == std::vector<double>{3, 2, 1, 0});
  CHECK(values(x[{fx::Slice(-2, {}), -1}]) == std::vector<double>{7, 11});
  CHECK(x[fx::Slice(5, 9)].shape() == fx::Shape{0, 4});
  auto rows = [](const fx::Array& a) { return a[{1, fx::Slice(1, 3)}]; };
  fx::Program p = fx::make_ir(rows)(x);
  CHECK(p.eqns.size() == 2);  // slice + reshape
}

TEST_CASE("index arrays: numpy's advanced indexing, clamped reads") {
  fx::Array x = counting({3, 4});
  fx::Array i = fx::array({2, 0, -1});
  CHECK(values(x[i]) == values(fx::take(x, fx::array({2, 0, 2}), 0)));
  CHECK(values(x[{i, 1}]) == std::vector<double>{9, 1, 9});
  CHECK(values(x[{fx::colon, fx::array({3, 0})}]) == std::vector<double>{3, 0, 7, 4, 11, 8});
  // Two index arrays broadcast together: the pairs (r[k], c[k]).
  fx::Array r = fx::array({{0}, {2}}), c = fx::array({1, 3});
  CHECK(x[{r, c}].shape() == fx::Shape{2, 2});
  CHECK(values(x[{r, c}]) == std::vector<double>{1, 3, 9, 11});
  // Advanced entries split by a slice: their dims go in front (numpy).
  fx::Array y = counting({2, 3, 4});
  fx::Array z = y[{fx::array({1, 0}), fx::colon, fx::array({3, 2})}];
  CHECK(z.shape() == fx::Shape{2, 3});
  CHECK(values(z) == std::vector<double>{15, 19, 23, 2, 6, 10});
  // Out of range reads clamp (JAX): 7 reads row 2.
  CHECK(values(x[{fx::array({7}), 0}]) == std::vector<double>{8});
  // A traced index under jit: one compile serves every index value.
  auto pick = [](const fx::Array& a, const fx::Array& k) { return a[{k, k}]; };
  auto jpick = fx::jit(pick);
  for (int k = 0; k < 3; ++k) CHECK(jpick(x, fx::scalar(k)).item<double>() == 5.0 * k);
  CHECK(jpick.compilations() == 1);
}

TEST_CASE("x.at(...).set/add/mul/min/max: functional updates; repeats combine") {
  fx::Array x = fx::array({1.0, 2.0, 3.0, 4.0});
  fx::Array i = fx::array({0, 2, 0, 9});  // 0 twice; 9 is out of range: dropped
  fx::Array v = fx::array({10.0, 20.0, 30.0, 40.0});
  CHECK(values(x.at(i).add(v)) == std::vector<double>{41, 2, 23, 4});
  CHECK(values(x.at(i).mul(v)) == std::vector<double>{300, 2, 60, 4});
  CHECK(values(x.at(i).min(fx::array({-1.0, 5.0, -3.0, 0.0}))) == std::vector<double>{-3, 2, 3, 4});
  CHECK(values(x.at(i).max(v)) == std::vector<double>{30, 2, 20, 4});
  std::vector<double> s = values(x.at(i).set(v));
  CHECK((s[0] == 10 || s[0] == 30));
  CHECK(s[2] == 20);
  CHECK(values(x) == std::vector<double>{1, 2, 3, 4});  // unchanged
  // Static entries and slices; v broadcasts to what x[...] selects.
  fx::Array m = counting({2, 3});
  CHECK(values(m.at({fx::colon, fx::Slice(0, 2)}).set(-1.0)) == std::vector<double>{-1, -1, 2, -1, -1, 5});
  CHECK(values(m.at({1, -1}).mul(10.0)) == std::vector<double>{0, 1, 2, 3, 4, 50});
  CHECK(values(m.at(fx::array({1, 1})).add(fx::array({1.0, 2.0, 3.0}))) == std::vector<double>{0, 1, 2, 5, 8, 11});
  // The where form: a boolean mask.
  CHECK(values(m.at(m > 2.0).set(0.0)) == std::vector<double>{0, 1, 2, 0, 0, 0});
  CHECK(values(m.at(m > 2.0).max(4.5)) == std::vector<double>{0, 1, 2, 4.5, 4.5, 5});
  CHECK(values(m.at(fx::array({{true}, {false}})).add(1.0)) == std::vector<double>{1, 2, 3, 3, 4, 5});
}

TEST_CASE("subscripts differentiate, batch and compile") {
  fx::Array x = fx::array({0.5, -1.0, 2.0, 1.5});
  fx::Array i = fx::array({3, 1, 3});
  auto f = [&](const fx::Array& a) {
    fx::Array b = a.at(i).mul(fx::array({2.0, 3.0, 0.5}));  // a[3] * 2 * 0.5, a[1] * 3
    return fx::sum(fx::sin(b.at(0).max(a[2]))) + fx::sum(a[{fx::Slice(1, 3)}] * a[-1]);
  };
  fx::Array g = fx::grad(f)(x);
  const double h = 1e-6;
  for (int k = 0; k < 4; ++k) {
    fx::Array e = fx::zeros({4}, fx::float64).at(k).set(h);
    const double fd = (f(x + e).item<double>() - f(x - e).item<double>()) / (2 * h);
    CHECK(g[k].item<double>() == doctest::Approx(fd).epsilon(1e-6));
  }
  CHECK(fx::jit(f)(x).item<double>() == doctest::Approx(f(x).item<double>()).epsilon(1e-12));
  fx::Array jg = fx::jit(fx::grad(f))(x);
  for (int k = 0; k < 4; ++k) CHECK(jg[k].item<double>() == doctest::Approx(g[k].item<double>()).epsilon(1e-12));
  // vmap over x and over the index: against a loop.
  fx::Array xs = fx::stack({x, 2.0 * x, -x});
  fx::Array ks = fx::array({0, 3, 2});
  auto h2 = [](const fx::Array& a, const fx::Array& k) { return a.at(k).add(1.0)[{fx::Slice(0, 3)}] * a[k]; };
  fx::Array batched = fx::vmap(h2)(xs, ks);
  for (int b = 0; b < 3; ++b)
    CHECK(values(batched[b]) == values(h2(xs[b], ks[b])));
}

TEST_CASE("subscript errors name the op, the operand and the line") {
  fx::Array x = fx::zeros({3, 4});
  auto message = [](auto call) -> std::string {
    try {
      call();
    } catch (const fx::Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  const int line = __LINE__ + 1;
  std::string m = message([&] { (void)x[{1, 7}]; });
  CHECK(m.find("ShapeError: getitem(f32[3,4]) at test_subscript.cpp:" + std::to_string(line)) == 0);
  CHECK(m.find("index 7 is out of bounds for axis 1 of size 4") != std::string::npos);
  CHECK(message([&] { (void)x[{0, 0, 0}]; }).find("too many indices (3)") != std::string::npos);
  CHECK(message([&] { (void)x[x > 0.f]; }).find("TypeError: getitem") == 0);
  CHECK(message([&] { (void)x[fx::array({0.5f})]; }).find("index arrays must be integers") != std::string::npos);
  CHECK(message([&] { (void)x[fx::Slice(0, 3, 0)]; }).find("slice step must not be zero") != std::string::npos);
}
