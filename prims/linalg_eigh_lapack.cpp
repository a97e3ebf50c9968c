// eigh of a large symmetric matrix as LAPACK's divide-and-conquer syevd does it -- sytrd reduces it to
// a tridiagonal T = Q^T A Q, stedc finds T's eigenvectors Z, and the eigenvectors are Q Z -- with
// two steps done differently (docs/linalg.md has the measurements, and what each step costs):
// - Q Z here instead of by ormtr. ormtr applies Q's reflectors in blocks of 32 (larfb): per block,
//   a triangular product with the block's triangle of V, copies of c's rows transposed, and the
//   triangular factor T built a column at a time by matrix-vector products. Here each block's V is
//   copied out explicitly (zeros above its diagonal, ones on it), so the block is two matrix
//   products and a 64 x 64 triangular one, and T comes from matrix products too (block_reflector).
//   512 x 512 float64, OpenBLAS 0.3.21, at rest: 5.2-5.7 ms where ormtr took 10.0-11.0 on two
//   threads, 8.0 against 13.0 on one.
// - On two threads or more, stedc's first split of T done here, the halves solved at once
//   (tridiagonal_eigh): 7.3-8.1 ms against 9.5-9.8 for stedc whole (stand-alone).
// eigh 512 x 512 in Fluxion: 19.2-20.7 ms against 26.5-27.3 with syevd (same pauses).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <system_error>
#include <thread>

#include <sched.h>
#include <limits>

#include "prims/lapack_scratch.h"
#include "prims/library_threads.h"
#include "prims/linalg_eigh_lapack.h"

// LAPACK's Fortran entry points (32-bit integers; the trailing size_t: the character argument's length).
extern "C" {
void ssytrd_(const char* uplo, const int* n, float* a, const int* lda, float* d, float* e, float* tau, float* work,
             const int* lwork, int* info, size_t);
void dsytrd_(const char* uplo, const int* n, double* a, const int* lda, double* d, double* e, double* tau,
             double* work, const int* lwork, int* info, size_t);
void sstedc_(const char* compz, const int* n, float* d, float* e, float* z, const int* ldz, float* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t);
void dstedc_(const char* compz, const int* n, double* d, double* e, double* z, const int* ldz, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t);
void slaed1_(const int* n, float* d, float* q, const int* ldq, int* indxq, const float* rho, const int* cutpnt,
             float* work, int* iwork, int* info);
void dlaed1_(const int* n, double* d, double* q, const int* ldq, int* indxq, const double* rho, const int* cutpnt,
             double* work, int* iwork, int* info);
}

namespace fluxion::linalg_rules {
namespace {

void sytrd(int n, float* a, float* d, float* e, float* tau, float* w, int lw, int* info) {
  ssytrd_("L", &n, a, &n, d, e, tau, w, &lw, info, 1);
}
void sytrd(int n, double* a, double* d, double* e, double* tau, double* w, int lw, int* info) {
  dsytrd_("L", &n, a, &n, d, e, tau, w, &lw, info, 1);
}
// z's leading dim ldz (n if 0).
void stedc(int n, float* d, float* e, float* z, float* w, int lw, int* iw, int liw, int* info, int ldz = 0) {
  ldz = ldz ? ldz : n;
  sstedc_("I", &n, d, e, z, &ldz, w, &lw, iw, &liw, info, 1);
}
void stedc(int n, double* d, double* e, double* z, double* w, int lw, int* iw, int liw, int* info, int ldz = 0) {
  ldz = ldz ? ldz : n;
  dstedc_("I", &n, d, e, z, &ldz, w, &lw, iw, &liw, info, 1);
}
void laed1(int n, float* d, float* q, int* indxq, float rho, int cut, float* w, int* iw, int* info) {
  slaed1_(&n, d, q, &n, indxq, &rho, &cut, w, iw, info);
}
void laed1(int n, double* d, double* q, int* indxq, double rho, int cut, double* w, int* iw, int* info) {
  dlaed1_(&n, d, q, &n, indxq, &rho, &cut, w, iw, info);
}
// Column-major c [m, n] = alpha op(a) b + beta c.
void gemm(CBLAS_TRANSPOSE ta, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc) {
  cblas_sgemm(CblasColMajor, ta, CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm(CBLAS_TRANSPOSE ta, int m, int n, int k, double alpha, const double* a, int lda, const double* b, int ldb,
          double beta, double* c, int ldc) {
  cblas_dgemm(CblasColMajor, ta, CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
// Column-major b [m, n] = alpha t b (left) or alpha b t (right), t upper triangular.
void trmm(CBLAS_SIDE side, int m, int n, float alpha, const float* t, int ldt, float* b, int ldb) {
  cblas_strmm(CblasColMajor, side, CblasUpper, CblasNoTrans, CblasNonUnit, m, n, alpha, t, ldt, b, ldb);
}
void trmm(CBLAS_SIDE side, int m, int n, double alpha, const double* t, int ldt, double* b, int ldb) {
  cblas_dtrmm(CblasColMajor, side, CblasUpper, CblasNoTrans, CblasNonUnit, m, n, alpha, t, ldt, b, ldb);
}

// Reflectors per block of the back-transformation: 64 measured best on two threads (fewer, larger
// products), within 3% of 32 on one.
constexpr int kBlock = 64;

// The upper triangular t [k, k] (leading dim ldt) with H(0) ... H(k-1) = I - V t V^T, where
// H(j) = I - tau_j v_j v_j^T and v_j is column j of the explicit v [m, k] (leading dim ldv). Split in
// two, t = [t1, -t1 (V1^T V2) t2; 0, t2]: V2 is zero in V1's first k1 rows, so V1^T V2 is a product
// over the rest. Blocks of up to 8 reflectors are built a column at a time, t(0:j, j) =
// -tau_j t(0:j, 0:j) V(:, 0:j)^T v_j. A reflector with tau = 0 (the identity) gets a zero row and column.
template <class T>
void block_reflector(int m, int k, const T* v, int ldv, const T* tau, T* t, int ldt) {
  if (k <= 8) {
    for (int j = 0; j < k; ++j) {
      T* tj = t + j * ldt;
      tj[j] = tau[j];
      for (int i = 0; i < j; ++i) {
        T s = 0;
        for (int r = j; r < m; ++r) s += v[r + i * ldv] * v[r + j * ldv];
        tj[i] = -tau[j] * s;
      }
      for (int i = 0; i < j; ++i) {  // t(0:j, j) = t(0:j, 0:j) t(0:j, j), top down: row i reads rows >= i
        T s = 0;
        for (int l = i; l < j; ++l) s += t[i + l * ldt] * tj[l];
        tj[i] = s;
      }
    }
    return;
  }
  const int k1 = k / 2, k2 = k - k1;
  T *t2 = t + k1 + k1 * ldt, *t12 = t + k1 * ldt;
  block_reflector(m, k1, v, ldv, tau, t, ldt);
  block_reflector(m - k1, k2, v + k1 + k1 * ldv, ldv, tau + k1, t2, ldt);
  gemm(CblasTrans, k1, k2, m - k1, T(1), v + k1, ldv, v + k1 + k1 * ldv, ldv, T(0), t12, ldt);
  trmm(CblasLeft, k1, k2, T(-1), t, ldt, t12, ldt);
  trmm(CblasRight, k1, k2, T(1), t2, ldt, t12, ldt);
}

// z [n, n] (column-major) = Q z, Q = H(0) ... H(n-2) from sytrd('L') on a: H(j) acts on rows j+1..,
// its vector's one on a's subdiagonal (implied) and the rest below it in column j. Blocks of kBlock
// reflectors, the last block first: z[r0:, :] -= V (t (V^T z[r0:, :])), r0 = j0 + 1.
// `work`: (n - 1) kBlock + kBlock^2 + kBlock n elements.
template <class T>
void back_transform(int n, const T* a, const T* tau, T* z, T* work) {
  const int k = n - 1;  // reflectors
  T *v = work, *t = v + size_t(k) * kBlock, *y = t + kBlock * kBlock;
  for (int j0 = (k - 1) / kBlock * kBlock; j0 >= 0; j0 -= kBlock) {
    const int kb = std::min(kBlock, k - j0), m = k - j0;  // the block's reflectors; the rows they touch
    for (int j = 0; j < kb; ++j) {
      const T* col = a + size_t(j0 + j) * n + (j0 + 1);  // column j0 + j from row j0 + 1
      T* vj = v + size_t(j) * m;
      std::fill_n(vj, j, T(0));
      vj[j] = T(1);
      std::copy(col + j + 1, col + m, vj + j + 1);
    }
    block_reflector(m, kb, v, m, tau + j0, t, kBlock);
    T* zr = z + j0 + 1;
    gemm(CblasTrans, kb, n, m, T(1), v, m, zr, n, T(0), y, kb);
    trmm(CblasLeft, kb, n, T(1), t, kBlock, y, kb);
    gemm(CblasNoTrans, m, n, kb, T(-1), v, m, y, kb, T(1), zr, n);
  }
}

// LAPACK's workspace query answers in the matrix's type.
template <class T>
int work_size(T query) {
  return std::max(1, int(query));
}

// The cores this process may run on, read when the library loads: libomp pins the thread that opens
// its first parallel region to one core (prims/library_threads.h), and a thread it creates inherits that.
const cpu_set_t g_process_cores = [] {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) CPU_ZERO(&set);
  return set;
}();
void allow_every_core() {
  if (CPU_COUNT(&g_process_cores) > 0) sched_setaffinity(0, sizeof g_process_cores, &g_process_cores);
}

// stedc's divide and conquer solves its two halves one after the other, and most of its time is
// one thread's scalar code (the secular equations, laed4: 36% of its samples at 512 on one thread;
// the merges' products 30%). From kSplitFrom on, with two threads or more, the top level is done
// here: T = diag(T1, T2) + rho u u^T (T1's last and T2's first diagonal entries less |rho|, rho
// the subdiagonal entry between them, as stedc tears it), T1 and T2 solved by stedc at once on two
// threads (OpenBLAS on one thread each meanwhile), and LAPACK's own merge, laed1, on all threads;
// then the eigenpairs sorted as laed1 says. 512, float64, at rest: 7.3-8.1 ms against 9.5-9.8 for
// stedc whole on two threads; Fluxion's eigh 2-5% faster. The second half runs on a thread of its
// own: on libomp's pool (library_parallel) the same split made eigh slower, 27-28.6 ms against
// 20.5-20.8 without it (docs/linalg.md).
constexpr int kSplitFrom = 256;

template <class T>
int query_stedc(int n, int* liwork) {
  T query = 0;
  int info = 0;
  stedc(n, &query, &query, &query, &query, -1, liwork, -1, &info);  // a query reads no array
  return work_size(query);
}

// Eigenvalues (ascending, in d) and eigenvectors (z [n, n], column-major) of the tridiagonal matrix
// with diagonal d and subdiagonal e (destroyed). Returns LAPACK's info.
template <class T>
int tridiagonal_eigh(int n, T* d, T* e, T* z) {
  const int threads = library_threads();
  if (n < kSplitFrom || threads < 2) {
    int liwork = 0;
    const int lwork = query_stedc<T>(n, &liwork);
    Scratch<T> work = workspace<T>(size_t(lwork));
    Scratch<int> iwork = workspace<int>(size_t(std::max(1, liwork)));
    int info = 0;
    stedc(n, d, e, z, work.get(), lwork, iwork.get(), std::max(1, liwork), &info);
    return info;
  }
  // As stedc before its divide and conquer: T scaled to a largest entry of 1, so that laed1's
  // secular equations neither underflow nor overflow (a matrix scaled to 1e-300 lost its eigenvalues
  // without it); the eigenvalues are scaled back.
  T norm = std::fabs(d[n - 1]);
  for (int i = 0; i + 1 < n; ++i) norm = std::max({norm, std::fabs(d[i]), std::fabs(e[i])});
  if (!(norm > 0 && norm <= std::numeric_limits<T>::max())) norm = 1;  // zero, or NaN/inf: left to stedc
  for (int i = 0; i < n; ++i) d[i] /= norm;
  for (int i = 0; i + 1 < n; ++i) e[i] /= norm;
  const int m = n / 2, sizes[2] = {m, n - m}, first[2] = {0, m};
  const T rho = e[m - 1];
  d[m - 1] -= std::fabs(rho);
  d[m] -= std::fabs(rho);
  Scratch<T> q = workspace<T>(size_t(n) * size_t(n));  // diag(Q1, Q2), then laed1's Q
  std::memset(q.get(), 0, size_t(n) * size_t(n) * sizeof(T));
  int lwork[2], liwork[2], info[2] = {0, 0};
  Scratch<T> work[2];
  Scratch<int> iwork[2];
  for (int h = 0; h < 2; ++h) {
    lwork[h] = query_stedc<T>(sizes[h], &liwork[h]);
    liwork[h] = std::max(1, liwork[h]);
    work[h] = workspace<T>(size_t(lwork[h]));
    iwork[h] = workspace<int>(size_t(liwork[h]));
  }
  auto solve = [&](int h) {
    const size_t at = size_t(first[h]) * size_t(n) + size_t(first[h]);
    stedc(sizes[h], d + first[h], e + first[h], q.get() + at, work[h].get(), lwork[h], iwork[h].get(), liwork[h],
          &info[h], n);
  };
  openblas_set_num_threads(1);
  try {
    std::thread second([&] {
      allow_every_core();
      solve(1);
    });
    solve(0);
    second.join();
  } catch (const std::system_error&) {  // no thread to be had: one half after the other
    solve(0);
    solve(1);
  }
  openblas_set_num_threads(threads);
  if (info[0] != 0 || info[1] != 0) return info[0] != 0 ? info[0] : info[1];
  // laed1 takes each half's sorting permutation (1-based, within the half: stedc's are sorted) and
  // leaves the one that sorts the whole.
  Scratch<int> indxq = workspace<int>(size_t(n)), merge_iwork = workspace<int>(4 * size_t(n));
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < sizes[h]; ++i) indxq[first[h] + i] = i + 1;
  Scratch<T> merge_work = workspace<T>(4 * size_t(n) + size_t(n) * size_t(n)), w = workspace<T>(size_t(n));
  int merged = 0;
  laed1(n, d, q.get(), indxq.get(), rho, m, merge_work.get(), merge_iwork.get(), &merged);
  if (merged != 0) return merged;
  std::copy(d, d + n, w.get());
  for (int i = 0; i < n; ++i) {
    const int j = indxq[i] - 1;
    d[i] = w[j] * norm;
    std::memcpy(z + size_t(i) * n, q.get() + size_t(j) * n, size_t(n) * sizeof(T));
  }
  return 0;
}

template <class T>
int eigh_lower_impl(int n, T* a, T* w, T* z) {
  if (n <= 0) return 0;
  // As syevd: a matrix whose largest entry lies outside [rmin, rmax] is scaled into it, so that
  // sytrd's sums of squares neither overflow nor underflow; the eigenvalues are scaled back. (NaN:
  // no scaling, as syevd.)
  const T eps = std::numeric_limits<T>::epsilon(), small = std::numeric_limits<T>::min() / eps;
  const T rmin = std::sqrt(small), rmax = std::sqrt(1 / small);
  T anrm = 0;
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) {
      const T x = std::fabs(a[size_t(j) * n + i]);
      anrm = std::isnan(x) || std::isnan(anrm) ? std::numeric_limits<T>::quiet_NaN() : std::max(anrm, x);
    }
  const T sigma = anrm > 0 && anrm < rmin ? rmin / anrm : anrm > rmax ? rmax / anrm : T(1);
  if (sigma != 1)
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) a[size_t(j) * n + i] *= sigma;

  Scratch<T> dtau = workspace<T>(3 * size_t(n));
  T *d = dtau.get(), *e = d + n, *tau = e + n;
  int info = 0;
  T query_trd = 0;
  sytrd(n, a, d, e, tau, &query_trd, -1, &info);
  const size_t back = size_t(n) * kBlock + size_t(kBlock) * kBlock + size_t(kBlock) * n;
  const size_t lwork = std::max(size_t(work_size(query_trd)), back);
  Scratch<T> work = workspace<T>(lwork);
  sytrd(n, a, d, e, tau, work.get(), int(lwork), &info);
  if ((info = tridiagonal_eigh(n, d, e, z)) != 0) return info;
  if (n > 1) back_transform(n, a, tau, z, work.get());
  for (int i = 0; i < n; ++i) w[i] = d[i] / sigma;
  return 0;
}

}  // namespace

int eigh_lower(int n, float* a, float* w, float* z) { return eigh_lower_impl(n, a, w, z); }
int eigh_lower(int n, double* a, double* w, double* z) { return eigh_lower_impl(n, a, w, z); }

}  // namespace fluxion::linalg_rules
