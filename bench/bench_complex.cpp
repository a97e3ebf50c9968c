// Complex arithmetic under fx::jit (lowering/lower_complex.cpp) against the same work done other
// ways in the same run:
//   chain:  z * exp(i w) + conj(z) over n complex64 (default 2^20)
//     - fx::jit (one fused loop of complex.* ops, expanded to arith/math on the parts);
//     - eager (op by op: what the interpreter ran before complex programs compiled);
//     - a hand-written std::complex<float> loop (g++ -O3 as the benchmark is built);
//     - the same arithmetic on separate real and imaginary f32 arrays under fx::jit (the
//       target: lowering/vectorize_complex.cpp runs the complex loop on the planar parts too);
//     and the same chain in complex128 against planar f64 under fx::jit.
//   matmul: a 256x256 complex64 product, fx::jit (a contraction generic) against eager (Eigen).
//   spectral: one RK4 step of viscous Burgers, u_t = -u u_x + nu u_xx, pseudo-spectral on 16
//     periodic f32 signals of 4096 points (4 rfft and 8 irfft with elementwise work between):
//     fx::jit (FFTs as library calls, the elementwise work fused around them) against the same
//     traced program run by the interpreter (eval_program: what fx::jit did with any program
//     holding an FFT before the FFT compiled) and eagerly.
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
#include "ir/trace.h"

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

  // The same chain in complex128 against planar f64.
  fx::Array z2 = fx::astype(z, fx::complex128), w2 = fx::astype(w, fx::complex128);
  const double jit2 = best([&] { y = jf(z2, w2); });
  fx::Array a2 = fx::real(z2), b2 = fx::imag(z2), c2 = fx::real(w2), d2 = fx::imag(w2);
  const double split2 = best([&] { parts = planar(a2, b2, c2, d2); });
  const double err2 = fx::max(fx::abs(jf(z2, w2) - chain(z2, w2))).item<double>();
  std::printf("complex128 chain z*exp(i w) + conj(z), n = %zu (max |jit - eager| = %.2g)\n", n, err2);
  std::printf("  fx::jit (complex)          %9.3f ms\n", jit2);
  std::printf("  fx::jit on planar f64      %9.3f ms  ratio %.2f\n", split2, split2 / jit2);

  const int64_t m = 256;
  fx::Array p = fx::reshape(fx::slice(z, {0}, {m * m}), {m, m}), q = fx::reshape(fx::slice(w, {0}, {m * m}), {m, m});
  auto mm = [](const fx::Array& x, const fx::Array& y) { return fx::matmul(x, y); };
  auto jmm = fx::jit(mm);
  const double jit_mm = best([&] { y = jmm(p, q); });
  const double eager_mm = best([&] { y = mm(p, q); });
  std::printf("complex64 matmul %lldx%lld\n", (long long)m, (long long)m);
  std::printf("  fx::jit (contraction)      %9.3f ms\n", jit_mm);
  std::printf("  eager (Eigen)              %9.3f ms  ratio %.2f\n", eager_mm, eager_mm / jit_mm);

  // One RK4 step of viscous Burgers on [0, 2 pi): u_x = irfft(i k rfft(u)), u_xx = irfft(-k^2 rfft(u)).
  const int64_t batch = 16, points = 4096;
  auto burgers_step = [points](const fx::Array& u) {
    fx::Array k = fx::fft::rfftfreq(points, 1.0 / double(points));
    fx::Array ik = fx::complex(fx::zeros_like(k), k), k2 = -k * k;
    auto rhs = [&](const fx::Array& v) {
      fx::Array v_hat = fx::fft::rfft(v);
      fx::Array vx = fx::fft::irfft(v_hat * ik, points), vxx = fx::fft::irfft(v_hat * k2, points);
      return -v * vx + 0.01f * vxx;
    };
    const float dt = 1e-3f;
    fx::Array k1 = rhs(u), k2s = rhs(u + 0.5f * dt * k1), k3 = rhs(u + 0.5f * dt * k2s), k4 = rhs(u + dt * k3);
    return u + dt / 6 * (k1 + 2.f * k2s + 2.f * k3 + k4);
  };
  fx::Array x = fx::reshape(fx::arange(0.f, float(batch * points)), {batch, points}) * float(2 * M_PI / double(points));
  fx::Array u0 = fx::sin(x) + 0.5f * fx::cos(3.f * x);
  auto jstep = fx::jit(burgers_step);
  const double jit_step = best([&] { y = jstep(u0); });
  const fx::Program traced = fx::make_ir(burgers_step)(u0);
  const fx::Array u0s[] = {u0};
  const double interp_step = best([&] { y = fx::eval_program(traced, u0s)[0]; });
  const double eager_step = best([&] { y = burgers_step(u0); });
  const double step_err = fx::max(fx::abs(jstep(u0) - burgers_step(u0))).item<float>();
  std::printf("Burgers RK4 step, %lld x %lld f32 (4 rfft + 8 irfft; max |jit - eager| = %.2g)\n", (long long)batch,
              (long long)points, step_err);
  std::printf("  fx::jit                    %9.3f ms\n", jit_step);
  std::printf("  interpreted (eval_program) %9.3f ms  ratio %.2f\n", interp_step, interp_step / jit_step);
  std::printf("  eager                      %9.3f ms  ratio %.2f\n", eager_step, eager_step / jit_step);
  return 0;
}
