// The LAPACK kernels of the linear-algebra primitives (prims/linalg_block.h) for large matrices:
// OpenBLAS's LAPACK and BLAS from Debian (libopenblas-pthread-dev). Its kernels are chosen at load
// time for the CPU it runs on (DYNAMIC_ARCH), and its blocked factorizations, divide-and-conquer
// eigh (syevd's steps, prims/linalg_eigh_lapack.cpp) and SVD (gesdd) use several threads:
// docs/linalg.md has the measurements that decide which sizes come here (prims/linalg.cpp,
// run_linalg) and why the pthread build.
//
// The operands are row-major and LAPACK's are column-major, so each call reads the transpose: a
// row-major lower triangle is a column-major upper one, and an SVD of a^T gives u and vt of a with
// their roles swapped; only qr and eigh need an explicit transpose (O(n^2) next to O(n^3)).
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "prims/lapack_scratch.h"
#include "prims/library_threads.h"
#include "prims/linalg_block.h"
#include "prims/linalg_eigh_lapack.h"

// LAPACK's Fortran entry points (32-bit integers: Debian's libopenblas0 is built without
// INTERFACE64). The trailing size_t is the hidden length of each character argument.
extern "C" {
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork, int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork,
             int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau, double* work,
             const int* lwork, int* info);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u,
             const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info, size_t);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info,
             size_t);
}

namespace {

using fluxion::linalg_rules::LinalgBlock;
using fluxion::linalg_rules::LinalgOp;
using fluxion::linalg_rules::Scratch;
using fluxion::linalg_rules::workspace;

// The two precisions behind one name each.
void potrf(int n, float* a, int* info) { spotrf_("U", &n, a, &n, info, 1); }
void potrf(int n, double* a, int* info) { dpotrf_("U", &n, a, &n, info, 1); }
void geqrf(int m, int n, float* a, float* tau, float* w, int lw, int* info) { sgeqrf_(&m, &n, a, &m, tau, w, &lw, info); }
void geqrf(int m, int n, double* a, double* tau, double* w, int lw, int* info) { dgeqrf_(&m, &n, a, &m, tau, w, &lw, info); }
void orgqr(int m, int n, int k, float* a, const float* tau, float* w, int lw, int* info) {
  sorgqr_(&m, &n, &k, a, &m, tau, w, &lw, info);
}
void orgqr(int m, int n, int k, double* a, const double* tau, double* w, int lw, int* info) {
  dorgqr_(&m, &n, &k, a, &m, tau, w, &lw, info);
}
void gesdd(char job, int m, int n, float* a, float* s, float* u, int ldu, float* vt, int ldvt, float* w, int lw, int* iw,
           int* info) {
  sgesdd_(&job, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, w, &lw, iw, info, 1);
}
void gesdd(char job, int m, int n, double* a, double* s, double* u, int ldu, double* vt, int ldvt, double* w, int lw,
           int* iw, int* info) {
  dgesdd_(&job, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, w, &lw, iw, info, 1);
}
// b [m, n] (leading dim ldb, n if 0) = op(a)^-1 b or b op(a)^-1.
void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE t, CBLAS_DIAG d, int m, int n, const float* a, int lda,
          float* b, int ldb = 0) {
  cblas_strsm(CblasRowMajor, side, uplo, t, d, m, n, 1.f, a, lda, b, ldb ? ldb : n);
}
void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE t, CBLAS_DIAG d, int m, int n, const double* a, int lda,
          double* b, int ldb = 0) {
  cblas_dtrsm(CblasRowMajor, side, uplo, t, d, m, n, 1.0, a, lda, b, ldb ? ldb : n);
}

void trmm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE t, int m, int n, const float* a, int lda, float* b, int ldb) {
  cblas_strmm(CblasRowMajor, side, uplo, t, CblasNonUnit, m, n, 1.f, a, lda, b, ldb);
}
void trmm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE t, int m, int n, const double* a, int lda, double* b,
          int ldb) {
  cblas_dtrmm(CblasRowMajor, side, uplo, t, CblasNonUnit, m, n, 1.0, a, lda, b, ldb);
}
// c -= alpha op(a) b (all row-major; k: the contracted size).
void gemm_sub(CBLAS_TRANSPOSE ta, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
              float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, CblasNoTrans, m, n, k, -alpha, a, lda, b, ldb, 1.f, c, ldc);
}
void gemm_sub(CBLAS_TRANSPOSE ta, int m, int n, int k, double alpha, const double* a, int lda, const double* b, int ldb,
              double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, CblasNoTrans, m, n, k, -alpha, a, lda, b, ldb, 1.0, c, ldc);
}

template <class T>
T* out(LinalgBlock& b, int i) {
  return static_cast<T*>(b.out[i]);
}
template <class T>
const T* in_a(const LinalgBlock& b) {
  return static_cast<const T*>(b.a);
}
// A failed factorization leaves NaN in its outputs, as the Eigen kernels do.
template <class T>
void fail(LinalgBlock& b, std::initializer_list<int64_t> sizes) {
  int i = 0;
  for (int64_t s : sizes) std::fill_n(out<T>(b, i++), s, std::numeric_limits<T>::quiet_NaN());
  b.failed = true;
}
// Transposes go tile by tile: element by element, one side is read or written a row apart (4 KiB at
// 512 doubles), a TLB miss each. The tiles are 8 x 8: rows 4 KiB apart share one set of the 8-way L1
// cache, so a taller tile evicts its own lines. dst is written a row at a time (its tiles' rows
// continue where the previous tile's ended, which the hardware prefetcher follows); src's 8 rows of
// the tile after next are prefetched, as nothing predicts a column walk. 512 x 512 doubles, out of
// cache: 32 x 32 tiles 0.68 ms, these 0.28-0.34 ms, memcpy 0.15 ms.
constexpr int64_t kTile = 8;
// dst [cols, rows] (row-major) = src [rows, cols]^T: a row-major matrix to column-major and back.
// `lower_only`: only src's lower triangle (i >= j) is copied, to dst's upper one (row-major), i.e.
// to the lower triangle of the column-major matrix dst holds.
template <class T>
void transpose_into(const T* src, int64_t rows, int64_t cols, T* dst, bool lower_only = false) {
  for (int64_t j0 = 0; j0 < cols; j0 += kTile)
    for (int64_t i0 = lower_only ? j0 : 0; i0 < rows; i0 += kTile) {
      for (int64_t i = i0 + 2 * kTile; i < std::min(i0 + 3 * kTile, rows); ++i) __builtin_prefetch(src + i * cols + j0);
      for (int64_t j = j0; j < std::min(j0 + kTile, cols); ++j)
        for (int64_t i = lower_only ? std::max(i0, j) : i0; i < std::min(i0 + kTile, rows); ++i)
          dst[j * rows + i] = src[i * cols + j];
    }
}
// LAPACK's workspace query answers in the matrix's type.
template <class T>
int work_size(T query) {
  return std::max(1, int(query));
}
// Column-major potrf('U') of a's row-major lower triangle leaves L in the row-major lower one.
template <class T>
void cholesky(LinalgBlock& b) {
  const int64_t n = b.n;
  T* l = out<T>(b, 0);
  std::memcpy(l, in_a<T>(b), size_t(n * n) * sizeof(T));
  int info = 0;
  potrf(int(n), l, &info);
  if (info != 0) return fail<T>(b, {n * n});
  for (int64_t i = 0; i < n; ++i) std::fill(l + i * n + i + 1, l + (i + 1) * n, T(0));
}

template <class T>
void triangular_solve(LinalgBlock& b) {
  T* x = out<T>(b, 0);
  std::memcpy(x, b.b, size_t(b.rows * b.cols) * sizeof(T));
  const bool a_lower = b.lower != b.transpose_a;  // b.lower is the triangle of op(a)
  trsm(b.left ? CblasLeft : CblasRight, a_lower ? CblasLower : CblasUpper, b.transpose_a ? CblasTrans : CblasNoTrans,
       b.unit_diagonal ? CblasUnit : CblasNonUnit, int(b.rows), int(b.cols), in_a<T>(b), int(b.n), x);
}

// geqrf + orgqr on a column-major copy; q [m, k] has min(m, n) reflectors' columns (k = m when complete).
template <class T>
void qr(LinalgBlock& b) {
  const int m = int(b.m), n = int(b.n), k = int(b.cols), p = std::min(m, n);
  std::vector<T> f(size_t(m) * size_t(std::max(n, k))), tau(size_t(std::max(p, 1)));
  transpose_into(in_a<T>(b), m, n, f.data());
  int info = 0;
  T query = 0;
  geqrf(m, n, f.data(), tau.data(), &query, -1, &info);
  T query_q = 0;
  orgqr(m, k, p, f.data(), tau.data(), &query_q, -1, &info);
  const int lwork = std::max(work_size(query), work_size(query_q));
  Scratch<T> work = workspace<T>(size_t(lwork));
  geqrf(m, n, f.data(), tau.data(), work.get(), lwork, &info);
  T* r = out<T>(b, 1);  // r [k, n]: the upper triangle of the first min(m, n) rows
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < n; ++j) r[i * n + j] = i <= j && i < p ? f[size_t(j) * size_t(m) + size_t(i)] : T(0);
  orgqr(m, k, p, f.data(), tau.data(), work.get(), lwork, &info);
  transpose_into(f.data(), k, m, out<T>(b, 0));  // column-major [m, k] is row-major [k, m]
}

// eigh_lower (prims/linalg_eigh_lapack.cpp: syevd's steps, its back-transformation Fluxion's) on the
// column-major lower triangle of (a + a^T) / 2: a's row-major lower triangle transposed into the
// column-major lower one (half a transpose), then column j's entries below the diagonal averaged
// with a's row j, which is contiguous there -- the symmetrization costs one pass over half the
// matrix here, where the same (a + a^T) / 2 as a program of its own read a across rows (0.73 ms at
// 512 x 512). Nothing above the diagonal is read. The eigenvectors come back as columns of a
// column-major matrix, i.e. as its rows row-major: transposed into v. (The lower triangle, whose
// sytrd reduces from the top, measured 1-3% faster than the upper one: docs/linalg.md.)
template <class T>
void eigh(LinalgBlock& b) {
  const int n = int(b.n);
  Scratch<T> c = workspace<T>(size_t(n) * size_t(n)), z = workspace<T>(size_t(n) * size_t(n));
  const T* a = in_a<T>(b);
  transpose_into(a, n, n, c.get(), /*lower_only=*/true);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = j; i < n; ++i) c[j * n + i] = (c[j * n + i] + a[j * n + i]) * T(0.5);
  if (fluxion::linalg_rules::eigh_lower(n, c.get(), out<T>(b, 1), z.get()) != 0) return fail<T>(b, {int64_t(n) * n, n});
  transpose_into(z.get(), n, n, out<T>(b, 0));
}

// gesdd of the column-major a^T [n, m] = u' s vt': a = vt'^T s u'^T, so vt' (column-major) is u
// (row-major) and u' is vt, written where they belong with no transpose.
template <class T>
void svd(LinalgBlock& b) {
  const int m = int(b.m), n = int(b.n), p = std::min(m, n);
  std::vector<T> at(in_a<T>(b), in_a<T>(b) + size_t(m) * size_t(n));
  std::vector<int> iwork(size_t(8 * std::max(p, 1)));
  const char job = b.full_matrices ? 'A' : 'S';
  T *u = out<T>(b, 0), *s = out<T>(b, 1), *vt = out<T>(b, 2);
  const int ldu = int(b.cols);  // u's cols: vt' is [u's cols, m] column-major
  int info = 0;
  T query = 0;
  gesdd(job, n, m, at.data(), s, vt, n, u, ldu, &query, -1, iwork.data(), &info);
  const int lwork = work_size(query);
  Scratch<T> work = workspace<T>(size_t(lwork));
  gesdd(job, n, m, at.data(), s, vt, n, u, ldu, work.get(), lwork, iwork.data(), &info);
  if (info != 0) return fail<T>(b, {int64_t(m) * b.cols, p, b.rows * int64_t(n)});
}

// ---- cholesky_linear: cholesky's derivative at L (prims/linalg_block.h) ------------------------------
// Phi in place on a [n, n] (leading dim ld): the upper triangle zeroed, the diagonal halved.
template <class T>
void phi_in_place(T* a, int64_t n, int64_t ld) {
  for (int64_t i = 0; i < n; ++i) {
    std::fill(a + i * ld + i + 1, a + i * ld + n, T(0));
    a[i * ld + i] *= T(0.5);
  }
}
// a [n, n] = sym(a) = (a + a^T) / 2 in place, tile by tile (as the transposes).
template <class T>
void symmetrize_in_place(T* a, int64_t n) {
  for (int64_t i0 = 0; i0 < n; i0 += kTile)
    for (int64_t j0 = i0; j0 < n; j0 += kTile)
      for (int64_t i = i0; i < std::min(i0 + kTile, n); ++i)
        for (int64_t j = std::max(j0, i + 1); j < std::min(j0 + kTile, n); ++j)
          a[i * n + j] = a[j * n + i] = T(0.5) * (a[i * n + j] + a[j * n + i]);
}

// The tangent map L Phi(L^-1 sym(x) L^-T): two triangular solves and a triangular product.
template <class T>
void cholesky_tangent(LinalgBlock& b) {
  const int n = int(b.n);
  T* y = out<T>(b, 0);
  std::memcpy(y, b.b, size_t(n) * size_t(n) * sizeof(T));
  symmetrize_in_place(y, n);
  trsm(CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, n, n, in_a<T>(b), n, y);
  trsm(CblasRight, CblasLower, CblasTrans, CblasNonUnit, n, n, in_a<T>(b), n, y);
  phi_in_place(y, n, n);
  trmm(CblasLeft, CblasLower, CblasNoTrans, n, n, in_a<T>(b), n, y, n);
}

// The adjoint sym(L^-T Phi(L^T tril(x)) L^-1) of one diagonal block [k, k] of L (leading dim ld),
// by its closed form, into s [k, k] (leading dim k); `g`: the block's cotangent (its lower triangle
// is read).
template <class T>
void cholesky_adjoint_block(const T* l, const T* g, int k, int ld, T* s) {
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j) s[i * k + j] = j <= i ? g[i * ld + j] : T(0);
  trmm(CblasLeft, CblasLower, CblasTrans, k, k, l, ld, s, k);
  phi_in_place(s, k, k);
  trsm(CblasLeft, CblasLower, CblasTrans, CblasNonUnit, k, k, l, ld, s);
  trsm(CblasRight, CblasLower, CblasNoTrans, CblasNonUnit, k, k, l, ld, s);
  symmetrize_in_place(s, k);
}

// The adjoint sym(L^-T Phi(L^T tril(x)) L^-1), by reverse mode through the blocked left-looking
// Cholesky (Murray 2016, "Differentiation of the Cholesky decomposition", section 4): about
// 2n^3/3 flops, all but the diagonal blocks in matrix products, where the closed form costs 3-4n^3
// (a product with L^T and two n x n triangular solves). The forward algorithm, block J of rows
// and columns with the rows above it `before` and those below it `after`:
//   R = L[J, before], B = L[after, before]; D = chol(A[J, J] - R R^T); C = (A[after, J] - B R^T) D^-T.
// Backwards over the blocks, with g holding the cotangents of L's lower triangle and ending as
// those of A's lower triangle (off-diagonal entries counted for both mirror entries of sym(A)):
//   Cbar = Cbar D^-1; Dbar -= Cbar^T C; Bbar -= Cbar R; Rbar -= Cbar^T B;
//   Dbar = adjoint of chol on the block, S (symmetric); Rbar -= 2 S R.
// Finally sym: the output's entry (i, j) off the diagonal is half g's (max(i, j), min(i, j)).
constexpr int kAdjointBlock = 128;
template <class T>
void cholesky_adjoint(LinalgBlock& b) {
  const int n = int(b.n);
  const T* l = in_a<T>(b);
  T* g = out<T>(b, 0);
  std::memcpy(g, b.b, size_t(n) * size_t(n) * sizeof(T));
  Scratch<T> s = workspace<T>(size_t(kAdjointBlock) * kAdjointBlock);
  for (int j = (n - 1) / kAdjointBlock * kAdjointBlock; j >= 0; j -= kAdjointBlock) {
    const int k = std::min(kAdjointBlock, n - j), after = j + k, r = n - after;
    const T *d = l + size_t(j) * n + j, *rows_r = l + size_t(j) * n;
    T *dbar = g + size_t(j) * n + j, *rbar = g + size_t(j) * n;
    if (r > 0) {
      const T *c = l + size_t(after) * n + j, *rows_b = l + size_t(after) * n;
      T *cbar = g + size_t(after) * n + j, *bbar = g + size_t(after) * n;
      trsm(CblasRight, CblasLower, CblasNoTrans, CblasNonUnit, r, k, d, n, cbar, n);
      gemm_sub(CblasTrans, k, k, r, T(1), cbar, n, c, n, dbar, n);
      if (j > 0) {
        gemm_sub(CblasNoTrans, r, j, k, T(1), cbar, n, rows_r, n, bbar, n);
        gemm_sub(CblasTrans, k, j, r, T(1), cbar, n, rows_b, n, rbar, n);
      }
    }
    cholesky_adjoint_block(d, dbar, k, n, s.get());
    if (j > 0) gemm_sub(CblasNoTrans, k, j, k, T(2), s.get(), k, rows_r, n, rbar, n);
    for (int i = 0; i < k; ++i)  // the block's cotangents of A's lower triangle: S's, doubled off the diagonal
      for (int c = 0; c <= i; ++c) dbar[size_t(i) * n + c] = (c == i ? T(1) : T(2)) * s[i * k + c];
  }
  for (int64_t i0 = 0; i0 < n; i0 += kTile)  // sym: each lower entry halved into both places, tile by tile
    for (int64_t j0 = 0; j0 <= i0; j0 += kTile)
      for (int64_t i = i0; i < std::min<int64_t>(i0 + kTile, n); ++i)
        for (int64_t c = j0; c < std::min(j0 + kTile, i); ++c) g[i * n + c] = g[c * n + i] = T(0.5) * g[i * n + c];
}

template <class T>
void run(LinalgBlock& b) {
  switch (b.op) {
    case LinalgOp::cholesky: return cholesky<T>(b);
    case LinalgOp::triangular_solve: return triangular_solve<T>(b);
    case LinalgOp::qr: return qr<T>(b);
    case LinalgOp::eigh: return eigh<T>(b);
    case LinalgOp::svd: return svd<T>(b);
    case LinalgOp::cholesky_linear: return b.transpose_a ? cholesky_adjoint<T>(b) : cholesky_tangent<T>(b);
    case LinalgOp::lu: break;  // has_lapack_kernel(lu) is false: Eigen's PartialPivLU gives its pivots
  }
}

}  // namespace

namespace fluxion::linalg_rules {

bool has_lapack_kernel(LinalgOp op) { return op != LinalgOp::lu; }

void linalg_lapack(LinalgBlock& b) {
  // OpenBLAS's threads: Fluxion's thread count (its default is every core, which would be the
  // same here, but FLUXION_NUM_THREADS=1 must mean one thread in LAPACK too).
  static std::once_flag threads_set;
  std::call_once(threads_set, [] { openblas_set_num_threads(library_threads()); });
  if (b.is_double) run<double>(b);
  else run<float>(b);
}

const char* lapack_core_name() { return openblas_get_corename(); }

}  // namespace fluxion::linalg_rules
