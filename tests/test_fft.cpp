// fx::fft: against a naive DFT in double, round trips, norms, the transposes' dot-product identity
// (JAX's pairing Re(sum ct * y)), errors, jit and vmap, and planning from several threads. The
// op table (tests/op_table_complex.cpp) runs the transforms through every driver.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <complex>
#include <thread>

#include "test_helpers.h"

namespace fx = fluxion;
using test_helpers::error_of;
using test_helpers::max_abs_diff;
using cd = std::complex<double>;

namespace {
double complex_diff(const fx::Array& a, const fx::Array& b) {
  return std::max(max_abs_diff(fx::real(a), fx::real(b)), max_abs_diff(fx::imag(a), fx::imag(b)));
}
std::vector<cd> random_complex(size_t n, unsigned seed) {
  std::vector<cd> v(n);
  uint64_t s = seed;
  auto next = [&] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return double(s >> 11) / double(1ull << 53) * 2 - 1;
  };
  for (cd& z : v) z = cd(next(), next());
  return v;
}
// sum_j x_j exp(-2 pi i jk/n)
std::vector<cd> naive_dft(const std::vector<cd>& x) {
  const size_t n = x.size();
  std::vector<cd> y(n);
  for (size_t k = 0; k < n; ++k)
    for (size_t j = 0; j < n; ++j) y[k] += x[j] * std::polar(1.0, -2 * M_PI * double(j * k % n) / double(n));
  return y;
}
// Re(sum a * b), JAX's pairing of a cotangent with a value (no conjugation).
double pairing(const fx::Array& a, const fx::Array& b) { return fx::sum(fx::real(a * b)).item<double>(); }
}  // namespace

TEST_CASE("fft: matches a naive DFT in double for sizes with large prime factors") {
  for (size_t n : {1, 2, 7, 64, 97, 360, 1009}) {
    std::vector<cd> x = random_complex(n, unsigned(n));
    std::vector<cd> y = fx::fft::fft(fx::array(x)).to_vector<cd>(), want = naive_dft(x);
    double err = 0;
    for (size_t k = 0; k < n; ++k) err = std::max(err, std::abs(y[k] - want[k]));
    CHECK_MESSAGE(err < 1e-11 * double(n), "n = " << n);
  }
}

TEST_CASE("fft: round trips, norms and Parseval") {
  fx::Array x = fx::array(random_complex(3 * 40, 5), {3, 40});
  CHECK(complex_diff(fx::fft::ifft(fx::fft::fft(x)), x) < 1e-14);
  CHECK(complex_diff(fx::fft::ifftn(fx::fft::fftn(x)), x) < 1e-14);
  CHECK(complex_diff(fx::fft::ifft(fx::fft::fft(x, -1, 0, "forward"), -1, 0, "forward"), x) < 1e-14);
  fx::Array o = fx::fft::fft2(x, {}, {-2, -1}, "ortho");  // unitary: norms are kept
  CHECK(fx::sum(fx::square(fx::abs(o))).item<double>() ==
        doctest::Approx(fx::sum(fx::square(fx::abs(x))).item<double>()).epsilon(1e-12));
  fx::Array r = fx::real(x);
  for (int64_t n : {40, 39}) {
    fx::Array cut = fx::slice(r, {0, 0}, {3, n});
    CHECK(max_abs_diff(fx::fft::irfft(fx::fft::rfft(cut), n), cut) < 1e-14);
  }
  CHECK(max_abs_diff(fx::fft::irfftn(fx::fft::rfftn(r)), r) < 1e-14);
  CHECK(fx::fft::rfft(r).shape() == fx::Shape{3, 21});
  CHECK(fx::fft::fft(fx::array({1.f, 2.f})).dtype() == fx::complex64);
  CHECK(fx::fft::rfft(fx::array({1, 2, 3})).dtype() == fx::complex64);  // integers: float32 first
  CHECK(fx::fft::fftfreq(5, 0.5).to_vector<float>() == std::vector<float>{0, 0.4f, 0.8f, -0.8f, -0.4f});
  CHECK(fx::fft::rfftfreq(4).to_vector<float>() == std::vector<float>{0, 0.25f, 0.5f});
}

// <ct, T x> == <T^t ct, x> for every transform kind, 1-D and 2-D, even and odd lengths.
TEST_CASE("fft: the transpose rules satisfy the dot-product identity") {
  fx::Array z = fx::array(random_complex(4 * 6, 7), {4, 6}), zo = fx::array(random_complex(4 * 5, 8), {4, 5});
  fx::Array r = fx::real(fx::array(random_complex(4 * 6, 9), {4, 6}));
  struct Case {
    const char* name;
    std::function<fx::Array(const fx::Array&)> f;
    fx::Array x;
  };
  std::vector<Case> cases = {
      {"fft", [](const fx::Array& a) { return fx::fft::fft(a); }, z},
      {"ifft", [](const fx::Array& a) { return fx::fft::ifft(a, -1, 0); }, z},
      {"fft2 ortho", [](const fx::Array& a) { return fx::fft::fft2(a, {}, {-2, -1}, "ortho"); }, z},
      {"rfft", [](const fx::Array& a) { return fx::fft::rfft(a); }, r},
      {"rfft odd n", [](const fx::Array& a) { return fx::fft::rfft(a, 5); }, r},
      {"rfft2", [](const fx::Array& a) { return fx::fft::rfft2(a); }, r},
      {"irfft even", [](const fx::Array& a) { return fx::fft::irfft(a); }, zo},
      {"irfft odd", [](const fx::Array& a) { return fx::fft::irfft(a, 9); }, zo},
  };
  for (const Case& c : cases) {
    auto [y, pullback] = fx::vjp(c.f, c.x);
    fx::Array ct = fx::is_complex(y.dtype()) ? fx::array(random_complex(size_t(y.size()), 11), y.shape())
                                             : fx::real(fx::array(random_complex(size_t(y.size()), 11), y.shape()));
    fx::Array back = pullback(ct);
    CHECK(back.dtype() == c.x.dtype());
    CHECK_MESSAGE(pairing(ct, y) == doctest::Approx(pairing(back, c.x)).epsilon(1e-12), c.name);
  }
}

TEST_CASE("fft: jit and vmap agree with eager") {
  fx::Array x = fx::array(random_complex(2 * 3 * 8, 13), {2, 3, 8});
  auto f = [](const fx::Array& a) { return fx::fft::irfft(fx::fft::fft(a, -1, 1) * 2.0, 10); };
  CHECK(max_abs_diff(fx::jit(f)(x), f(x)) == 0);
  fx::Array batched = fx::vmap(f, fx::in_axes(2))(x);  // batch along the last axis: the rule moves it in front
  for (int64_t i = 0; i < 8; ++i) {
    fx::Array xi = fx::reshape(fx::slice(x, {0, 0, i}, {2, 3, i + 1}), {2, 3});
    CHECK(max_abs_diff(fx::reshape(fx::slice(batched, {i, 0, 0}, {i + 1, 2, 10}), {2, 10}), f(xi)) < 1e-14);
  }
}

TEST_CASE("fft: plans are made safely from several threads") {
  std::vector<std::thread> threads;
  std::vector<double> errs(4, 1.0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &errs] {
      double err = 0;
      for (int rep = 0; rep < 5; ++rep) {
        const size_t n = size_t(16 + 3 * t + rep);
        std::vector<cd> x = random_complex(n, unsigned(t * 10 + rep));
        std::vector<cd> y = fx::fft::fft(fx::array(x)).to_vector<cd>(), want = naive_dft(x);
        for (size_t k = 0; k < n; ++k) err = std::max(err, std::abs(y[k] - want[k]));
      }
      errs[size_t(t)] = err;
    });
  for (std::thread& th : threads) th.join();
  for (double e : errs) CHECK(e < 1e-12);
}

TEST_CASE("fft: bad arguments are errors naming the function and the line") {
  fx::Array x = fx::array({cd(1, 0), cd(2, 0)});
  std::string e = error_of([&] { (void)fx::fft::fft(x, -1, -1, "unitary"); });
  CHECK(e.find("ValueError") != std::string::npos);
  CHECK(e.find("fft") != std::string::npos);
  CHECK(e.find("test_fft.cpp") != std::string::npos);
  CHECK(error_of([&] { (void)fx::fft::rfft(x); }).find("TypeError") != std::string::npos);
  CHECK(error_of([&] { (void)fx::fft::fft(x, -1, 3); }).find("ShapeError") != std::string::npos);
  CHECK(error_of([&] { (void)fx::fft::fft(x, 0); }).find("positive") != std::string::npos);
  fx::Array x4 = fx::zeros({2, 2, 2, 2}, fx::complex64);
  CHECK(error_of([&] { (void)fx::fft::fftn(x4); }).find("1 to 3") != std::string::npos);
  CHECK(error_of([&] { (void)fx::fft::fft2(x4, {}, {1, 1}); }).find("repeat") != std::string::npos);
}
