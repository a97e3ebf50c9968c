// gather (take) and scatter (at_set, at_add) under jit at every result rank from 0 to 4: operands of
// rank 1 to 4, indices of rank 0 to 2, every axis, against eager; and their gradients under jit.
// A rank-0 result once crashed the process in MLIR's vector lowering (fx-scalarize-rank0 fixed it).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <sstream>

namespace fx = fluxion;

namespace {

fx::Array ramp(const fx::Shape& shape, float scale) {
  std::vector<float> v(size_t(fx::AbstractArray{shape, fx::float32, false}.size()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * float(int(i * 7 % 23) - 11);
  return fx::array(v, shape);
}

// Indices of `shape` into an axis of length n, with repeats and one out-of-range value (clamped by
// take, dropped by scatter -- the same in eager and jit).
fx::Array indices(const fx::Shape& shape, int64_t n) {
  std::vector<int32_t> v(size_t(fx::AbstractArray{shape, fx::int32, false}.size()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = int32_t((i * 5 + 1) % size_t(n + 1));  // n itself is out of range
  if (v.empty()) return fx::scalar(int32_t(n > 1 ? 1 : 0));
  return shape.empty() ? fx::scalar(v[0] % int32_t(n)) : fx::array(v, shape);
}

void check_equal(const fx::Array& got, const fx::Array& want) {
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(w[i]).epsilon(1e-6));
}

}  // namespace

TEST_CASE("jit indexing: take, at_set and at_add at every result rank 0-4 match eager, and so do their gradients") {
  const std::vector<fx::Shape> operands = {{5}, {4, 3}, {3, 4, 2}, {2, 3, 2, 3}};
  const std::vector<fx::Shape> index_shapes = {{}, {3}, {2, 2}};
  int cases = 0;
  for (const fx::Shape& xs : operands)
    for (const fx::Shape& is : index_shapes)
      for (int64_t axis = 0; axis < int64_t(xs.size()); ++axis) {
        const int64_t rank = int64_t(xs.size()) - 1 + int64_t(is.size());
        if (rank > 4) continue;
        std::ostringstream what;
        what << "x " << fx::AbstractArray{xs, fx::float32, false}.str() << ", indices rank " << is.size() << ", axis " << axis;
        CAPTURE(what.str());
        const fx::Array x = ramp(xs, 0.25f);
        const fx::Array idx = indices(is, xs[size_t(axis)]);
        auto take = [axis](const fx::Array& x, const fx::Array& i) { return fx::take(x, i, axis) * 2.f; };
        const fx::Array taken = take(x, idx);
        CHECK(taken.ndim() == rank);
        check_equal(fx::jit(take)(x, idx), taken);
        const fx::Array upd = ramp(taken.shape(), 0.5f);
        auto set = [axis](const fx::Array& x, const fx::Array& i, const fx::Array& u) { return fx::at_set(x, i, u, axis); };
        auto add = [axis](const fx::Array& x, const fx::Array& i, const fx::Array& u) { return fx::at_add(x, i, u, axis); };
        check_equal(fx::jit(set)(x, idx, upd), set(x, idx, upd));
        check_equal(fx::jit(add)(x, idx, upd), add(x, idx, upd));
        // Reverse mode: gather's transpose is a scatter-add and scatter's a gather.
        auto loss = [axis](const fx::Array& x, const fx::Array& i, const fx::Array& u) {
          return fx::sum(fx::sin(fx::take(x, i, axis)) * u) + fx::sum(fx::at_add(x, i, u * u, axis));
        };
        auto [gx, gu] = fx::grad<0, 2>(loss)(x, idx, upd);
        auto [jx, ju] = fx::jit(fx::grad<0, 2>(loss))(x, idx, upd);
        check_equal(jx, gx);
        check_equal(ju, gu);
        ++cases;
      }
  CHECK(cases >= 20);
}
