// Complex programs under fx::jit: compiled (lowering/lower_complex.cpp), not interpreted, and equal
// to eager within rounding -- plain, differentiated (grad, jvp), batched (jit of vmap of grad) and
// over pmap; programs with FFTs included (FFTW as a library call). The op table's complex entries run through
// the jit driver too (tests/test_op_table_jit.cpp), and both also under FLUXION_CPU=x86-64-v2/v3
// (the jit_tests_x86_64_v* meson tests run every "jit*" test case).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <unistd.h>

#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include "test_helpers.h"

namespace fx = fluxion;

namespace {
using test_helpers::max_abs_diff;
using cf = std::complex<float>;
using cd = std::complex<double>;

// The largest difference of real or imaginary parts (of a real array: of the values).
double complex_diff(const fx::Array& a, const fx::Array& b) {
  if (!fx::is_complex(a.dtype())) return max_abs_diff(a, b);
  return std::max(max_abs_diff(fx::real(a), fx::real(b)), max_abs_diff(fx::imag(a), fx::imag(b)));
}

// Runs f once under jit and returns how many programs the runtime compiled for it.
template <class F, class... Args>
int64_t compiles_of(F&& f, const Args&... args) {
  const int64_t before = fx::runtime::cache_stats().compiles;
  (void)f(args...);
  return fx::runtime::cache_stats().compiles - before;
}

// f compiles to one program under jit, whose results equal eager's within tol.
template <class F, class... Args>
void check_compiled(const F& f, double tol, const Args&... args) {
  auto jf = fx::jit(f);
  CHECK(compiles_of(jf, args...) == 1);  // compiled, not interpreted
  std::vector<fx::Array> got = jf(args...), want = f(args...);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].aval() == want[i].aval());
    CHECK(complex_diff(got[i], want[i]) < tol);
  }
}

fx::Array ramp_complex(int64_t n, fx::DType d, double phase) {
  std::vector<cd> v;
  for (int64_t i = 0; i < n; ++i) v.emplace_back(0.5 + 0.01 * double(i), std::sin(phase + 0.3 * double(i)));
  return fx::astype(fx::array(v), d);
}
}  // namespace

TEST_CASE("jit complex: an elementwise chain, reductions and a matmul compile and match eager") {
  auto f = [](const fx::Array& z, const fx::Array& w) {
    fx::Array chain = z * fx::exp(w * cf(0, 1)) + fx::conj(z);
    fx::Array m = fx::matmul(fx::reshape(z, {4, 8}), fx::reshape(fx::conj(w), {8, 4}));
    return std::vector<fx::Array>{chain / (w + 2.f), fx::sum(fx::reshape(chain, {4, 8}), {1}) + fx::prod(fx::reshape(w, {8, 4}), {0}),
                                  m, fx::abs(chain) + fx::angle(w), fx::real(z) * fx::imag(w)};
  };
  for (fx::DType d : {fx::complex64, fx::complex128}) {
    CAPTURE(fx::dtype_name(d));
    fx::Array z = ramp_complex(32, d, 0.1), w = ramp_complex(32, d, 1.3);
    check_compiled(f, d == fx::complex64 ? 2e-5 : 1e-12, z, w);
  }
}

TEST_CASE("jit complex: conversions, comparisons and a literal") {
  auto f = [](const fx::Array& z, const fx::Array& x) {
    fx::Array zz = fx::astype(z, fx::complex128);
    fx::Array back = fx::astype(zz * cd(0.5, -2), fx::complex64);
    return std::vector<fx::Array>{back + x, fx::astype(z, fx::float32), fx::astype(z, fx::int32), z == fx::conj(z),
                                  z != back, fx::where(fx::real(z) > 0.6f, z, cf(1, 1))};
  };
  fx::Array z = fx::array({cf(0.5, 0), cf(-0.75, 1), cf(1.5, -0.5), cf(2.25, 0)});
  fx::Array x = fx::array({1.f, 2.f, 3.f, 4.f});
  check_compiled(f, 1e-6, z, x);
}

TEST_CASE("jit complex: grad and jvp of complex functions compiled against eager") {
  auto loss = [](const fx::Array& z) { return fx::sum(fx::abs(fx::exp(z) * fx::conj(z) + z * z) + fx::real(fx::sin(z))); };
  fx::Array z = ramp_complex(16, fx::complex128, 0.4);
  auto jg = fx::jit(fx::grad(loss));
  CHECK(compiles_of(jg, z) == 1);
  CHECK(complex_diff(jg(z), fx::grad(loss)(z)) < 1e-12);

  auto holo = [](const fx::Array& z) { return fx::sum(z * fx::tanh(z) + fx::log(z)); };
  CHECK(complex_diff(fx::jit(fx::grad(holo, fx::holomorphic))(z), fx::grad(holo, fx::holomorphic)(z)) < 1e-12);

  auto f = [](const fx::Array& z) { return fx::sqrt(z) * fx::cos(z); };
  fx::Array t = ramp_complex(16, fx::complex128, 2.0);
  auto jvp_of = [&](const fx::Array& zz, const fx::Array& tt) {
    auto [y, dy] = fx::jvp(f, std::tuple{zz}, std::tuple{tt});
    return std::vector<fx::Array>{y, dy};
  };
  std::vector<fx::Array> jitted = fx::jit(jvp_of)(z, t), eager = jvp_of(z, t);
  const fx::Array &y = jitted[0], &dy = jitted[1], &y0 = eager[0], &dy0 = eager[1];
  CHECK(complex_diff(y, y0) < 1e-12);
  CHECK(complex_diff(dy, dy0) < 1e-12);
}

TEST_CASE("jit complex: jit(vmap(grad)) of a real loss of complex intermediates") {
  // A real parameter vector theta, complex intermediates (a phase rotation and a complex matmul),
  // a real loss: per example the gradient with respect to theta.
  fx::Array basis = fx::astype(fx::reshape(ramp_complex(12, fx::complex64, 0.7), {3, 4}), fx::complex64);
  auto loss = [basis](const fx::Array& theta, const fx::Array& x) {
    fx::Array phase = fx::exp(fx::complex(fx::zeros_like(theta), theta));  // e^{i theta}
    fx::Array z = fx::matmul(phase * x, basis);
    return fx::sum(fx::real(z * fx::conj(z))) + fx::sum(fx::imag(z));
  };
  fx::Array theta = fx::array({0.3f, -1.1f, 0.7f});
  fx::Array xs = fx::reshape(fx::arange(0.f, 15.f) * 0.1f, {5, 3});
  auto per_example = fx::vmap([&](const fx::Array& x) { return fx::grad(loss)(theta, x); });
  auto jitted = fx::jit(per_example);
  CHECK(compiles_of(jitted, xs) == 1);
  fx::Array got = jitted(xs), want = per_example(xs);
  CHECK(got.aval() == want.aval());
  CHECK(max_abs_diff(got, want) < 1e-4);
}

// Every kind of transform, between elementwise work that fuses around the library call (the
// fft eqn calls FFTW from the compiled kernel: lowering/lower_library.cpp), in both precisions.
TEST_CASE("jit complex: fft, ifft, rfft, irfft, fft2 and fftn compile inside fused programs") {
  auto f = [](const fx::Array& z, const fx::Array& x) {
    fx::Array spectrum = fx::fft::fft(fx::exp(z) * 2.f + z);
    fx::Array back = fx::fft::ifft(spectrum * fx::conj(z)) - z;
    fx::Array bins = fx::fft::rfft(x * x + 1.f) * 0.5f;
    fx::Array head = fx::slice(x, {0}, {5});
    fx::Array real = fx::fft::irfft(bins * fx::complex(head, -head)) + x;
    fx::Array odd = fx::fft::irfft(bins, 7);
    fx::Array plane = fx::fft::fft2(fx::reshape(z, {2, 2, 2})) + 1.f;
    fx::Array cube = fx::fft::fftn(fx::reshape(z * z, {2, 2, 2}), {}, {0, 1, 2}, "ortho");
    fx::Array axis0 = fx::fft::fft(fx::reshape(z, {4, 2}), 4, 0);
    return std::vector<fx::Array>{spectrum, back, bins, real, odd, plane, cube, axis0, fx::abs(spectrum) + fx::sum(real)};
  };
  for (fx::DType d : {fx::complex64, fx::complex128}) {
    CAPTURE(fx::dtype_name(d));
    fx::Array z = ramp_complex(8, d, 0.2);
    fx::Array x = fx::real(ramp_complex(8, d, 1.1)) * 3.0 - fx::imag(z);
    check_compiled(f, d == fx::complex64 ? 2e-5 : 1e-12, z, x);
  }
}

TEST_CASE("jit complex: grad, vmap and pmap of programs with FFTs compile and match eager") {
  // A real loss through every transform, so the gradient runs the transposes (fft for fft, the
  // padded fft for rfft, the masked rfft for irfft).
  auto loss = [](const fx::Array& x) {
    fx::Array y = fx::fft::rfft(fx::sin(x) * x);
    fx::Array z = fx::fft::fft(y * y) + fx::fft::ifft(y);
    return fx::sum(fx::real(z * fx::conj(z))) + fx::sum(fx::fft::irfft(y * 1.5, 8) * x);
  };
  fx::Array x = fx::real(ramp_complex(8, fx::complex128, 0.3));
  auto jg = fx::jit(fx::grad(loss));
  CHECK(compiles_of(jg, x) == 1);
  CHECK(max_abs_diff(jg(x), fx::grad(loss)(x)) < 1e-10);

  auto spectral = [](const fx::Array& z) {
    return fx::fft::ifft(fx::fft::fft(z) * 2.f) + fx::reshape(fx::fft::fft2(fx::reshape(z, {2, 4})), {8});
  };
  fx::Array zs = fx::reshape(ramp_complex(24, fx::complex64, 0.9), {3, 8});
  auto batched = fx::vmap(spectral);
  auto jb = fx::jit(batched);
  CHECK(compiles_of(jb, zs) == 1);
  CHECK(complex_diff(jb(zs), batched(zs)) < 1e-5);

  // pmap runs compiled kernels only: a program with an FFT now has one on every device.
  const int64_t n = int64_t(fx::devices("cpu").size());
  fx::Array ps = fx::reshape(ramp_complex(4 * n, fx::complex64, 0.9), {n, 4});
  auto step = [](const fx::Array& z) {
    return fx::fft::ifft(fx::fft::fft(z) * fx::exp(z)) + fx::psum(fx::real(z), "i");  // psum is real-only
  };
  fx::Array got = fx::pmap(step, "i")(ps);
  fx::Array want = fx::vmap(step, fx::in_axes(0), fx::axis_name("i"))(ps);
  CHECK(complex_diff(got, want) < 1e-4);

  // An exported object links only the AOT runtime, which has no FFTW: a CompileError, not a
  // missing symbol at link time.
  CHECK_THROWS_AS(fx::export_(spectral, ramp_complex(8, fx::complex64, 0.5)), fx::CompileError);
}

TEST_CASE("jit complex: scatter, gather, dynamic slices, pad and a scan carrying a complex value compile") {
  auto f = [](const fx::Array& z, const fx::Array& start) {
    fx::Array added = z.at(fx::array({1, 3, 5})).set(fx::slice(z, {0}, {3}) * cf(0, 1));
    fx::Array window = fx::dynamic_slice(added, {start}, {4});
    fx::Array padded = fx::pad(window, {{1, 2}}, cf(0.5f, -1));
    auto step = [](const fx::Array& carry, const fx::Array& x) {
      fx::Array next = carry * x + cf(0, 0.25f);
      return std::pair{next, fx::conj(next)};
    };
    auto [carry, ys] = fx::scan(step, fx::slice(z, {0}, {1}), fx::reshape(padded, {7, 1}));
    return std::vector<fx::Array>{padded, carry, ys, fx::take(padded, fx::array({6, 0, 3, 3}), 0)};
  };
  fx::Array z = ramp_complex(8, fx::complex64, 0.6);
  fx::Array start = fx::scalar(2);
  check_compiled(f, 1e-5, z, start);
}

// The gradient of a gather is a scatter_add of the cotangents: its eager kernel takes complex
// values too (it raised a TypeError before). Checked against the same loss without the gather,
// each element weighted by how often the gather picks it, and against the compiled gradient.
TEST_CASE("jit complex: the gradient of a complex gather, eagerly and compiled") {
  fx::Array z = fx::complex(fx::array({1.f, 2.f, 3.f}), fx::array({0.5f, -1.f, 2.f}));
  fx::Array idx = fx::array({2, 0, 2});
  auto gathered = [&](const fx::Array& z) {
    fx::Array t = fx::take(z, idx, 0);
    return fx::sum(fx::real(t * fx::conj(t)) + fx::imag(t));
  };
  auto weighted = [](const fx::Array& z) {
    return fx::sum((fx::real(z * fx::conj(z)) + fx::imag(z)) * fx::array({1.f, 0.f, 2.f}));
  };
  const fx::Array eager = fx::grad(gathered)(z);
  CHECK(complex_diff(eager, fx::grad(weighted)(z)) < 1e-5);
  CHECK(complex_diff(eager, fx::jit(fx::grad(gathered))(z)) < 1e-5);
}

// Complex cumsum (accumulated in complex128, as eagerly) and argmax/argmin (lexicographic, the
// first NaN winning) compile; the op table's complex.cumsum/argmax entries check them against
// std::complex references under every transform.
TEST_CASE("jit complex: cumsum, argmax and argmin of complex values compile and match eager") {
  auto f = [](const fx::Array& z) {
    fx::Array m = fx::reshape(z, {2, 4});
    return std::vector<fx::Array>{fx::cumsum(m * m, 1), fx::cumsum(z), fx::argmax(m, 1), fx::argmin(m, 1),
                                  fx::argmax(fx::conj(z)), fx::argmin(z)};
  };
  for (fx::DType d : {fx::complex64, fx::complex128}) {
    CAPTURE(fx::dtype_name(d));
    // Real parts that tie (the imaginary parts decide) and one NaN imaginary part in row 1.
    const double nan = std::nan("");
    fx::Array z = fx::astype(fx::array(std::vector<cd>{{1, 0.5}, {2, -1}, {2, 1}, {0, 3}, {1, 0}, {1, nan}, {-1, 0}, {1, 2}}), d);
    check_compiled(f, d == fx::complex64 ? 1e-6 : 1e-14, z);
    std::vector<fx::Array> r = f(z);
    CHECK(r[2].to_vector<int32_t>() == std::vector<int32_t>{2, 1});  // row 1: the NaN
    CHECK(r[3].to_vector<int32_t>() == std::vector<int32_t>{3, 1});
  }
}

// Elementwise chains run as vector loops over the planar parts (lowering/vectorize_complex.cpp):
// lengths below, at and around the vector step (the remainder runs scalar), a transposed operand
// (lanes loaded one by one), broadcast ones (a row, a column, a 0-d array), a strided slice and a
// bool result, in both precisions. The jit_tests_x86_64_v* meson tests run it again at the AVX2
// and SSE vector widths.
TEST_CASE("jit complex: fused elementwise chains vectorized over planar parts match eager") {
  auto chain = [](const fx::Array& z, const fx::Array& w) {
    fx::Array e = z * fx::exp(w * cf(0, 1)) + fx::conj(z);
    return std::vector<fx::Array>{e / (w + cf(0.5f, -0.25f)), fx::sqrt(z) * fx::log(w) - fx::sin(z),
                                  fx::abs(e) + fx::angle(w), fx::complex(fx::real(w) * 2.f, fx::imag(z)),
                                  z == fx::where(fx::imag(z) > 0.f, z, w)};
  };
  for (fx::DType d : {fx::complex64, fx::complex128})
    for (int64_t n : {1, 7, 31, 33, 64, 1000, 4099}) {
      CAPTURE(fx::dtype_name(d));
      CAPTURE(n);
      fx::Array z = ramp_complex(n, d, 0.1), w = ramp_complex(n, d, 1.3);
      check_compiled(chain, d == fx::complex64 ? 1e-4 : 1e-11, z, w);
    }

  auto mixed = [](const fx::Array& a, const fx::Array& b, const fx::Array& row, const fx::Array& col, const fx::Array& s) {
    fx::Array t = fx::transpose(b, {1, 0});
    return std::vector<fx::Array>{a * t + row, fx::exp(a) / (col + 1.f) - t * row * s, a * s + col * row};
  };
  const int64_t rows = 5, cols = 37;
  for (fx::DType d : {fx::complex64, fx::complex128}) {
    CAPTURE(fx::dtype_name(d));
    fx::Array a = fx::reshape(ramp_complex(rows * cols, d, 0.2), {rows, cols});
    fx::Array b = fx::reshape(ramp_complex(rows * cols, d, 0.9), {cols, rows});
    fx::Array row = ramp_complex(cols, d, 2.1), col = fx::reshape(ramp_complex(rows, d, 0.4), {rows, 1});
    fx::Array s = fx::reshape(ramp_complex(1, d, 0.7), {});
    check_compiled(mixed, d == fx::complex64 ? 1e-4 : 1e-11, a, b, row, col, s);

    auto every_other = [](const fx::Array& z) { return std::vector<fx::Array>{fx::exp(fx::slice(z, {1}, {199}, {2})) * cf(2, -1)}; };
    check_compiled(every_other, d == fx::complex64 ? 1e-4 : 1e-11, ramp_complex(200, d, 0.5));
  }
}

// The chain of bench/bench_complex.cpp compiles to vector code: its lowered module shuffles the
// parts apart and back together (without the planar loops it had no vector op at all).
TEST_CASE("jit complex: an elementwise chain compiles to planar vector code") {
  const std::string dir = "/tmp/fluxion_test_planar_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto chain = [](const fx::Array& z, const fx::Array& w) { return z * fx::exp(w * cf(0, 1)) + fx::conj(z); };
  fx::Array z = ramp_complex(4096, fx::complex64, 0.3), w = ramp_complex(4096, fx::complex64, 1.7);
  const test_helpers::ScopedEnv dump("FLUXION_DUMP", dir);
  fx::Array got = fx::jit(chain)(z, w);
  dump.set(nullptr);
  CHECK(complex_diff(got, chain(z, w)) < 1e-4);
  std::string lowered;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().string().ends_with(".lowered.mlir")) {
      std::ifstream in(e.path());
      lowered.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  std::filesystem::remove_all(dir);
  REQUIRE_FALSE(lowered.empty());
  CHECK(lowered.find("llvm.shufflevector") != std::string::npos);
}

// Special values through the vector loop and through the scalar one (a length-1 array is shorter
// than the vector step): the same expansion -- Smith's division, the scaled modulus, the square
// root's branches -- so the same results, NaNs where the scalar loop has them.
TEST_CASE("jit complex: special values give the same results in the vector loop as in the scalar one") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const double specials[] = {0.0, -0.0, inf, -inf, nan, 1.0, -2.5, 1e30, 1e-30};
  std::vector<cd> zs, ws;
  for (double re : specials)
    for (double im : specials) {
      zs.emplace_back(re, im);
      ws.emplace_back(im, -re * 0.5);
    }
  auto f = [](const fx::Array& z, const fx::Array& w) {
    return std::vector<fx::Array>{z / w, z * w + fx::conj(z), fx::abs(z), fx::sqrt(z), z == w};
  };
  auto same = [](const fx::Array& a, const fx::Array& b) {  // equal, or NaN in the same parts
    auto parts = [](const fx::Array& x) {
      if (!fx::is_complex(x.dtype())) return fx::astype(x, fx::float64).to_vector<double>();
      std::vector<double> p = fx::astype(fx::real(x), fx::float64).to_vector<double>();
      for (double v : fx::astype(fx::imag(x), fx::float64).to_vector<double>()) p.push_back(v);
      return p;
    };
    std::vector<double> x = parts(a), y = parts(b);
    for (size_t i = 0; i < x.size(); ++i)
      if (!((std::isnan(x[i]) && std::isnan(y[i])) || x[i] == y[i])) return false;
    return x.size() == y.size();
  };
  for (fx::DType d : {fx::complex64, fx::complex128}) {
    CAPTURE(fx::dtype_name(d));
    fx::Array z = fx::astype(fx::array(zs), d), w = fx::astype(fx::array(ws), d);
    auto jf = fx::jit(f);
    std::vector<fx::Array> vectorized = jf(z, w);
    for (int64_t i = 0; i < int64_t(zs.size()); ++i) {
      CAPTURE(i);
      std::vector<fx::Array> scalar = jf(fx::slice(z, {i}, {i + 1}), fx::slice(w, {i}, {i + 1}));
      for (size_t k = 0; k < scalar.size(); ++k) {
        CAPTURE(k);
        CHECK(same(fx::slice(vectorized[k], {i}, {i + 1}), scalar[k]));
      }
    }
  }
}
