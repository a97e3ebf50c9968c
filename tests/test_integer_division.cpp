// Integer division and remainder at their edges -- by zero, INT_MIN / -1, every sign -- against
// JAX's results written out: lax.div and lax.rem are XLA's (x / 0 == -1, INT_MIN / -1 == INT_MIN,
// x rem 0 == x, INT_MIN rem -1 == 0: xla/service/elemental_ir_emitter.cc), and jnp.floor_divide,
// jnp.remainder and jnp.fmod are built on them as jax/_src/numpy/ufuncs.py builds them
// (floor_divide steps down where sign(x) != sign(y) and the remainder is not 0; remainder and fmod
// divide by 1 where the divisor is 0). Every integer dtype, eager and under jit; never a trap.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "lax/lax.h"

namespace fx = fluxion;

namespace {

template <class T>
T xla_div(T x, T y) {
  if (y == 0) return T(-1);  // all bits set (the largest value of an unsigned type)
  if constexpr (std::is_signed_v<T>)
    if (x == std::numeric_limits<T>::min() && y == T(-1)) return x;
  return T(x / y);
}
template <class T>
T xla_rem(T x, T y) {
  if (y == 0) return x;
  if constexpr (std::is_signed_v<T>)
    if (y == T(-1)) return T(0);
  return T(x % y);
}
template <class T>
int sign_of(T v) {
  return v > 0 ? 1 : (v < 0 ? -1 : 0);
}
template <class T>
T jnp_floor_divide(T x, T y) {
  const T q = xla_div(x, y);
  if constexpr (std::is_unsigned_v<T>) return q;
  if (sign_of(x) != sign_of(y) && xla_rem(x, y) != 0) return T(q - 1);
  return q;
}
template <class T>
T jnp_fmod(T x, T y) {
  return xla_rem(x, y == 0 ? T(1) : y);
}
template <class T>
T jnp_remainder(T x, T y) {
  const T d = y == 0 ? T(1) : y;
  const T r = xla_rem(x, d);
  if constexpr (std::is_signed_v<T>)
    if (r != 0 && (r < 0) != (d < 0)) return T(r + d);
  return r;
}

// Every pair of the edge values: the extremes, 0, +-1, and values that divide unevenly.
template <class T>
std::vector<T> edge_values() {
  std::vector<T> v{T(0), T(1), T(7), T(3), std::numeric_limits<T>::max(), T(std::numeric_limits<T>::max() - 1)};
  if constexpr (std::is_signed_v<T>) {
    for (T x : {T(-1), T(-7), T(-3), std::numeric_limits<T>::min(), T(std::numeric_limits<T>::min() + 1)}) v.push_back(x);
  }
  return v;
}

template <class T>
struct Pairs {
  std::vector<T> x, y;
};
template <class T>
Pairs<T> all_pairs() {
  Pairs<T> p;
  for (T a : edge_values<T>())
    for (T b : edge_values<T>()) p.x.push_back(a), p.y.push_back(b);
  return p;
}

template <class T, class Op, class Ref>
void check_op(const char* name, Op op, Ref ref) {
  const Pairs<T> p = all_pairs<T>();
  const fx::Array x = fx::array(p.x), y = fx::array(p.y);
  std::vector<T> want(p.x.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = ref(p.x[i], p.y[i]);
  const fx::Array eager = op(x, y);
  const fx::Array jitted = fx::jit(op)(x, y);
  const std::string what = std::string(name) + " on " + std::string(fx::dtype_name(x.dtype()));
  CAPTURE(what);
  REQUIRE(eager.dtype() == x.dtype());
  REQUIRE(jitted.dtype() == x.dtype());
  const std::vector<T> e = eager.to_vector<T>(), j = jitted.to_vector<T>();
  for (size_t i = 0; i < want.size(); ++i) {
    const long long a = (long long)p.x[i], b = (long long)p.y[i];
    CAPTURE(a);
    CAPTURE(b);
    CHECK((long long)e[i] == (long long)want[i]);
    CHECK((long long)j[i] == (long long)want[i]);
  }
}

template <class T>
void check_dtype() {
  check_op<T>("lax.div", [](const fx::Array& a, const fx::Array& b) { return fx::lax::div(a, b); }, &xla_div<T>);
  check_op<T>("lax.rem", [](const fx::Array& a, const fx::Array& b) { return fx::bind1(fx::Prim::rem, {a, b}, {}, {}); }, &xla_rem<T>);
  check_op<T>("floor_divide", [](const fx::Array& a, const fx::Array& b) { return fx::floor_divide(a, b); },
              &jnp_floor_divide<T>);
  check_op<T>("remainder", [](const fx::Array& a, const fx::Array& b) { return a % b; }, &jnp_remainder<T>);
  check_op<T>("fmod", [](const fx::Array& a, const fx::Array& b) { return fx::fmod(a, b); }, &jnp_fmod<T>);
}

}  // namespace

TEST_CASE("integer division: the issue's examples, as JAX gives them") {
  const fx::Array x = fx::array({7, -7});
  CHECK(fx::floor_divide(x, 0).to_vector<int32_t>() == std::vector<int32_t>{-2, -2});
  CHECK((x % 0).to_vector<int32_t>() == std::vector<int32_t>{0, 0});
  CHECK(fx::fmod(x, 0).to_vector<int32_t>() == std::vector<int32_t>{0, 0});
  const fx::Array m = fx::array({std::numeric_limits<int32_t>::min()});
  CHECK(fx::floor_divide(m, -1).item<int32_t>() == std::numeric_limits<int32_t>::min());
  CHECK((m % -1).item<int32_t>() == 0);
  auto both = fx::jit([](const fx::Array& a) { return std::make_tuple(fx::floor_divide(a, 0), a % 0); });
  auto [q, r] = both(x);
  CHECK(q.to_vector<int32_t>() == std::vector<int32_t>{-2, -2});
  CHECK(r.to_vector<int32_t>() == std::vector<int32_t>{0, 0});
}

TEST_CASE("integer division: every edge pair of every integer dtype, eager and jit, against JAX") {
  check_dtype<int8_t>();
  check_dtype<int32_t>();
  check_dtype<int64_t>();
  check_dtype<uint8_t>();
  check_dtype<uint32_t>();
}

namespace {
// jnp.floor_divide on floats (CPython's float_divmod) and jnp.remainder, written out.
template <class T>
T sign_or_nan(T v) {
  return v > 0 ? T(1) : v < 0 ? T(-1) : v == 0 ? T(0) : v;
}
template <class T>
T jax_float_floor_divide(T x, T y) {
  const T mod = std::fmod(x, y);
  T div = (x - mod) / y;
  if (mod != 0 && sign_or_nan(y) != sign_or_nan(mod)) div = div - T(1);
  return std::round(div);
}
template <class T>
T jax_float_remainder(T x, T y) {
  const T r = std::fmod(x, y);
  return r != 0 && ((r < 0) != (y < 0)) ? T(r + y) : r;
}

template <class T, class Op, class Ref>
void check_float_op(const char* name, Op op, Ref ref) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const std::vector<T> values{T(0), -T(0), T(1), T(-1), T(7), T(-7), T(0.1), T(-2.5), T(3.5), T(1e30), inf, -inf, nan};
  std::vector<T> xs, ys;
  for (T a : values)
    for (T b : values) xs.push_back(a), ys.push_back(b);
  const fx::Array x = fx::array(xs), y = fx::array(ys);
  const std::vector<T> e = op(x, y).template to_vector<T>(), j = fx::jit(op)(x, y).template to_vector<T>();
  CAPTURE(name);
  for (size_t i = 0; i < xs.size(); ++i) {
    const T want = ref(xs[i], ys[i]);
    CAPTURE(xs[i]);
    CAPTURE(ys[i]);
    CAPTURE(want);
    for (T got : {e[i], j[i]}) {
      CAPTURE(got);
      CHECK(((std::isnan(want) && std::isnan(got)) || (want == got && std::signbit(want) == std::signbit(got))));
    }
  }
}
}  // namespace

TEST_CASE("integer division: floats follow jnp.floor_divide and jnp.remainder (x // 0.0 is NaN)") {
  auto floor_divide = [](const fx::Array& a, const fx::Array& b) { return fx::floor_divide(a, b); };
  auto remainder = [](const fx::Array& a, const fx::Array& b) { return a % b; };
  check_float_op<float>("floor_divide f32", floor_divide, &jax_float_floor_divide<float>);
  check_float_op<double>("floor_divide f64", floor_divide, &jax_float_floor_divide<double>);
  check_float_op<float>("remainder f32", remainder, &jax_float_remainder<float>);
  check_float_op<double>("remainder f64", remainder, &jax_float_remainder<double>);
  CHECK(fx::floor_divide(fx::scalar(1.0), fx::scalar(0.1)).item<double>() == 9.0);  // as 1.0 // 0.1 in Python
}
