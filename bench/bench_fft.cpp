// The FFT of 2^20 complex64 points (issue 15's FFT row): fx::fft::fft eagerly and under fx::jit
// (a library call of the same FFTW kernel from the compiled code) against FFTW called directly on the
// same data in the same run -- an out-of-place plan with FFTW_ESTIMATE, the flags the kernel uses,
// and for reference one planned with FFTW_MEASURE -- and against Eigen's FFT module (its default
// kissfft backend), the other candidate for the kernel. Ratio = baseline time / Fluxion time
// (above 1: Fluxion faster). Fluxion's time includes allocating its output, FFTW's does not.
//
// FLUXION_FFT_PLANNER=measure makes Fluxion plan with FFTW_MEASURE (the first call then pays for
// planning: printed as "first call").
//
// Run: build/bench/fluxion_bench_fft [repeats] [log2 n].
#include <fftw3.h>
#include <fluxion.h>

#include <unsupported/Eigen/FFT>
#include <algorithm>
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
  const int threads = std::max(1, std::atoi(std::getenv("FLUXION_NUM_THREADS") ? std::getenv("FLUXION_NUM_THREADS") : "2"));
  std::vector<cf> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = cf(float(std::sin(0.001 * double(i))), float(std::cos(0.37 * double(i))));
  fx::Array x = fx::array(data);
  auto best = [&](const std::function<void()>& f) {
    f();  // warm-up: plans, the jit's trace, first-touch of the buffers
    return fluxion_bench::best_ms(f, repeats);
  };

  fx::Array y;
  const double first = fluxion_bench::best_ms([&] { y = fx::fft::fft(x); }, 1);  // plans, then runs
  const double eager = best([&] { y = fx::fft::fft(x); });
  auto jf = fx::jit([](const fx::Array& a) { return fx::fft::fft(a); });
  const double jit = best([&] { y = jf(x); });

  fftwf_complex* in = fftwf_alloc_complex(n);
  fftwf_complex* out = fftwf_alloc_complex(n);
  fftwf_init_threads();
  fftwf_plan_with_nthreads(1);
  fftwf_plan single = fftwf_plan_dft_1d(int(n), in, out, FFTW_FORWARD, FFTW_ESTIMATE);
  fftwf_plan_with_nthreads(threads);
  fftwf_plan estimate = fftwf_plan_dft_1d(int(n), in, out, FFTW_FORWARD, FFTW_ESTIMATE);
  std::copy(data.begin(), data.end(), reinterpret_cast<cf*>(in));
  const double fftw_single = best([&] { fftwf_execute(single); });
  const double fftw_estimate = best([&] { fftwf_execute(estimate); });
  // The check that both computed the same transform.
  double err = 0, scale = 0;
  std::vector<cf> got = y.to_vector<cf>();
  for (size_t i = 0; i < n; ++i) {
    err = std::max(err, double(std::abs(got[i] - reinterpret_cast<cf*>(out)[i])));
    scale = std::max(scale, double(std::abs(reinterpret_cast<cf*>(out)[i])));
  }
  fftwf_plan measure = fftwf_plan_dft_1d(int(n), in, out, FFTW_FORWARD, FFTW_MEASURE);  // overwrites `in`
  std::copy(data.begin(), data.end(), reinterpret_cast<cf*>(in));
  const double fftw_measure = best([&] { fftwf_execute(measure); });

  Eigen::FFT<float> eigen_fft;
  std::vector<cf> eigen_out(n);
  const double eigen = best([&] { eigen_fft.fwd(eigen_out, data); });

  std::printf("FFT of 2^%d complex64 (best of %d)\n", log2n, repeats);
  std::printf("  fluxion first call     %8.3f ms (planner: %s)\n", first,
              std::getenv("FLUXION_FFT_PLANNER") ? std::getenv("FLUXION_FFT_PLANNER") : "estimate");
  std::printf("  fluxion eager          %8.3f ms\n", eager);
  std::printf("  fluxion jit            %8.3f ms\n", jit);
  std::printf("  FFTW direct, ESTIMATE, 1 thread   %8.3f ms   ratio to eager %5.2fx\n", fftw_single, fftw_single / eager);
  std::printf("  FFTW direct, ESTIMATE, %d threads  %8.3f ms   ratio to eager %5.2fx\n", threads, fftw_estimate,
              fftw_estimate / eager);
  std::printf("  FFTW direct, MEASURE, %d threads   %8.3f ms   ratio to eager %5.2fx\n", threads, fftw_measure,
              fftw_measure / eager);
  std::printf("  Eigen FFT (kissfft)    %8.3f ms   ratio to eager %5.2fx\n", eigen, eigen / eager);
  std::printf("  max |fluxion - fftw| = %.3g (max |y| = %.3g)\n", err, scale);
  fftwf_destroy_plan(single);
  fftwf_destroy_plan(estimate);
  fftwf_destroy_plan(measure);
  fftwf_free(in);
  fftwf_free(out);
  return err <= 1e-5 * scale ? 0 : 1;
}
