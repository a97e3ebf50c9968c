// Focused tests of the shape and indexing ops (api/shape_ops.h, api/indexing.h; prims/shape.cpp,
// slicing.cpp, indexing.cpp): what the op table (tests/op_table_shape.cpp) cannot express --
// api.md's examples, programs that must stay minimal, numpy's rejections, and params only a
// hand-written program can hold.
#include <doctest/doctest.h>

#include <fluxion.h>

namespace fx = fluxion;

TEST_CASE("shape ops: api.md examples") {
  fx::Array a = fx::array({1.f, 2.f, 3.f});
  fx::Array m = fx::array({{1.0, 2.0}, {3.0, 4.0}});
  CHECK(fx::reshape(m, {4}).to_vector<double>() == std::vector<double>{1, 2, 3, 4});
  CHECK(fx::reshape(m, {-1, 1}).shape() == fx::Shape{4, 1});
  CHECK(fx::transpose(m).to_vector<double>() == std::vector<double>{1, 3, 2, 4});
  CHECK(fx::transpose(m, {1, 0}).to_vector<double>() == std::vector<double>{1, 3, 2, 4});
  CHECK(fx::expand_dims(a, 0).shape() == fx::Shape{1, 3});
  CHECK(fx::squeeze(fx::expand_dims(a, 0), {0}).shape() == fx::Shape{3});
  CHECK(fx::concatenate({a, a}, 0).to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});
  fx::Array st = fx::stack({a, a}, 1);
  CHECK(st.shape() == fx::Shape{3, 2});
  CHECK(st.to_vector<float>() == std::vector<float>{1, 1, 2, 2, 3, 3});
  CHECK(fx::slice(m, {0, 1}, {2, 2}).to_vector<double>() == std::vector<double>{2, 4});
  CHECK(fx::take(a, fx::array({2, 0}), 0).to_vector<float>() == std::vector<float>{3, 1});
  CHECK(fx::dynamic_slice(a, {fx::scalar(1)}, {2}).to_vector<float>() == std::vector<float>{2, 3});
  CHECK(fx::dynamic_update_slice(a, fx::ones({1}), {fx::scalar(0)}).to_vector<float>() ==
        std::vector<float>{1, 2, 3});
  CHECK(fx::dynamic_update_slice(a, fx::zeros({2}), {fx::scalar(5)}).to_vector<float>() ==
        std::vector<float>{1, 0, 0});
  CHECK(fx::pad(a, {{1, 2}}).to_vector<float>() == std::vector<float>{0, 1, 2, 3, 0, 0});
}

TEST_CASE("shape ops: no-ops add no eqns, reshape always binds") {
  fx::Array m = fx::ones({2, 3});
  auto count = [&](auto f) { return fx::make_ir(f)(m).eqns.size(); };
  CHECK(count([](const fx::Array& x) { return fx::transpose(x, {0, 1}); }) == 0);
  CHECK(count([](const fx::Array& x) { return fx::squeeze(x); }) == 0);
  CHECK(count([](const fx::Array& x) { return fx::flip(x, fx::IntList{}); }) == 0);
  CHECK(count([](const fx::Array& x) { return fx::pad(x, {{0, 0}}); }) == 0);
  CHECK(count([](const fx::Array& x) { return fx::reshape(x, {2, 3}); }) == 1);
  CHECK(count([](const fx::Array& x) { return fx::swapaxes(x, 0, 1); }) == 1);
}

TEST_CASE("shape ops: axes and values that numpy rejects") {
  fx::Array m = fx::ones({2, 3});
  CHECK_THROWS_AS(fx::reshape(m, {-1, -1}), fx::ShapeError);
  CHECK_THROWS_AS(fx::reshape(m, {-2, 3}), fx::ShapeError);
  CHECK_THROWS_AS(fx::reshape(m, {0, -1}), fx::ShapeError);
  CHECK_THROWS_AS(fx::transpose(m, {0, 0}), fx::ShapeError);
  CHECK_THROWS_AS(fx::expand_dims(m, 3), fx::ShapeError);
  CHECK(fx::expand_dims(m, -1).shape() == fx::Shape{2, 3, 1});
  CHECK(fx::expand_dims(m, {0, -1}).shape() == fx::Shape{1, 2, 3, 1});
  CHECK_THROWS_AS(fx::pad(m, {{-1, 0}}), fx::ValueError);
  CHECK_THROWS_AS(fx::pad(m, {{1, 0}}, fx::ones({2})), fx::ShapeError);
  CHECK_THROWS_AS(fx::slice(m, {0, 0}, {2, 3}, {1, 0}), fx::ShapeError);
  CHECK_THROWS_AS(fx::concatenate({}, 0), fx::ValueError);
  CHECK_THROWS_AS(fx::concatenate({fx::scalar(1.f), fx::scalar(2.f)}, 0), fx::ShapeError);
  CHECK_THROWS_AS(fx::tile(m, {-1}), fx::ValueError);
  CHECK_THROWS_AS(fx::dynamic_slice(m, {0}, {1, 1}), fx::ShapeError);
  // A C++ integer is an index too.
  CHECK(fx::dynamic_slice(m, {1, 1}, {1, 2}).shape() == fx::Shape{1, 2});
  CHECK(fx::take(fx::arange(5), 7).item<int32_t>() == 4);
  CHECK(fx::at_set(fx::arange(3), 1, 9).to_vector<int32_t>() == std::vector<int32_t>{0, 9, 2});
  CHECK(fx::at_add(fx::zeros({3}), fx::array({0, 0, 2}), 1.f).to_vector<float>() == std::vector<float>{2, 0, 1});
}

TEST_CASE("shape ops: an int8 index into a long axis wraps without overflow") {
  fx::Array x = fx::arange(300);
  fx::Array i = fx::array(std::vector<int8_t>{-1, -100});
  CHECK(fx::take(x, i, 0).to_vector<int32_t>() == std::vector<int32_t>{299, 200});
  // Traced indices are wrapped by staged ops, widened first.
  fx::Program p = fx::make_ir([](const fx::Array& a, const fx::Array& k) { return fx::take(a, k, 0); })(x, i);
  CHECK(fx::eval(p, {x, i})[0].to_vector<int32_t>() == std::vector<int32_t>{299, 200});
}

// The pad primitive's own checks (its values: the "pad primitive" entries of the op table).
TEST_CASE("pad primitive: malformed configs and padding values are rejected") {
  fx::Array x = fx::ones({3});
  const fx::Array v = fx::scalar(0.f);
  CHECK_THROWS_AS(fx::bind1(fx::Prim::pad, {x, v}, fx::Params{{"padding_config", std::vector<int64_t>{-2, -2, 0}}}, {}),
                  fx::ShapeError);
  CHECK_THROWS_AS(fx::bind1(fx::Prim::pad, {x, v}, fx::Params{{"padding_config", std::vector<int64_t>{0, 0, -1}}}, {}),
                  fx::ShapeError);
  CHECK_THROWS_AS(fx::bind1(fx::Prim::pad, {x, fx::scalar(0.0)}, fx::Params{{"padding_config", std::vector<int64_t>{0, 0, 0}}}, {}),
                  fx::TypeError);
}

// Checks the primitive-level rules that the API never lets through, so a hand-written or parsed
// program with them is rejected rather than run.
TEST_CASE("shape and indexing primitives reject malformed params") {
  fx::Array m = fx::ones({2, 3});
  fx::Array i0 = fx::scalar(0);
  auto bind = [](fx::Prim p, std::vector<fx::Array> in, const fx::Params& params) {
    return fx::bind1(p, in, params, {});
  };
  using L = std::vector<int64_t>;
  CHECK_THROWS_AS(bind(fx::Prim::reshape, {m}, {{"new_sizes", L{5}}}), fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::reshape, {m}, {{"new_sizes", L{-6, -1}}}), fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::transpose, {m}, {{"permutation", L{1, 1}}}), fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::squeeze, {m}, {{"dimensions", L{0}}}), fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::rev, {m}, {{"dimensions", L{2}}}), fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::concatenate, {m, fx::ones({2, 3}, fx::float64)}, {{"dimension", int64_t(0)}}),
                  fx::TypeError);
  CHECK_THROWS_AS(bind(fx::Prim::slice, {m},
                       {{"start_indices", L{1, 0}}, {"limit_indices", L{0, 3}}, {"strides", L{1, 1}}}),
                  fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::dynamic_slice, {m, i0}, {{"slice_sizes", L{1, 1}}}), fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::dynamic_update_slice, {m, fx::ones({1, 1}, fx::float64), i0, i0}, {}), fx::TypeError);
  CHECK_THROWS_AS(bind(fx::Prim::gather, {m, fx::array({0})}, {{"axis", int64_t(2)}}), fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::scatter, {m, fx::array({0}), fx::ones({2, 2})}, {{"axis", int64_t(1)}}),
                  fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::scatter_add, {m, fx::array({0.f}), fx::ones({2, 1})}, {{"axis", int64_t(1)}}),
                  fx::TypeError);
  // Slices with absent strides step by one.
  CHECK(bind(fx::Prim::slice, {fx::arange(5)}, {{"start_indices", L{1}}, {"limit_indices", L{4}}})
            .to_vector<int32_t>() == std::vector<int32_t>{1, 2, 3});
  // Scatter with a repeated index: the last update in row-major order wins.
  CHECK(bind(fx::Prim::scatter, {fx::zeros({2}), fx::array({1, 1}), fx::array({5.f, 7.f})}, {{"axis", int64_t(0)}})
            .to_vector<float>() == std::vector<float>{0, 7});
}

