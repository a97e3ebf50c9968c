// Complex dtypes: storage, promotion, printing and parsing, conversion, errors, and JAX's
// convention for gradients of functions of complex arguments (against finite differences that
// perturb real and imaginary parts separately). The primitives' math under every transform is in
// the op table (tests/op_table_complex.cpp).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <complex>
#include <sstream>

#include "test_helpers.h"

namespace fx = fluxion;
using test_helpers::error_of;
using test_helpers::max_abs_diff;
using cf = std::complex<float>;
using cd = std::complex<double>;

namespace {
// max |a - b| over real and imaginary parts.
double complex_diff(const fx::Array& a, const fx::Array& b) {
  return std::max(max_abs_diff(fx::real(a), fx::real(b)), max_abs_diff(fx::imag(a), fx::imag(b)));
}
}  // namespace

TEST_CASE("complex: dtypes, storage and names") {
  CHECK(fx::itemsize(fx::complex64) == 8);
  CHECK(fx::itemsize(fx::complex128) == 16);
  CHECK(fx::dtype_name(fx::complex64) == "c64");
  CHECK(fx::dtype_long_name(fx::complex128) == "complex128");
  fx::DType d;
  CHECK((fx::parse_dtype("c128", &d) && d == fx::complex128));
  CHECK(fx::real_dtype_of(fx::complex64) == fx::float32);
  CHECK(fx::complex_dtype_of(fx::float64) == fx::complex128);
  CHECK((std::is_same_v<fx::storage_t<fx::complex64>, cf>));
  CHECK(fx::dtype_of_v<cd> == fx::complex128);

  fx::Array z = fx::array({cf(1, 2), cf(-3, 0.5f)});
  CHECK(z.dtype() == fx::complex64);
  CHECK(z.to_vector<cf>() == std::vector<cf>{cf(1, 2), cf(-3, 0.5f)});
  CHECK(z.to_vector<cd>()[1] == cd(-3, 0.5));
  CHECK(z.to_vector<float>() == std::vector<float>{1, -3});  // the real parts, as numpy's astype
  CHECK(fx::array({1.5, 2.0}).to_vector<cd>()[0] == cd(1.5, 0));
  std::ostringstream os;
  os << z;
  CHECK(os.str().find("1.0+2.0j") != std::string::npos);
  CHECK(os.str().find("-3.0+0.5j") != std::string::npos);
}

TEST_CASE("complex: promotion follows JAX (f32 -> c64, f64 -> c128, weak std::complex scalars)") {
  CHECK(fx::promote_types(fx::float32, fx::complex64) == fx::complex64);
  CHECK(fx::promote_types(fx::float64, fx::complex64) == fx::complex128);
  CHECK(fx::promote_types(fx::int32, fx::complex64) == fx::complex64);
  CHECK(fx::promote_types(fx::complex64, fx::complex128) == fx::complex128);
  CHECK(fx::promote_types(fx::bfloat16, fx::complex64) == fx::complex64);
  fx::Array x32 = fx::array({1.f, 2.f}), x64 = fx::array({1.0, 2.0}), i = fx::array({1, 2});
  CHECK((x32 * cf(0, 1)).dtype() == fx::complex64);
  CHECK((x64 * cf(0, 1)).dtype() == fx::complex128);  // weak: the array's precision wins
  CHECK((i * cd(0, 1)).dtype() == fx::complex64);
  fx::Array z = fx::array({cf(1, 1)});
  CHECK((z * 2.0).dtype() == fx::complex64);
  CHECK((z + x64).dtype() == fx::complex128);
  CHECK((x32 * cf(0, 1)).to_vector<cf>() == std::vector<cf>{cf(0, 1), cf(0, 2)});
}

TEST_CASE("complex: convert, real/imag/conj/complex/abs/angle") {
  fx::Array z = fx::array({cd(3, 4), cd(-1, 0), cd(0, -2)});
  CHECK(fx::astype(z, fx::float64).to_vector<double>() == std::vector<double>{3, -1, 0});
  CHECK(fx::astype(fx::array({1.f, 2.f}), fx::complex128).to_vector<cd>()[1] == cd(2, 0));
  CHECK(fx::astype(z, fx::complex64).dtype() == fx::complex64);
  CHECK(fx::abs(z).dtype() == fx::float64);
  CHECK(fx::abs(z).to_vector<double>() == std::vector<double>{5, 1, 2});
  CHECK(fx::angle(z).to_vector<double>()[2] == doctest::Approx(-M_PI / 2));
  CHECK(fx::conj(z).to_vector<cd>()[0] == cd(3, -4));
  CHECK(fx::imag(z).to_vector<double>() == std::vector<double>{4, 0, -2});
  CHECK(fx::complex(fx::array({1.f}), 2).to_vector<cf>()[0] == cf(1, 2));
  CHECK(fx::real(fx::array({2.f})).dtype() == fx::float32);  // of a real array: itself
  CHECK(fx::imag(fx::array({2.f})).to_vector<float>()[0] == 0);
  CHECK(fx::equal(z, fx::conj(fx::conj(z))).to_vector<bool>() == std::vector<bool>{true, true, true});
}

TEST_CASE("complex: ordering comparisons and real-only math are TypeErrors naming the op, dtypes and line") {
  fx::Array z = fx::array({cf(1, 2)});
  std::string e = error_of([&] { (void)fx::less(z, z); });
  CHECK(e.find("TypeError") != std::string::npos);
  CHECK(e.find("lt") != std::string::npos);
  CHECK(e.find("c64") != std::string::npos);
  CHECK(e.find("test_complex.cpp") != std::string::npos);
  CHECK(error_of([&] { (void)fx::maximum(z, z); }).find("c64") != std::string::npos);
  CHECK(error_of([&] { (void)fx::floor(z); }).find("TypeError") != std::string::npos);
  CHECK(error_of([&] { (void)fx::complex(z, z); }).find("real") != std::string::npos);
}

TEST_CASE("complex: programs print and parse complex literals") {
  auto f = [](const fx::Array& x) { return x * cf(1.5f, -2.f) + cf(0, 1); };
  fx::Program p = fx::make_ir(f)(fx::array({cf(1, 1), cf(2, 0)}));
  const std::string text = p.str();
  CHECK(text.find("1.5-2.0j:c64[]") != std::string::npos);
  fx::Program q = fx::parse_program(text);
  CHECK(q.str() == text);
  fx::Array x = fx::array({cf(1, 1), cf(2, 0)});
  CHECK(complex_diff(fx::eval_program(q, std::vector<fx::Array>{x})[0], f(x)) == 0);
}

// JAX's convention: grad of a real f at z = x + iy is df/dx - i df/dy.
TEST_CASE("complex: grad of a real function of complex arguments matches finite differences") {
  fx::Array w = fx::array({cd(0.3, -0.7), cd(1.1, 0.2), cd(-0.5, 0.4)});
  auto f = [&](const fx::Array& z) {
    return fx::sum(fx::real(fx::exp(z) * w) + fx::imag(z * z * z) + fx::abs(z - w) + fx::angle(z));
  };
  fx::Array z = fx::array({cd(0.5, 0.25), cd(-0.75, 1.0), cd(1.5, -0.5)});
  std::vector<cd> g = fx::grad(f)(z).to_vector<cd>();
  std::vector<cd> zs = z.to_vector<cd>();
  const double h = 1e-6;
  for (size_t i = 0; i < zs.size(); ++i) {
    auto at = [&](cd dz) {
      std::vector<cd> v = zs;
      v[i] += dz;
      return f(fx::array(v)).item<double>();
    };
    const double dx = (at(cd(h, 0)) - at(cd(-h, 0))) / (2 * h), dy = (at(cd(0, h)) - at(cd(0, -h))) / (2 * h);
    CHECK(g[i].real() == doctest::Approx(dx).epsilon(1e-6));
    CHECK(g[i].imag() == doctest::Approx(-dy).epsilon(1e-6));
  }
  // |z|^2 -> 2 conj(z), as jax.grad(lambda z: abs(z) ** 2)(3 + 4j) == 6 - 8j
  fx::Array z34 = fx::reshape(fx::array({cd(3, 4)}), fx::Shape{});
  fx::Array g34 = fx::grad([](const fx::Array& v) { return fx::square(fx::abs(v)); })(z34);
  CHECK(g34.item<cd>() == cd(6, -8));
}

TEST_CASE("complex: grad of a complex output needs fx::holomorphic") {
  auto f = [](const fx::Array& z) { return fx::sum(z * z + fx::sin(z)); };
  fx::Array z = fx::array({cd(0.5, 0.25), cd(-1, 2)});
  std::string e = error_of([&] { (void)fx::grad(f)(z); });
  CHECK(e.find("TypeError") != std::string::npos);
  CHECK(e.find("holomorphic") != std::string::npos);
  CHECK(e.find("test_complex.cpp") != std::string::npos);
  // holomorphic: f'(z) = 2z + cos z
  std::vector<cd> g = fx::grad(f, fx::holomorphic)(z).to_vector<cd>();
  for (size_t i = 0; i < g.size(); ++i) {
    const cd zi = z.to_vector<cd>()[i], want = 2.0 * zi + std::cos(zi);
    CHECK(std::abs(g[i] - want) < 1e-12);
  }
  CHECK(error_of([&] { (void)fx::grad(f, fx::holomorphic)(fx::array({1.0})); }).find("complex") != std::string::npos);
}

TEST_CASE("complex: jit compiles complex programs to the eager results within rounding; vmap batches them") {
  auto f = [](const fx::Array& z, const fx::Array& x) {
    return fx::abs(fx::exp(z) * x) + fx::real(fx::matmul(fx::reshape(z, {1, 3}), fx::reshape(fx::conj(z), {3, 1})))[0];
  };
  fx::Array z = fx::array({cf(0.5, 0.25), cf(-0.75, 1), cf(1.5, -0.5)});
  fx::Array x = fx::array({1.f, 2.f, 3.f});
  auto jf = fx::jit(f);
  CHECK(max_abs_diff(jf(z, x), f(z, x)) < 1e-5);
  CHECK(max_abs_diff(jf(z, x), f(z, x)) < 1e-5);  // the cached signature
  CHECK(jf.compilations() == 1);
  auto g = fx::jit(fx::grad([&](const fx::Array& z) { return fx::sum(f(z, x)); }));
  CHECK(complex_diff(g(z), fx::grad([&](const fx::Array& z) { return fx::sum(f(z, x)); })(z)) < 2e-5);  // c64 rounding of values ~10
  fx::Array zs = fx::stack({z, z * 2.f});
  fx::Array batched = fx::vmap([&](const fx::Array& zi) { return fx::abs(fx::exp(zi)); })(zs);
  CHECK(max_abs_diff(batched, fx::abs(fx::exp(zs))) == 0);
}

TEST_CASE("complex: DLPack maps complex64/complex128 to kDLComplex 64/128, without a copy") {
  for (fx::DType d : {fx::complex64, fx::complex128}) {
    fx::Array z = fx::astype(fx::array({cd(1, -2), cd(0.5, 3)}), d);
    DLManagedTensor* t = fx::to_dlpack(z);
    CHECK(t->dl_tensor.dtype.code == kDLComplex);
    CHECK(t->dl_tensor.dtype.bits == fx::itemsize(d) * 8);
    fx::Array back = fx::from_dlpack(t);
    CHECK(back.dtype() == d);
    CHECK(back.data() == z.data());
    CHECK(back.to_vector<cd>() == std::vector<cd>{cd(1, -2), cd(0.5, 3)});
  }
}
