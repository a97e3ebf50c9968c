// Where a divide-and-conquer eigh's time goes (docs/linalg.md, "eigh: syevd's steps"): OpenBLAS's
// dsyevd whole, then each of its steps alone on the previous step's output -- dsytrd (to a
// tridiagonal), dstedc('I') (the tridiagonal's eigenvectors), dormtr (their back-transformation) --
// and the alternatives dstemr (MRRR in dstedc's place) and dsyevr, on one and on two OpenBLAS threads;
// then Fluxion's eigh kernel (eigh_lower: syevd's steps, the back-transformation and stedc's first
// split its own) on Fluxion's threads. One uniform random symmetric float64 matrix, column-major;
// the copy of the input before each call is not timed. Best of `repeats`, ms.
//
// Run: build/bench/fluxion_bench_eigh_steps [repeats] [n]   (defaults 5, 512)
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "prims/library_threads.h"
#include "prims/linalg_eigh_lapack.h"

extern "C" {
void dsyevd_(const char*, const char*, const int*, double*, const int*, double*, double*, const int*, int*, const int*,
             int*, size_t, size_t);
void dsytrd_(const char*, const int*, double*, const int*, double*, double*, double*, double*, const int*, int*, size_t);
void dstedc_(const char*, const int*, double*, double*, double*, const int*, double*, const int*, int*, const int*, int*,
             size_t);
void dormtr_(const char*, const char*, const char*, const int*, const int*, const double*, const int*, const double*,
             double*, const int*, double*, const int*, int*, size_t, size_t, size_t);
void dstemr_(const char*, const char*, const int*, double*, double*, const double*, const double*, const int*,
             const int*, int*, double*, double*, const int*, const int*, int*, int*, double*, const int*, int*,
             const int*, int*, size_t, size_t);
void dsyevr_(const char*, const char*, const char*, const int*, double*, const int*, const double*, const double*,
             const int*, const int*, const double*, int*, double*, double*, const int*, int*, double*, const int*,
             int*, const int*, int*, size_t, size_t, size_t);
}

namespace {

int g_repeats = 5;

// The best time of `f` over g_repeats calls, each after an untimed `prepare`.
double best_ms(const std::function<void()>& prepare, const std::function<void()>& f) {
  double best = 1e300;
  for (int r = 0; r < g_repeats; ++r) {
    prepare();
    auto t = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_repeats = std::max(1, std::atoi(argv[1]));
  int n = argc > 2 ? std::max(2, std::atoi(argv[2])) : 512;
  const size_t nn = size_t(n) * size_t(n);
  std::vector<double> a0(nn), g(nn);
  unsigned s = 13;
  for (double& x : g) x = ((s = s * 1664525u + 1013904223u) >> 8) * (2.0 / 16777216.0) - 1.0;
  for (size_t i = 0; i < size_t(n); ++i)
    for (size_t j = 0; j < size_t(n); ++j) a0[i + j * n] = 0.5 * (g[i + j * n] + g[j + i * n]);
  std::vector<double> a(nn), q(nn), z(nn), z0(nn), w(n), d(n), e(n), tau(n), d0, e0;
  std::vector<int> isuppz(2 * size_t(n));
  const int lwork = 2 * n * n + 64 * n + 1, liwork = 10 * n + 3;
  std::vector<double> work(static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  int info = 0, found = 0, il = 0, iu = 0, nzc = n, tryrac = 1;
  const double vl = 0, vu = 0, abstol = 0;
  auto copy_a = [&] { a = a0; };
  // The steps' inputs: a after sytrd (q, tau), T (d0, e0), T's eigenvectors (z0).
  copy_a();
  dsytrd_("L", &n, a.data(), &n, d.data(), e.data(), tau.data(), work.data(), &lwork, &info, 1);
  q = a, d0 = d, e0 = e;
  dstedc_("I", &n, d.data(), e.data(), z0.data(), &n, work.data(), &lwork, iwork.data(), &liwork, &info, 1);
  auto copy_t = [&] { d = d0, e = e0; };
  std::printf("eigh %d x %d float64, best of %d, ms\n", n, n, g_repeats);
  for (int threads : {1, 2}) {
    openblas_set_num_threads(threads);
    auto row = [&](const char* name, const std::function<void()>& prepare, const std::function<void()>& f) {
      std::printf("  %d thread%s  %-34s %9.3f\n", threads, threads > 1 ? "s" : " ", name, best_ms(prepare, f));
    };
    row("dsyevd('V', 'L')", copy_a, [&] {
      dsyevd_("V", "L", &n, a.data(), &n, w.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
    });
    row("  dsytrd('L')", copy_a, [&] {
      dsytrd_("L", &n, a.data(), &n, d.data(), e.data(), tau.data(), work.data(), &lwork, &info, 1);
    });
    row("  dstedc('I')", copy_t, [&] {
      dstedc_("I", &n, d.data(), e.data(), z.data(), &n, work.data(), &lwork, iwork.data(), &liwork, &info, 1);
    });
    row("  dormtr('L', 'L', 'N')", [&] { z = z0; }, [&] {
      dormtr_("L", "L", "N", &n, &n, q.data(), &n, tau.data(), z.data(), &n, work.data(), &lwork, &info, 1, 1, 1);
    });
    row("  dstemr('V', 'A') (for dstedc)", copy_t, [&] {
      dstemr_("V", "A", &n, d.data(), e.data(), &vl, &vu, &il, &iu, &found, w.data(), z.data(), &n, &nzc,
              isuppz.data(), &tryrac, work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
    });
    row("dsyevr('V', 'A', 'L')", copy_a, [&] {
      dsyevr_("V", "A", "L", &n, a.data(), &n, &vl, &vu, &il, &iu, &abstol, &found, w.data(), z.data(), &n,
              isuppz.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1, 1);
    });
  }
  // eigh_lower sets OpenBLAS to Fluxion's thread count (FLUXION_NUM_THREADS, or every core) itself.
  const int threads = fluxion::library_threads();
  openblas_set_num_threads(threads);
  const double fluxion_ms =
      best_ms(copy_a, [&] { fluxion::linalg_rules::eigh_lower(n, a.data(), w.data(), z.data()); });
  std::printf("  %d thread%s  %-34s %9.3f\n", threads, threads > 1 ? "s" : " ", "Fluxion's eigh_lower", fluxion_ms);
  return 0;
}
