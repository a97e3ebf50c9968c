// JAX's type-promotion lattice (jax.numpy.promote_types) over Fluxion's dtypes, and weak C++ scalars.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>

namespace fx = fluxion;

TEST_CASE("promotion: JAX's lattice on strongly typed pairs") {
  using fx::promote_types;
  struct Row {
    fx::DType a, b, want;
  };
  const Row rows[] = {
      {fx::bool_, fx::bool_, fx::bool_},     {fx::bool_, fx::int8, fx::int8},      {fx::bool_, fx::uint8, fx::uint8},
      {fx::bool_, fx::float16, fx::float16}, {fx::int8, fx::uint8, fx::int32},      // JAX gives i16; we have no i16
      {fx::int8, fx::int32, fx::int32},      {fx::uint8, fx::int32, fx::int32},     {fx::uint32, fx::int32, fx::int64},
      {fx::uint8, fx::uint32, fx::uint32},   {fx::int64, fx::uint32, fx::int64},    {fx::int32, fx::float16, fx::float16},
      {fx::int64, fx::bfloat16, fx::bfloat16}, {fx::float16, fx::bfloat16, fx::float32},
      {fx::uint32, fx::float32, fx::float32}, {fx::int64, fx::float32, fx::float32}, {fx::float32, fx::float64, fx::float64},
      {fx::bfloat16, fx::float64, fx::float64}, {fx::uint8, fx::int8, fx::int32},
  };
  for (const Row& r : rows) {
    CAPTURE(fx::dtype_name(r.a));
    CAPTURE(fx::dtype_name(r.b));
    CHECK(promote_types(r.a, r.b) == r.want);
    CHECK(promote_types(r.b, r.a) == r.want);  // symmetric
  }
  // Every pair is an upper bound of both sides (a sanity property of a join).
  for (int i = 0; i < fx::kNumDTypes; ++i)
    for (int j = 0; j < fx::kNumDTypes; ++j) {
      fx::DType a = fx::DType(i), b = fx::DType(j), c = promote_types(a, b);
      CHECK(promote_types(a, c) == c);
      CHECK(promote_types(b, c) == c);
    }
}

TEST_CASE("promotion: weak C++ scalars defer to the array's dtype") {
  fx::Array h = fx::astype(fx::array({1.f, 2.f}), fx::float16);
  CHECK((h * 2.0).dtype() == fx::float16);  // api.md: x_f16 * 2.0 stays float16
  CHECK((2.0 * h).dtype() == fx::float16);
  fx::Array i = fx::arange(3);
  CHECK(i.dtype() == fx::int32);
  CHECK((i * 2).dtype() == fx::int32);
  CHECK((i * 2.5).dtype() == fx::float32);  // int * weak float -> default float
  CHECK((i * 2.5).to_vector<float>() == std::vector<float>{0.f, 2.5f, 5.f});
  fx::Array u = fx::astype(i, fx::uint8);
  CHECK((u + 3).dtype() == fx::uint8);
  fx::Array d = fx::array({1.0, 2.0});
  CHECK(d.dtype() == fx::float64);
  CHECK((d * 0.1).to_vector<double>()[1] == 0.2);  // the literal keeps double precision
  fx::Array b = fx::array(std::vector<bool>{true, false});
  CHECK((b + 1).dtype() == fx::int32);
  CHECK((b * 1.5f).dtype() == fx::float32);
  CHECK(fx::result_type(std::vector<fx::ArrayLike>{h, d}) == fx::float64);
}

TEST_CASE("creation: dtypes and values as in api.md") {
  CHECK(fx::array({1.f, 2.f, 3.f}).dtype() == fx::float32);
  fx::Array m = fx::array({{1.0, 2.0}, {3.0, 4.0}});
  CHECK(m.dtype() == fx::float64);
  CHECK(m.shape() == fx::Shape{2, 2});
  CHECK(fx::array(std::vector<float>(6, 1.f), {2, 3}).shape() == fx::Shape{2, 3});
  CHECK(fx::zeros({3, 4}).dtype() == fx::float32);
  CHECK(fx::ones({3}, fx::float64).to_vector<double>() == std::vector<double>{1, 1, 1});
  CHECK(fx::full({2, 2}, 7.0f).to_vector<float>() == std::vector<float>(4, 7.f));
  CHECK(fx::arange(4).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2, 3});
  CHECK(fx::linspace(0.f, 1.f, 5).to_vector<float>() == std::vector<float>{0.f, 0.25f, 0.5f, 0.75f, 1.f});
  CHECK(fx::eye(3).to_vector<float>() == std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK(fx::eye(2, fx::float64).dtype() == fx::float64);
  CHECK(fx::scalar(2.5f).dtype() == fx::float32);
  CHECK(fx::scalar(2.5).dtype() == fx::float64);
  CHECK(fx::scalar(3).dtype() == fx::int32);
  CHECK(fx::scalar(3).shape() == fx::Shape{});
  fx::Array c = fx::array({{0.7}, {-0.8}});
  CHECK(c.shape() == fx::Shape{2, 1});
  fx::Array iv = fx::array(std::vector<int32_t>{1, 2, 3, 4}, {2, 2});
  CHECK(iv.dtype() == fx::int32);
  CHECK(fx::zeros_like(iv).to_vector<int32_t>() == std::vector<int32_t>(4, 0));
  CHECK(fx::full_like(iv, 5).to_vector<int32_t>() == std::vector<int32_t>(4, 5));
  CHECK(fx::arange(0.0, 1.0, 0.25).to_vector<float>() == std::vector<float>{0, 0.25f, 0.5f, 0.75f});
  CHECK_THROWS_AS(fx::array({1.f, 2.f}).item<float>(), fx::ValueError);  // item() needs one element
}

TEST_CASE("float16 and bfloat16 round to nearest even") {
  CHECK(float(fx::float16_t(1.0f)) == 1.0f);
  CHECK(float(fx::float16_t(65504.f)) == 65504.f);
  CHECK(std::isinf(float(fx::float16_t(70000.f))));
  CHECK(float(fx::float16_t(1e-7f)) == doctest::Approx(1.19209e-7).epsilon(0.01));  // subnormal
  CHECK(float(fx::float16_t(1.0f + 1.0f / 2048)) == 1.0f);                           // tie to even
  CHECK(float(fx::bfloat16_t(1.0f + 1.0f / 256)) == 1.0f);
  CHECK(float(fx::bfloat16_t(3.0f)) == 3.0f);
  for (float v : {0.1f, -2.5f, 1000.f, 3.14159f}) {
    CHECK(float(fx::float16_t(v)) == doctest::Approx(v).epsilon(1e-3));
    CHECK(float(fx::bfloat16_t(v)) == doctest::Approx(v).epsilon(8e-3));
  }
}
