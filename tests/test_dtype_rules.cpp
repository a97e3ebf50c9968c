// Every API that takes a number and picks a dtype, against the dtype (and weak type) JAX gives for
// the same call (issue 34's sweep). The right-hand column is JAX's answer, written out: it was read
// from JAX 0.10.2 on the CPU with x64 off (bench/peers/setup.sh installs that JAX; this test does not
// need it). A C++ scalar plays a Python scalar: weakly typed, float -> float32, integer -> int32.
//
// Where Fluxion differs on purpose it says so below the table: fx::scalar and fx::array of a list
// take the C++ element type (a double is float64), as numpy arrays of that type would with x64 on.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <functional>
#include <string>
#include <vector>

namespace fx = fluxion;

namespace {
struct Row {
  std::string call;  // the JAX spelling
  std::function<fx::Array()> fluxion;
  fx::DType dtype;
  bool weak = false;
};

fx::Array i32() { return fx::arange(3); }
fx::Array f16() { return fx::astype(fx::zeros({2}), fx::float16); }
fx::Array bf16() { return fx::astype(fx::zeros({2}), fx::bfloat16); }
fx::Array u8() { return fx::astype(fx::zeros({2}), fx::uint8); }
fx::Array i8() { return fx::astype(fx::zeros({2}), fx::int8); }
fx::Array mask() { return fx::array(std::vector<bool>{true, false}); }
fx::Array key() { return fx::random::key(0); }

void check_rows(const std::vector<Row>& rows) {
  for (const Row& r : rows) {
    CAPTURE(r.call);
    fx::Array a = r.fluxion();
    CHECK(a.dtype() == r.dtype);
    CHECK(a.weak_type() == r.weak);
  }
}
}  // namespace

TEST_CASE("dtype rules: creation functions take the bound's type and JAX's weak types") {
  using fx::float16, fx::float32, fx::int32, fx::bool_;
  check_rows({
      {"jnp.arange(4.0)", [] { return fx::arange(4.0); }, float32},
      {"jnp.arange(4.0) (a float)", [] { return fx::arange(4.f); }, float32},
      {"jnp.arange(4)", [] { return fx::arange(4); }, int32},
      {"jnp.arange(2, 5)", [] { return fx::arange(2, 5); }, int32},
      {"jnp.arange(0., 1., .25)", [] { return fx::arange(0.0, 1.0, 0.25); }, float32},
      {"jnp.arange(0.5, 3.0, dtype=int32)", [] { return fx::arange(0.5, 3.0, 1.0, fx::int32); }, int32},
      {"jnp.arange(0, 5, dtype=float16)", [] { return fx::arange(0, 5, 1, fx::float16); }, float16},
      {"jnp.array(3.0)", [] { return fx::array(3.0); }, float32, true},
      {"jnp.array(3)", [] { return fx::array(3); }, int32, true},
      {"jnp.array(True)", [] { return fx::array(true); }, bool_},
      {"jnp.full((2,), 7.0)", [] { return fx::full({2}, 7.0); }, float32, true},
      {"jnp.full((2,), 7)", [] { return fx::full({2}, 7); }, int32, true},
      {"jnp.full((2,), True)", [] { return fx::full({2}, true); }, bool_},
      {"jnp.full((2,), 7.0, float16)", [] { return fx::full({2}, 7.0, fx::float16); }, float16},
      {"jnp.full_like(x_f16, 7.0)", [] { return fx::full_like(f16(), 7.0); }, float16},
      {"jnp.full_like(x_i32, 7.5)", [] { return fx::full_like(i32(), 7.5); }, int32},
      {"jnp.full_like(jnp.array(3.0), 1)", [] { return fx::full_like(fx::array(3.0), 1); }, float32, true},
      {"jnp.zeros_like(jnp.array(3))", [] { return fx::zeros_like(fx::array(3)); }, int32, true},
      {"jnp.ones_like(x_i32)", [] { return fx::ones_like(i32()); }, int32},
      {"jnp.zeros(2)", [] { return fx::zeros({2}); }, float32},
      {"jnp.ones(2)", [] { return fx::ones({2}); }, float32},
      {"jnp.eye(2)", [] { return fx::eye(2); }, float32},
      {"jnp.eye(2, dtype=int32)", [] { return fx::eye(2, fx::int32); }, int32},
      {"jnp.tri(3)", [] { return fx::tri(3); }, float32},
      {"jnp.tri(2, dtype=int32)", [] { return fx::tri(2, -1, 0, fx::int32); }, int32},
      {"jnp.linspace(0, 1, 5)", [] { return fx::linspace(0, 1, 5); }, float32},
      {"jnp.linspace(0., 1., 5)", [] { return fx::linspace(0.0, 1.0, 5); }, float32},
      {"jnp.linspace(0, 1, 5, dtype=int32)", [] { return fx::linspace(0, 1, 5, fx::int32); }, int32},
      {"jax.nn.one_hot(x_i32, 3)", [] { return fx::nn::one_hot(i32(), 3); }, float32},
  });
}

TEST_CASE("dtype rules: operators and functions with scalars follow JAX's promotion") {
  using fx::float16, fx::float32, fx::int32, fx::bool_, fx::uint8, fx::bfloat16, fx::int8;
  check_rows({
      {"x_f16 * 2.0", [] { return f16() * 2.0; }, float16},
      {"x_i32 * 2.5", [] { return i32() * 2.5; }, float32, true},
      {"x_u8 + 1", [] { return u8() + 1; }, uint8},
      {"x_bf16 + 1", [] { return bf16() + 1; }, bfloat16},
      {"x_i8 * 2", [] { return i8() * 2; }, int8},
      {"x_bool + 1", [] { return mask() + 1; }, int32, true},
      {"x_bool + 1.0", [] { return mask() + 1.0; }, float32, true},
      {"x_f16 + jnp.array(1.0)", [] { return f16() + fx::array(1.f); }, float16},
      {"x_i32 / 2", [] { return i32() / 2; }, float32},
      {"x_f16 / 2", [] { return f16() / 2; }, float16},
      {"x_i32 // 2", [] { return fx::floor_divide(i32(), 2); }, int32},
      {"x_i32 ** 0.5", [] { return fx::power(i32(), 0.5); }, float32, true},
      {"jnp.power(x_i32, 2)", [] { return fx::power(i32(), 2); }, int32},
      {"jnp.sqrt(x_i32)", [] { return fx::sqrt(i32()); }, float32},
      {"jnp.exp(3.0)", [] { return fx::exp(3.0); }, float32, true},
      {"jnp.sin(jnp.array(1))", [] { return fx::sin(fx::array(1)); }, float32, true},
      {"jnp.abs(-2)", [] { return fx::abs(-2); }, int32, true},
      {"jnp.maximum(x_i32, 1.5)", [] { return fx::maximum(i32(), 1.5); }, float32, true},
      {"jnp.where(b, 1.0, 2.0)", [] { return fx::where(mask(), 1.0, 2.0); }, float32, true},
      {"jnp.where(b, 1, 2)", [] { return fx::where(mask(), 1, 2); }, int32, true},
      {"jnp.where(b, x_f16, 0.0)", [] { return fx::where(mask(), f16(), 0.0); }, float16},
      {"jnp.where(b, x_i32, 0.5)", [] { return fx::where(mask(), fx::array({1, 2}), 0.5); }, float32, true},
      {"jnp.clip(x_i32, 0.5, 2)", [] { return fx::clip(i32(), 0.5, 2); }, float32, true},
      {"jnp.clip(x_f16, 0, 1)", [] { return fx::clip(f16(), 0, 1); }, float16},
      {"jnp.pad(x_f16, 1, constant_values=2.5)", [] { return fx::pad(f16(), {{1, 1}}, 2.5); }, float16},
      {"x_f16.at[0].set(2.5)", [] { return f16().at(0).set(2.5); }, float16},
  });
}

TEST_CASE("dtype rules: reductions, sort-based functions and the first-week numpy functions") {
  using fx::float16, fx::float32, fx::int32, fx::bool_, fx::uint32;
  check_rows({
      {"jnp.mean(x_i32)", [] { return fx::mean(i32()); }, float32},
      {"jnp.mean(x_f16)", [] { return fx::mean(f16()); }, float16},
      {"jnp.std(x_i32)", [] { return fx::std(i32()); }, float32},
      {"jax.nn.logsumexp(x_i32)", [] { return fx::logsumexp(i32()); }, float32},
      {"jnp.sum(x_bool)", [] { return fx::sum(mask()); }, int32},
      {"jnp.sum(x_i8)", [] { return fx::sum(i8()); }, int32},
      {"jnp.sum(x_u8)", [] { return fx::sum(u8()); }, uint32},
      {"jnp.prod(x_u8)", [] { return fx::prod(u8()); }, uint32},
      {"jnp.cumsum(x_bool)", [] { return fx::cumsum(mask()); }, int32},
      {"jnp.argmax(x_f16)", [] { return fx::argmax(f16()); }, int32},
      {"jnp.argsort(x)", [] { return fx::argsort(fx::arange(3.f)); }, int32},
      {"jnp.median(x_i32)", [] { return fx::median(i32()); }, float32},
      {"jnp.median(x_f16)", [] { return fx::median(f16()); }, float16},
      {"jnp.quantile(x_i32, 0.5)", [] { return fx::quantile(i32(), 0.5); }, float32},
      {"jnp.quantile(x_i32, jnp.array([0.5]))", [] { return fx::quantile(i32(), fx::array({0.5})); }, float32},
      {"jnp.quantile(x_f16, 0.5)", [] { return fx::quantile(f16(), 0.5); }, float16},
      {"jnp.percentile(x_f32, 50)", [] { return fx::percentile(fx::zeros({3}), 50); }, float32},
      {"jnp.searchsorted(x, 1.0)", [] { return fx::searchsorted(fx::arange(3.f), 1.0); }, int32},
      {"jnp.searchsorted(x_f16, 1.0)", [] { return fx::searchsorted(f16(), 1.0); }, int32},
      {"jax.lax.top_k(x, 2)[1]", [] { return fx::top_k(fx::arange(3.f), 2).second; }, int32},
      {"jax.lax.top_k(x_f16, 1)[0]", [] { return fx::top_k(f16(), 1).first; }, float16},
      {"jnp.unique(x_i32)", [] { return fx::unique(i32()); }, int32},
      {"jnp.unique(x_f16)", [] { return fx::unique(f16()); }, float16},
      {"jnp.isnan(x_i32)", [] { return fx::isnan(i32()); }, bool_},
      {"jnp.isclose(x_i32, x_i32)", [] { return fx::isclose(i32(), i32()); }, bool_},
      {"jnp.allclose(x, x)", [] { return fx::allclose(fx::arange(3.f), fx::arange(3.f)); }, bool_},
      {"jnp.log2(x_i32)", [] { return fx::log2(i32()); }, float32},
      {"jnp.log10(x_f16)", [] { return fx::log10(f16()); }, float16},
      {"jnp.hypot(x_i32, x_i32)", [] { return fx::hypot(i32(), i32()); }, float32},
      {"jnp.hypot(x_f16, 3.0)", [] { return fx::hypot(f16(), 3.0); }, float16},
      {"jnp.trace(x_i8 2x2)", [] { return fx::trace(fx::astype(fx::ones({2, 2}), fx::int8)); }, int32},
      {"jnp.trace(x_bool 2x2)", [] { return fx::trace(fx::astype(fx::ones({2, 2}), fx::bool_)); }, int32},
      {"jnp.kron(x_i32, x_f32)", [] { return fx::kron(fx::arange(2), fx::ones({2})); }, float32},
      {"jnp.diag(x_i32)", [] { return fx::diag(i32()); }, int32},
      {"jnp.diag(jnp.full((2,), 1.0))", [] { return fx::diag(fx::full({2}, 1.0)); }, float32, true},
      {"jnp.tril(x_bool)", [] { return fx::tril(fx::astype(fx::ones({2, 2}), fx::bool_)); }, bool_},
      {"jnp.roll(x_i8, 1)", [] { return fx::roll(i8(), 1); }, fx::int8},
      {"jnp.repeat(jnp.array(2.0), 3)", [] { return fx::repeat(fx::array(2.0), 3); }, float32, true},
      {"jnp.meshgrid(x_i32, x_i32)[0]", [] { return fx::meshgrid({i32(), i32()})[0]; }, int32},
  });
}

TEST_CASE("dtype rules: random numbers") {
  using fx::float16, fx::float32, fx::int32, fx::bool_;
  check_rows({
      {"jax.random.uniform(k)", [] { return fx::random::uniform(key()); }, float32},
      {"jax.random.uniform(k, (2,), minval=-1, maxval=1)", [] { return fx::random::uniform(key(), {2}, fx::float32, -1, 1); }, float32},
      {"jax.random.uniform(k, (2,), float16)", [] { return fx::random::uniform(key(), {2}, fx::float16); }, float16},
      {"jax.random.normal(k, (2,))", [] { return fx::random::normal(key(), {2}); }, float32},
      {"jax.random.randint(k, (2,), 0, 5)", [] { return fx::random::randint(key(), {2}, 0, 5); }, int32},
      {"jax.random.bernoulli(k, 0.5, (2,))", [] { return fx::random::bernoulli(key(), 0.5, {2}); }, bool_},
      {"jax.random.gumbel(k, (2,))", [] { return fx::random::gumbel(key(), {2}); }, float32},
      {"jax.random.gamma(k, 2.0, (2,))", [] { return fx::random::gamma(key(), 2.0, fx::Shape{2}); }, float32},
      {"jax.random.categorical(k, jnp.zeros(3))", [] { return fx::random::categorical(key(), fx::zeros({3})); }, int32},
      {"jax.random.choice(k, 5, (3,))", [] { return fx::random::choice(key(), 5, {3}); }, int32},
  });
}

TEST_CASE("dtype rules: where Fluxion keeps the C++ type on purpose") {
  // fx::scalar and fx::array of host data hold the C++ element type (numpy's np.float64(2.5) or
  // np.array([1.0]) with x64 on); a bare C++ scalar in an expression or in fx::array(v) is weak.
  CHECK(fx::scalar(2.5).dtype() == fx::float64);
  CHECK(!fx::scalar(2.5).weak_type());
  CHECK(fx::array({1.0, 2.0}).dtype() == fx::float64);
  CHECK(fx::array({1.f, 2.f}).dtype() == fx::float32);
  CHECK(fx::array(2.5).dtype() == fx::float32);
}
