// Focused tests of the reductions (api/reductions.h, prims/reduce.cpp): what the op table
// (tests/op_table_reduce.cpp) cannot express -- api.md's examples, jax.numpy's dtypes, identities
// of empty reductions, and the primitives' own params and integer wrap-around.
#include <doctest/doctest.h>

#include <fluxion.h>

#include <cmath>
#include <limits>

namespace fx = fluxion;

TEST_CASE("reductions: api.md examples") {
  fx::Array m = fx::array({{1.0, 2.0}, {3.0, 4.0}});
  CHECK(fx::sum(m).item<double>() == 10.0);
  CHECK(fx::sum(m, {0}).to_vector<double>() == std::vector<double>{4, 6});
  fx::Array mk = fx::mean(m, {1}, /*keepdims=*/true);
  CHECK(mk.shape() == fx::Shape{2, 1});
  CHECK(mk.to_vector<double>() == std::vector<double>{1.5, 3.5});
  CHECK(fx::max(m).item<double>() == 4.0);
  fx::Array am = fx::argmax(m, 1);
  CHECK(am.dtype() == fx::int32);
  CHECK(am.to_vector<int32_t>() == std::vector<int32_t>{1, 1});
  fx::Array l = fx::logsumexp(m, {1});
  CHECK(l.to_vector<double>()[0] == doctest::Approx(std::log(std::exp(1.0) + std::exp(2.0))));
  fx::Array a = fx::array({1.f, 2.f, 3.f});
  CHECK(fx::sum(a).item<float>() == 6.f);
  CHECK(fx::argmin(m).item<int32_t>() == 0);  // flattening binds reshape
}

TEST_CASE("reductions: dtypes follow jax.numpy") {
  fx::Array b = fx::array(std::vector<bool>{true, true, false, true});
  CHECK(fx::sum(b).dtype() == fx::int32);
  CHECK(fx::sum(b).item<int32_t>() == 3);
  fx::Array i8 = fx::astype(fx::array(std::vector<int32_t>(200, 100)), fx::int8);
  CHECK(fx::sum(i8).dtype() == fx::int32);
  CHECK(fx::sum(i8).item<int32_t>() == 20000);  // no int8 wrap-around
  CHECK(fx::sum(fx::astype(i8, fx::uint8)).dtype() == fx::uint32);
  CHECK(fx::mean(fx::array(std::vector<int32_t>{1, 2})).dtype() == fx::float32);
  CHECK(fx::mean(fx::array(std::vector<int32_t>{1, 2})).item<float>() == 1.5f);
  CHECK(fx::sum(fx::zeros({3}, fx::float16)).dtype() == fx::float16);
  CHECK(fx::max(b).dtype() == fx::bool_);
  CHECK(fx::cumsum(b).dtype() == fx::int32);
  // float16 accumulates in float32: 4096 ones sum exactly (a float16 running sum stalls at 2048).
  CHECK(fx::sum(fx::ones({4096}, fx::float16)).item<float>() == 4096.f);
  // float32 accumulates in float64: 1e8 + many small terms keeps them.
  std::vector<float> xs(10001, 1.f);
  xs[0] = 1e8f;
  CHECK(fx::sum(fx::array(xs)).item<float>() == 1e8f + 10000.f);
  // Weakly typed scalars reduce to weak scalars.
  CHECK(fx::sum(2.5).weak_type());
}

TEST_CASE("reductions: empty axes, identities and logsumexp edge cases") {
  fx::Array e = fx::zeros({0, 3});
  CHECK(fx::sum(e, {0}).to_vector<float>() == std::vector<float>{0, 0, 0});
  CHECK(fx::prod(e, {0}).to_vector<float>() == std::vector<float>{1, 1, 1});
  CHECK(fx::all(e).item<bool>());
  CHECK(!fx::any(e).item<bool>());
  CHECK(std::isnan(fx::mean(e).item<float>()));
  // The primitives themselves give the identities for an empty axis (lax semantics).
  fx::Params ax0{{"axes", fx::IntList{0}}};
  auto mx = fx::bind1(fx::Prim::reduce_max, {e}, ax0, {}).to_vector<float>();
  auto mn = fx::bind1(fx::Prim::reduce_min, {e}, ax0, {}).to_vector<float>();
  CHECK(mx[0] == -std::numeric_limits<float>::infinity());
  CHECK(mn[2] == std::numeric_limits<float>::infinity());
  fx::Array ei = fx::zeros({0}, fx::int32);
  CHECK(fx::bind1(fx::Prim::reduce_max, {ei}, ax0, {}).item<int32_t>() == std::numeric_limits<int32_t>::min());
  CHECK(fx::bind1(fx::Prim::reduce_min, {ei}, ax0, {}).item<int32_t>() == std::numeric_limits<int32_t>::max());
  // logsumexp: huge values do not overflow, rows of -inf give -inf, empty gives -inf.
  const float inf = std::numeric_limits<float>::infinity();
  fx::Array x = fx::array({{1000.f, 1000.f}, {-inf, -inf}});
  auto l = fx::logsumexp(x, {1}).to_vector<float>();
  CHECK(l[0] == doctest::Approx(1000.f + std::log(2.f)));
  CHECK(l[1] == -inf);
  CHECK(fx::logsumexp(fx::zeros({0})).item<float>() == -inf);
  CHECK(fx::logsumexp(fx::array({inf, 1.f})).item<float>() == inf);
  fx::Array lk = fx::logsumexp(fx::zeros({2, 3}), {-1}, true);
  CHECK(lk.shape() == fx::Shape{2, 1});
  CHECK(lk.to_vector<float>()[1] == doctest::Approx(std::log(3.f)));
  // var / std with ddof.
  fx::Array v = fx::array({1.0, 2.0, 3.0, 4.0});
  CHECK(fx::var(v).item<double>() == doctest::Approx(1.25));
  CHECK(fx::var(v, {}, 1).item<double>() == doctest::Approx(5.0 / 3.0));
  CHECK(fx::std(v, {0}, 1).item<double>() == doctest::Approx(std::sqrt(5.0 / 3.0)));
}

TEST_CASE("reduce primitives: params and dtype contracts") {
  fx::Array x = fx::ones({2, 3});
  auto kind_of = [](auto&& f) {
    try {
      f();
    } catch (const fx::Error& e) {
      return std::string(fx::error_kind_name(e.kind()));
    }
    return std::string("none");
  };
  const std::string shape_kind(fx::error_kind_name(fx::ErrorKind::Shape));
  const std::string type_kind(fx::error_kind_name(fx::ErrorKind::Type));
  CHECK(kind_of([&] { fx::bind1(fx::Prim::reduce_sum, {x}, {{"axes", fx::IntList{1, 0}}}, {}); }) == shape_kind);
  CHECK(kind_of([&] { fx::bind1(fx::Prim::reduce_sum, {x}, {{"axes", fx::IntList{2}}}, {}); }) == shape_kind);
  CHECK(kind_of([&] { fx::bind1(fx::Prim::reduce_sum, {x}, {{"axes", fx::IntList{0, 0}}}, {}); }) == shape_kind);
  fx::Array b = fx::astype(x, fx::bool_);
  CHECK(kind_of([&] { fx::bind1(fx::Prim::reduce_sum, {b}, {{"axes", fx::IntList{0}}}, {}); }) == type_kind);
  CHECK(kind_of([&] { fx::bind1(fx::Prim::reduce_prod, {b}, {{"axes", fx::IntList{0}}}, {}); }) == type_kind);
  CHECK(kind_of([&] { fx::bind1(fx::Prim::reduce_and, {x}, {{"axes", fx::IntList{0}}}, {}); }) == type_kind);
  CHECK(kind_of([&] { fx::bind1(fx::Prim::cumsum, {b}, {{"axis", int64_t(0)}, {"reverse", false}}, {}); }) == type_kind);
  CHECK(kind_of([&] { fx::bind1(fx::Prim::cumsum, {x}, {{"axis", int64_t(2)}, {"reverse", false}}, {}); }) == shape_kind);
  CHECK(kind_of([&] {
          fx::bind1(fx::Prim::argmax, {x}, {{"axes", fx::IntList{0}}, {"index_dtype", fx::float32}}, {});
        }) == type_kind);
  CHECK(kind_of([&] {
          fx::bind1(fx::Prim::argmax, {x}, {{"axes", fx::IntList{0, 1}}, {"index_dtype", fx::int32}}, {});
        }) == shape_kind);
  CHECK(kind_of([&] { fx::bind(fx::Prim::sort, {x, fx::ones({3})}, {{"dimension", int64_t(0)}, {"is_stable", true}, {"num_keys", int64_t(1)}}, {}); }) == shape_kind);
  CHECK(kind_of([&] { fx::bind(fx::Prim::sort, {x}, {{"dimension", int64_t(0)}, {"is_stable", true}, {"num_keys", int64_t(2)}}, {}); }) != "none");
  // API errors name the op and the caller's line.
  try {
    fx::sum(x, {0, -2});
    FAIL("expected a ShapeError");
  } catch (const fx::ShapeError& e) {
    CHECK(std::string(e.what()).find("sum") != std::string::npos);
    CHECK(std::string(e.what()).find("repeated axis") != std::string::npos);
    CHECK(std::string(e.what()).find("test_reduce.cpp:") != std::string::npos);
  }
  CHECK_THROWS_AS(fx::max(fx::zeros({0})), fx::ValueError);
  CHECK_THROWS_AS(fx::argmax(fx::zeros({2, 0}), 1), fx::ValueError);
}

TEST_CASE("reduce primitives: bitwise and/or, reverse cumsum, index dtypes, integer wrap-around") {
  fx::Array bits = fx::array(std::vector<int32_t>{0b1100, 0b1010, 0b1110}, {3});
  fx::Params ax0{{"axes", fx::IntList{0}}};
  CHECK(fx::bind1(fx::Prim::reduce_and, {bits}, ax0, {}).item<int32_t>() == 0b1000);
  CHECK(fx::bind1(fx::Prim::reduce_or, {bits}, ax0, {}).item<int32_t>() == 0b1110);
  fx::Array neg = fx::array(std::vector<int8_t>{-1, -2}, {2});
  CHECK(fx::bind1(fx::Prim::reduce_and, {neg}, ax0, {}).item<int32_t>() == -2);
  fx::Array x = fx::array(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  auto rc = fx::bind1(fx::Prim::cumsum, {x}, {{"axis", int64_t(1)}, {"reverse", true}}, {}).to_vector<int32_t>();
  CHECK(rc == std::vector<int32_t>{6, 5, 3, 15, 11, 6});
  auto rc0 = fx::bind1(fx::Prim::cumsum, {x}, {{"axis", int64_t(0)}, {"reverse", true}}, {}).to_vector<int32_t>();
  CHECK(rc0 == std::vector<int32_t>{5, 7, 9, 4, 5, 6});
  fx::Array am = fx::bind1(fx::Prim::argmin, {x}, {{"axes", fx::IntList{0}}, {"index_dtype", fx::int64}}, {});
  CHECK(am.dtype() == fx::int64);
  CHECK(am.to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0});
  // int8 primitives wrap modulo 256 like XLA (the API widens first, so this is lax-level only).
  fx::Array i8 = fx::astype(fx::array(std::vector<int32_t>{100, 100}), fx::int8);
  CHECK(fx::bind1(fx::Prim::reduce_sum, {i8}, ax0, {}).item<int32_t>() == -56);
  fx::Array big = fx::array(std::vector<int32_t>{1 << 30, 1 << 30, 1 << 30, 1 << 30});
  CHECK(fx::bind1(fx::Prim::reduce_sum, {big}, ax0, {}).item<int32_t>() == 0);
}

