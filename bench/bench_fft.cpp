// The FFT of 2^20 complex64 points (issue 15's FFT row): fx::fft::fft eagerly and under fx::jit
// (a library call of the same FFTW kernel from the compiled code) against FFTW called directly on the
// same data in the same run -- an out-of-place plan with FFTW_ESTIMATE, the flags the kernel uses,
// and for reference one planned with FFTW_MEASURE -- and against Eigen's FFT module (its default
// kissfft backend), the other candidate for the kernel. Ratio = baseline time / Fluxion time
// (above 1: Fluxion faster).
//
// The sides are timed interleaved, one call of each in turn (a round: the best of `repeats` such
// turns per side; the best round per side is printed, and every round's ratio), so that a slow
// second on a shared machine falls on all sides alike. Two ways of calling FFTW
// directly: into one preallocated output, and into two outputs used in turn -- which is what
// `y = fft(x)` does in a loop, since the new result is allocated while the old one is alive: its
// working set is the input and two outputs (24 MiB here), and so is the second direct row's. A
// third Fluxion row releases y first (one output, as the first direct row).
//
// FLUXION_FFT_PLANNER=measure makes Fluxion plan with FFTW_MEASURE (the first call then pays for
// planning: printed as "first call").
//
// Run: build/bench/fluxion_bench_fft [repeats] [log2 n] [rounds].
#include <fftw3.h>
#include <fluxion.h>

#include <unsupported/Eigen/FFT>
#include <algorithm>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "bench/timing.h"

namespace fx = fluxion;
using cf = std::complex<float>;

namespace {

struct Side {
  const char* name;
  std::function<void()> call;
  std::vector<double> ms;  // best of `repeats` per round
  double best() const { return *std::min_element(ms.begin(), ms.end()); }
};

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 10;
  const int log2n = argc > 2 ? std::atoi(argv[2]) : 20;
  const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3;
  const size_t n = size_t(1) << log2n;
  const int threads = std::max(1, std::atoi(std::getenv("FLUXION_NUM_THREADS") ? std::getenv("FLUXION_NUM_THREADS") : "2"));
  std::vector<cf> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = cf(float(std::sin(0.001 * double(i))), float(std::cos(0.37 * double(i))));
  fx::Array x = fx::array(data);

  fx::Array y;
  const double first = fluxion_bench::best_ms([&] { y = fx::fft::fft(x); }, 1);  // plans, then runs
  auto jf = fx::jit([](const fx::Array& a) { return fx::fft::fft(a); });

  // FFTW's plans are made after Fluxion's first call, so they run on the same threads (Fluxion
  // hands FFTW's parallel loops to its own pool: prims/fft_kernel.cpp).
  fftwf_complex* in = fftwf_alloc_complex(n);
  fftwf_complex* out = fftwf_alloc_complex(n);
  fftwf_complex* out2 = fftwf_alloc_complex(n);
  fftwf_init_threads();
  fftwf_plan_with_nthreads(1);
  fftwf_plan single = fftwf_plan_dft_1d(int(n), in, out, FFTW_FORWARD, FFTW_ESTIMATE);
  fftwf_plan_with_nthreads(threads);
  fftwf_plan estimate = fftwf_plan_dft_1d(int(n), in, out, FFTW_FORWARD, FFTW_ESTIMATE);
  std::copy(data.begin(), data.end(), reinterpret_cast<cf*>(in));
  bool second = false;

  std::vector<Side> sides = {
      {"fluxion eager (y = fft(x))", [&] { y = fx::fft::fft(x); }, {}},
      {"fluxion jit (y = f(x))", [&] { y = jf(x); }, {}},
      {"fluxion eager, y released first", [&] { y = fx::Array(); y = fx::fft::fft(x); }, {}},
      {"FFTW direct, ESTIMATE, one output", [&] { fftwf_execute(estimate); }, {}},
      {"FFTW direct, ESTIMATE, two outputs", [&] {
         fftwf_execute_dft(estimate, in, (second = !second) ? out2 : out);
       }, {}},
  };
  for (Side& s : sides) s.call();  // warm-up: plans, the jit's trace, first touch of the buffers
  for (int r = 0; r < rounds; ++r) {
    for (Side& s : sides) s.ms.push_back(1e300);
    for (int k = 0; k < repeats; ++k)  // call by call in turn, so that a slow second hits every side
      for (Side& s : sides) s.ms.back() = std::min(s.ms.back(), fluxion_bench::best_ms(s.call, 1));
  }
  const double fftw_single = fluxion_bench::best_ms([&] { fftwf_execute(single); }, repeats);

  // The check that both computed the same transform.
  fftwf_execute(estimate);
  y = fx::fft::fft(x);
  double err = 0, scale = 0;
  std::vector<cf> got = y.to_vector<cf>();
  for (size_t i = 0; i < n; ++i) {
    err = std::max(err, double(std::abs(got[i] - reinterpret_cast<cf*>(out)[i])));
    scale = std::max(scale, double(std::abs(reinterpret_cast<cf*>(out)[i])));
  }
  fftwf_plan measure = fftwf_plan_dft_1d(int(n), in, out, FFTW_FORWARD, FFTW_MEASURE);  // overwrites `in`
  std::copy(data.begin(), data.end(), reinterpret_cast<cf*>(in));
  fftwf_execute(measure);
  const double fftw_measure = fluxion_bench::best_ms([&] { fftwf_execute(measure); }, repeats);

  Eigen::FFT<float> eigen_fft;
  std::vector<cf> eigen_out(n);
  eigen_fft.fwd(eigen_out, data);
  const double eigen = fluxion_bench::best_ms([&] { eigen_fft.fwd(eigen_out, data); }, repeats);

  const Side &eager = sides[0], &jit = sides[1], &direct = sides[3], &direct2 = sides[4];
  std::printf("FFT of 2^%d complex64, %d threads (%d interleaved rounds, best of %d per round)\n", log2n, threads, rounds,
              repeats);
  std::printf("  fluxion first call                   %8.3f ms (planner: %s)\n", first,
              std::getenv("FLUXION_FFT_PLANNER") ? std::getenv("FLUXION_FFT_PLANNER") : "estimate");
  for (const Side& s : sides) {
    std::printf("  %-36s %8.3f ms   rounds:", s.name, s.best());
    for (double t : s.ms) std::printf(" %.3f", t);
    std::printf("\n");
  }
  // Per round: the direct plan's time / Fluxion's, each Fluxion side against the direct call whose
  // outputs it matches.
  auto ratios = [&](const char* what, const Side& f, const Side& d) {
    std::printf("  %-52s best %5.2fx   rounds:", what, d.best() / f.best());
    for (size_t r = 0; r < f.ms.size(); ++r) std::printf(" %.2fx", d.ms[r] / f.ms[r]);
    std::printf("\n");
  };
  ratios("direct one output / eager y released first", sides[2], direct);
  ratios("direct two outputs / eager", eager, direct2);
  ratios("direct two outputs / jit", jit, direct2);
  ratios("direct one output / eager", eager, direct);
  std::printf("  FFTW direct, ESTIMATE, 1 thread      %8.3f ms   ratio to eager %5.2fx\n", fftw_single,
              fftw_single / eager.best());
  std::printf("  FFTW direct, MEASURE, %d threads      %8.3f ms   ratio to eager %5.2fx\n", threads, fftw_measure,
              fftw_measure / eager.best());
  std::printf("  Eigen FFT (kissfft)                  %8.3f ms   ratio to eager %5.2fx\n", eigen, eigen / eager.best());
  std::printf("  max |fluxion - fftw| = %.3g (max |y| = %.3g)\n", err, scale);
  fftwf_destroy_plan(single);
  fftwf_destroy_plan(estimate);
  fftwf_destroy_plan(measure);
  fftwf_free(in);
  fftwf_free(out);
  fftwf_free(out2);
  return err <= 1e-5 * scale ? 0 : 1;
}
