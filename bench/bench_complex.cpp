// Complex arithmetic under fx::jit (lowering/lower_complex.cpp) against the same work done other
// ways in the same run:
//   chain:  z * exp(i w) + conj(z) over n complex64 (default 2^20)
//     - fx::jit (one fused loop of complex.* ops, expanded to arith/math on the parts);
//     - eager (op by op: what the interpreter ran before complex programs compiled);
//     - a hand-written std::complex<float> loop (g++ -O3 as the benchmark is built);
//     - the same arithmetic on separate real and imaginary f32 arrays under fx::jit (what the
//       vectorizer makes of it when the elements are real).
//   matmul: a 256x256 complex64 product, fx::jit (a contraction generic) against eager (Eigen).
// Ratio = baseline time / Fluxion jit time (above 1: the jit is faster). Best of `repeats`.
//
// Run: build/bench/fluxion_bench_complex [repeats] [log2 n].
#include <fluxion.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/timing.h"

namespace fx = fluxion;
using cf = std::complex<float>;

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 10;
  const int log2n = argc > 2 ? std::atoi(argv[2]) : 20;
  const size_t n = size_t(1) << log2n;
  std::vector<cf> zs(n), ws(n);
  for (size_t i = 0; i < n; ++i) {
    zs[i] = cf(float(std::sin(0.001 * double(i))), float(std::cos(0.37 * double(i))));
    ws[i] = cf(float(std::cos(0.002 * double(i))), 0.25f * float(std::sin(0.11 * double(i))));
  }
  fx::Array z = fx::array(zs), w = fx::array(ws);
  auto best = [&](const std::function<void()>& f) {
    f();  // warm-up: the jit's trace and compile, first touch of the buffers
    return fluxion_bench::best_ms(f, repeats);
  };

  auto chain = [](const fx::Array& a, const fx::Array& b) { return a * fx::exp(b * cf(0, 1)) + fx::conj(a); };
  fx::Array y;
  auto jf = fx::jit(chain);
  const double jit = best([&] { y = jf(z, w); });
  const double eager = best([&] { y = chain(z, w); });

  std::vector<cf> out(n);
  const double loop = best([&] {
    for (size_t i = 0; i < n; ++i) out[i] = zs[i] * std::exp(ws[i] * cf(0, 1)) + std::conj(zs[i]);
  });
  double err = 0;
  std::vector<cf> got = jf(z, w).to_vector<cf>();
  for (size_t i = 0; i < n; ++i) err = std::max(err, double(std::abs(got[i] - out[i])));

  // The same on planar parts: z = (a, b), w = (c, d); z e^{iw} + conj z =
  // e^{-d} ((a cos c - b sin c) + i (a sin c + b cos c)) + (a - i b).
  fx::Array a = fx::real(z), b = fx::imag(z), c = fx::real(w), d = fx::imag(w);
  auto planar = fx::jit([](const fx::Array& a, const fx::Array& b, const fx::Array& c, const fx::Array& d) {
    fx::Array s = fx::exp(-d), cc = fx::cos(c), sc = fx::sin(c);
    return std::vector<fx::Array>{s * (a * cc - b * sc) + a, s * (a * sc + b * cc) - b};
  });
  std::vector<fx::Array> parts;
  const double split = best([&] { parts = planar(a, b, c, d); });

  std::printf("complex64 chain z*exp(i w) + conj(z), n = %zu (max |jit - loop| = %.2g)\n", n, err);
  std::printf("  fx::jit (complex)          %9.3f ms\n", jit);
  std::printf("  eager (interpreted path)   %9.3f ms  ratio %.2f\n", eager, eager / jit);
  std::printf("  std::complex loop          %9.3f ms  ratio %.2f\n", loop, loop / jit);
  std::printf("  fx::jit on planar f32      %9.3f ms  ratio %.2f\n", split, split / jit);

  const int64_t m = 256;
  fx::Array p = fx::reshape(fx::slice(z, {0}, {m * m}), {m, m}), q = fx::reshape(fx::slice(w, {0}, {m * m}), {m, m});
  auto mm = [](const fx::Array& x, const fx::Array& y) { return fx::matmul(x, y); };
  auto jmm = fx::jit(mm);
  const double jit_mm = best([&] { y = jmm(p, q); });
  const double eager_mm = best([&] { y = mm(p, q); });
  std::printf("complex64 matmul %lldx%lld\n", (long long)m, (long long)m);
  std::printf("  fx::jit (contraction)      %9.3f ms\n", jit_mm);
  std::printf("  eager (Eigen)              %9.3f ms  ratio %.2f\n", eager_mm, eager_mm / jit_mm);
  return 0;
}
