// Matrix decompositions and solves I: cholesky, triangular_solve, lu (jax.lax.linalg), batched
// over leading dims, float32/float64. The reference kernels are Eigen's (LLT, triangular solves,
// PartialPivLU, whose permutation gives LAPACK's pivots); compiled code calls the same kernels as
// library functions (lowering/lower_library.cpp). Failures are NaN/inf in the result, never an
// abort: cholesky of a matrix that is not positive definite is all NaN, a zero pivot leaves inf
// in the solves downstream; api/linalg_decomp.cpp turns them into typed errors eagerly.
// Derivative rules follow JAX's (jax/_src/lax/linalg.py), written with the helpers in linalg.h.
#include "prims/linalg.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "ir/settings.h"
#include "prims/isa_level.h"
#include "prims/library_threads.h"

namespace fluxion::linalg_rules {

void check_matrix(const AbstractArray& a, const char* what, bool square) {
  if (a.dtype != DType::float32 && a.dtype != DType::float64)
    rule_error(ErrorKind::Type, std::string(what) + " must be float32 or float64, got " + a.str());
  if (a.ndim() < 2) rule_error(ErrorKind::Shape, std::string(what) + " must have rank >= 2 (a matrix), got " + a.str());
  if (square && a.shape[size_t(a.ndim() - 1)] != a.shape[size_t(a.ndim() - 2)])
    rule_error(ErrorKind::Shape, std::string(what) + " must be square in its last two dims, got " + a.str());
}

int64_t batch_count(const Shape& s) {
  int64_t n = 1;
  for (int d = 0; d + 2 < s.rank(); ++d) n *= s[size_t(d)];
  return n;
}

Shape with_matrix(const Shape& s, int64_t rows, int64_t cols) {
  Shape r(std::vector<int64_t>(s.begin(), s.end() - 2));
  r.push_back(rows);
  r.push_back(cols);
  return r;
}
Shape with_vector(const Shape& s, int64_t last) {
  Shape r(std::vector<int64_t>(s.begin(), s.end() - 2));
  r.push_back(last);
  return r;
}

namespace {
IntList iota_list(int64_t n) {
  IntList r;
  for (int64_t i = 0; i < n; ++i) r.push_back(i);
  return r;
}
}  // namespace

Array mm(const Array& a, const Array& b) {
  const int64_t r = a.ndim();
  Params p{{"lhs_contracting", IntList{r - 1}},
           {"rhs_contracting", IntList{r - 2}},
           {"lhs_batch", iota_list(r - 2)},
           {"rhs_batch", iota_list(r - 2)}};
  return bind1(Prim::dot_general, {a, b}, p, {});
}

Array mT(const Array& a) {
  IntList perm = iota_list(a.ndim());
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return lax::transpose(a, perm);
}

Array sym(const Array& a) { return lax::mul(lax::add(a, mT(a)), lax::scalar_like(a, 0.5)); }

Array triangle_mask(const AbstractArray& a, bool lower, int64_t k) {
  const int r = a.ndim();
  const Shape square{a.shape[size_t(r - 2)], a.shape[size_t(r - 1)]};
  Array rows = lax::iota(DType::int32, square, 0), cols = lax::iota(DType::int32, square, 1);
  Array shifted = lax::add(rows, lax::scalar_like(rows, double(k)));
  Array keep = lower ? lax::le(cols, shifted) : lax::ge(cols, shifted);
  return lax::broadcast_in_dim(lax::convert(keep, a.dtype), a.shape, {r - 2, r - 1});
}
Array tril(const Array& a, int64_t k) { return lax::mul(a, triangle_mask(a.aval(), true, k)); }
Array triu(const Array& a, int64_t k) { return lax::mul(a, triangle_mask(a.aval(), false, k)); }
Array eye_like(const AbstractArray& a) {
  return lax::mul(triangle_mask(a, true, 0), triangle_mask(a, false, 0));
}
Array diagonal(const Array& a) { return lax::reduce_sum(lax::mul(a, eye_like(a.aval())), {a.ndim() - 1}); }
Array to_diagonal(const Array& v) {
  Shape s = v.shape();
  s.push_back(s[size_t(s.rank() - 1)]);
  Array rows = rows_of(v, s);
  return lax::mul(rows, eye_like(rows.aval()));
}
Array rows_of(const Array& v, const Shape& like) {
  const int r = like.rank();
  IntList dims = iota_list(r - 2);
  dims.push_back(r - 1);
  return lax::broadcast_in_dim(v, like, dims);
}
Array cols_of(const Array& v, const Shape& like) {
  const int r = like.rank();
  IntList dims = iota_list(r - 2);
  dims.push_back(r - 2);
  return lax::broadcast_in_dim(v, like, dims);
}
Array triangular_solve(const Array& a, const Array& b, bool left_side, bool lower, bool transpose_a,
                       bool unit_diagonal) {
  Params p{{"left_side", left_side}, {"lower", lower}, {"transpose_a", transpose_a}, {"unit_diagonal", unit_diagonal}};
  return bind1(Prim::triangular_solve, {a, b}, p, {});
}
Array safe_reciprocal(const Array& x) {
  Array zero = lax::eq(x, lax::scalar_like(x, 0));
  return lax::select(zero, lax::scalar_like(x, 0), lax::div(lax::scalar_like(x, 1), lax::select(zero, lax::scalar_like(x, 1), x)));
}

// ---- the kernels' dispatch: OpenBLAS's LAPACK for large matrices, else the per-level Eigen builds ------

namespace {

using BuildFn = void (*)(LinalgBlock&);
// The Eigen builds of one family of ops, indexed by x86-64 level (kernels/meson.build); a level
// without its own build runs the nearest one below it: only the baseline exists off x86-64; level
// 2 (SSE4.2) runs level 1's, and eigh and svd at level 4 run level 3's. eigh and svd have no
// baseline build on x86-64: CPUs below AVX2 (made before 2013-2015) run them on OpenBLAS's LAPACK
// at every size -- their Eigen solvers were the largest object of a fresh build (docs/linalg.md,
// docs/architecture.md "How long a fresh build takes").
#if defined(__x86_64__)
constexpr int kTopLevel = 4;
constexpr BuildFn kFactorizations[] = {nullptr, &linalg_eigen_level1, nullptr, &linalg_eigen_level3, &linalg_eigen_level4};
constexpr BuildFn kSpectral[] = {nullptr, nullptr, nullptr, &linalg_spectral_level3, nullptr};
#else
constexpr int kTopLevel = 1;
constexpr BuildFn kFactorizations[] = {nullptr, &linalg_eigen_level1};
constexpr BuildFn kSpectral[] = {nullptr, &linalg_spectral_level1};
#endif
const BuildFn* builds_of(LinalgOp op) { return op == LinalgOp::eigh || op == LinalgOp::svd ? kSpectral : kFactorizations; }
std::atomic<uint64_t> g_blocks[kTopLevel + 1];
std::atomic<uint64_t> g_lapack_blocks;

LinalgKernels kernels_from_env() {
  const std::string s = choice_setting("FLUXION_LINALG").value_or("auto");
  return s == "eigen" ? LinalgKernels::eigen : s == "lapack" ? LinalgKernels::lapack : LinalgKernels::by_size;
}
std::atomic<LinalgKernels>& kernels_setting() {
  static std::atomic<LinalgKernels> k{kernels_from_env()};
  return k;
}

// The smallest matrix (its larger dim) from which LAPACK beats Eigen, per op (docs/linalg.md: measured
// with bench/bench_linalg.cpp's sweep and the GP row). qr stays on Eigen at every size measured.
// triangular_solve goes to OpenBLAS's trsm only for large triangles with many right-hand sides: on
// one thread Eigen's solve is as fast up to 1024, and OpenBLAS's gain is its second thread (at
// 2000 x 2000, one thread 172 against Eigen's 234 ms, two threads 90 ms); one right-hand side
// (a matrix-vector solve, memory-bound) is 4-6x faster on Eigen at every size.
constexpr int64_t kTrsmFrom = 1024, kTrsmRhsFrom = 256;
// cholesky's derivative map: OpenBLAS's (the adjoint blocked, on its threads) from this size.
constexpr int64_t kCholeskyLinearFrom = 256;
bool lapack_wins(const LinalgBlock& b) {
  switch (b.op) {
    case LinalgOp::cholesky: return std::max(b.m, b.n) >= 256;
    case LinalgOp::eigh: return std::max(b.m, b.n) >= 192;
    case LinalgOp::svd: return std::max(b.m, b.n) >= 256;
    case LinalgOp::triangular_solve: return b.n >= kTrsmFrom && (b.left ? b.cols : b.rows) >= kTrsmRhsFrom;
    case LinalgOp::cholesky_linear: return b.n >= kCholeskyLinearFrom;
    case LinalgOp::qr: case LinalgOp::lu: break;
  }
  return false;
}

}  // namespace

void set_linalg_kernels(LinalgKernels k) { kernels_setting().store(k); }
LinalgKernels linalg_kernels() { return kernels_setting().load(); }

bool uses_lapack(const LinalgBlock& b) {
  if (!has_lapack_kernel(b.op)) return false;
  if (linalg_eigen_build(b.op, kernel_isa_level()) == 0) return true;  // no Eigen build at this level
  switch (linalg_kernels()) {
    case LinalgKernels::eigen: return false;
    case LinalgKernels::lapack: return true;
    case LinalgKernels::by_size: break;
  }
  return lapack_wins(b);
}

LinalgBlock block_of(LinalgOp op, DType d) {
  LinalgBlock b{};
  b.op = op;
  b.is_double = d == DType::float64;
  return b;
}

void* matrix_at(const View& v, int64_t i, int64_t elements) {
  return static_cast<char*>(v.data) + i * elements * itemsize(v.dtype());
}

void run_linalg(LinalgBlock& b) {
  if (uses_lapack(b)) {
    linalg_lapack(b);
    g_lapack_blocks.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const int level = linalg_eigen_build(b.op, kernel_isa_level());
  builds_of(b.op)[level](b);
  g_blocks[level].fetch_add(1, std::memory_order_relaxed);
}

namespace {
std::atomic<uint64_t> g_split_batches;

// Whether a batch is worth a parallel region: a region costs a few microseconds (waking libomp's
// workers), one 16x16 decomposition about as much.
constexpr int64_t kParallelBatchWork = int64_t(1) << 15;
bool split_batch(const LinalgBlock& blk, int64_t count) {
  if (count < 2 || uses_lapack(blk) || library_threads() < 2) return false;
  const int64_t dim = std::max({blk.m, blk.n, blk.rows, blk.cols});
  return count * dim * dim * dim >= kParallelBatchWork;
}
}  // namespace

void run_each_matrix(LinalgBlock& blk, int64_t count, std::span<const View> in, std::initializer_list<int64_t> in_elements,
                     std::span<const View> out, std::initializer_list<int64_t> out_elements) {
  // Matrix k on its own copy of the block (the threads share nothing else).
  auto one = [&](int64_t k) {
    LinalgBlock b = blk;
    const void** operands[] = {&b.a, &b.b};
    size_t i = 0;
    for (int64_t e : in_elements) *operands[i] = matrix_at(in[i], k, e), ++i;
    i = 0;
    for (int64_t e : out_elements) b.out[i] = matrix_at(out[i], k, e), ++i;
    run_linalg(b);
  };
  if (split_batch(blk, count)) {
    g_split_batches.fetch_add(1, std::memory_order_relaxed);
    return library_parallel(library_threads(), count, one);
  }
  for (int64_t k = 0; k < count; ++k) one(k);
}

int linalg_eigen_build(LinalgOp op, int level) {
  const BuildFn* builds = builds_of(op);
  int l = std::clamp(level, 1, kTopLevel);
  while (l > 0 && !builds[l]) --l;  // 0: none (eigh and svd below level 3 on x86-64)
  return l;
}

uint64_t linalg_blocks_computed(int level) {
  return level >= 1 && level <= kTopLevel ? g_blocks[level].load(std::memory_order_relaxed) : 0;
}
uint64_t linalg_lapack_blocks_computed() { return g_lapack_blocks.load(std::memory_order_relaxed); }
uint64_t linalg_batches_split() { return g_split_batches.load(std::memory_order_relaxed); }

namespace {

// ---- cholesky(a) = L, lower, L L^T = a (a's lower triangle is read) -----------------------------------
std::vector<AbstractArray> cholesky_shape(std::span<const AbstractArray> in, const Params&) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand");
  check_matrix(in[0], "the operand", true);
  return {in[0]};
}

void cholesky_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  LinalgBlock blk = block_of(LinalgOp::cholesky, in[0].dtype());
  blk.n = in[0].shape()[size_t(in[0].shape().rank() - 1)];
  run_each_matrix(blk, batch_count(in[0].shape()), in, {blk.n * blk.n}, out, {blk.n * blk.n});
}

Array cholesky_linear(const Array& l, const Array& x, bool adjoint, SourceLoc loc) {
  return bind1(Prim::cholesky_linear, {l, x}, Params{{"adjoint", adjoint}}, loc);
}

// dL = L Phi(L^-1 sym(dA) L^-T), Phi: the lower triangle with its diagonal halved -- one primitive,
// cholesky_linear, so that reverse mode transposes it into its adjoint's kernel (below).
std::vector<Array> cholesky_jvp(Arrays, Arrays t, Arrays out, const Params&, SourceLoc loc) {
  return {cholesky_linear(out[0], t[0], false, loc)};
}

const Registration cholesky_registration = PrimitiveRules{
    .prim = Prim::cholesky,
    .shape = &cholesky_shape,
    .kernel = &cholesky_kernel,
    .jvp = &cholesky_jvp,
    .batch = &batch_leading<Prim::cholesky>,
    .reads = Reads::whole,
};

// ---- cholesky_linear(l, x)[adjoint]: cholesky's derivative at its factor l, linear in x --------------
// adjoint = false: the tangent map T(x) = L Phi(L^-1 sym(x) L^-T) (cholesky's JVP);
// adjoint = true:  its adjoint C(x) = sym(L^-T Phi(L^T tril(x)) L^-1) (cholesky's VJP), whose
// large-matrix kernel is Murray's blocked reverse-mode Cholesky (prims/linalg_lapack.cpp, about
// 2n^3/3 flops where the closed form transposed op by op costs 4n^3). Each transposes into the other.
std::vector<AbstractArray> cholesky_linear_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 2) rule_error(ErrorKind::Type, "expects 2 operands (l, x)");
  if (!params.has("adjoint")) rule_error(ErrorKind::Value, "expects the param adjoint");
  check_matrix(in[0], "l", true);
  if (!in[1].same_type(in[0])) rule_error(ErrorKind::Type, "l and x must have one type, got " + in[0].str() + " and " + in[1].str());
  return {in[1]};
}

void cholesky_linear_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  LinalgBlock blk = block_of(LinalgOp::cholesky_linear, in[0].dtype());
  blk.transpose_a = params.get_bool("adjoint");
  blk.n = in[0].shape()[size_t(in[0].shape().rank() - 1)];
  run_each_matrix(blk, batch_count(in[0].shape()), in, {blk.n * blk.n, blk.n * blk.n}, out, {blk.n * blk.n});
}

// With E the tangent of l, x's dx and y the output (derivations in docs/linalg.md):
//   T: dy = T(dx - 2 E L^-1 sym(x)) + E L^-1 y        C: dy = C(dx + L^-T E^T x) - 2 sym(L^-T E^T y)
std::vector<Array> cholesky_linear_jvp(Arrays in, Arrays t, Arrays out, const Params& p, SourceLoc loc) {
  const Array &l = in[0], &x = in[1], &y = out[0];
  const bool adjoint = p.get_bool("adjoint");
  if (is_zero(t[0])) return {cholesky_linear(l, t[1], adjoint, loc)};
  const Array& e = t[0];
  auto solve_l = [&](const Array& b, bool transpose) { return triangular_solve(l, b, true, true, transpose, false); };
  auto plus_dx = [&](const Array& a) { return is_zero(t[1]) ? a : lax::add(t[1], a); };
  if (!adjoint) {
    Array dx = plus_dx(lax::mul(mm(e, solve_l(sym(x), false)), lax::scalar_like(x, -2.0)));
    return {lax::add(cholesky_linear(l, dx, false, loc), mm(e, solve_l(y, false)))};
  }
  Array et = mT(e);
  Array dx = plus_dx(solve_l(mm(et, x), true));
  return {lax::sub(cholesky_linear(l, dx, true, loc), lax::mul(sym(solve_l(mm(et, y), true)), lax::scalar_like(y, 2.0)))};
}

std::vector<Array> cholesky_linear_transpose(Arrays ct, std::span<const LinearArg> a, const Params& p, SourceLoc loc) {
  if (a[0].linear) throw TypeError("TypeError: transpose of cholesky_linear at " + loc.str() + ": not linear in l");
  if (is_zero(ct[0])) return {Array(), Array()};
  return {Array(), cholesky_linear(a[0].value, ct[0], !p.get_bool("adjoint"), loc)};
}

constexpr KernelParam kCholeskyLinearParams[] = {{"adjoint", true}};

const Registration cholesky_linear_registration = PrimitiveRules{
    .prim = Prim::cholesky_linear,
    .shape = &cholesky_linear_shape,
    .kernel = &cholesky_linear_kernel,
    .kernel_params = kCholeskyLinearParams,
    .jvp = &cholesky_linear_jvp,
    .transpose = &cholesky_linear_transpose,
    .linear = {.operands = 0b10},
    .batch = &batch_leading<Prim::cholesky_linear>,
    .reads = Reads::whole,
};

// ---- triangular_solve(a, b)[left_side, lower, transpose_a, unit_diagonal] ------------------------------
// left: op(a) x = b; right: x op(a) = b; op(a) = a or a^T; only a's `lower` (or upper) triangle is
// read, and with unit_diagonal not its diagonal either.
std::vector<AbstractArray> triangular_solve_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 2) rule_error(ErrorKind::Type, "expects 2 operands (a, b)");
  for (const char* k : {"left_side", "lower", "transpose_a", "unit_diagonal"})
    if (!params.has(k)) rule_error(ErrorKind::Value, std::string("expects the param ") + k);
  const AbstractArray &a = in[0], &b = in[1];
  check_matrix(a, "a", true);
  check_matrix(b, "b", false);
  if (a.dtype != b.dtype) rule_error(ErrorKind::Type, "a and b must have one dtype, got " + a.str() + " and " + b.str());
  const int r = a.ndim();
  bool same_batch = b.ndim() == r;
  for (int d = 0; same_batch && d + 2 < r; ++d) same_batch = a.shape[size_t(d)] == b.shape[size_t(d)];
  if (!same_batch) rule_error(ErrorKind::Shape, "a and b must have the same batch dims, got " + a.str() + " and " + b.str());
  const int64_t n = a.shape[size_t(r - 1)];
  const bool left = params.get_bool("left_side");
  if (b.shape[size_t(left ? r - 2 : r - 1)] != n)
    rule_error(ErrorKind::Shape, std::string(left ? "b's rows" : "b's columns") + " must match a's size " +
                                     std::to_string(n) + ", got " + b.str());
  return {b};
}

void triangular_solve_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  LinalgBlock blk = block_of(LinalgOp::triangular_solve, in[0].dtype());
  blk.left = params.get_bool("left_side");
  blk.transpose_a = params.get_bool("transpose_a");
  blk.unit_diagonal = params.get_bool("unit_diagonal");
  blk.lower = params.get_bool("lower") != blk.transpose_a;  // the triangle of op(a)
  const Shape& bs = in[1].shape();
  blk.n = in[0].shape()[size_t(bs.rank() - 1)];
  blk.rows = bs[size_t(bs.rank() - 2)];
  blk.cols = bs[size_t(bs.rank() - 1)];
  run_each_matrix(blk, batch_count(bs), in, {blk.n * blk.n, blk.rows * blk.cols}, out, {blk.rows * blk.cols});
}

Array solve_like(const Array& a, const Array& b, const Params& p, bool flip_transpose) {
  return triangular_solve(a, b, p.get_bool("left_side"), p.get_bool("lower"),
                          p.get_bool("transpose_a") != flip_transpose, p.get_bool("unit_diagonal"));
}

// dx = op(A)^-1 (db - op(dA) x) on the left, (db - x op(dA)) op(A)^-1 on the right; dA is cut to
// the triangle the primal reads.
std::vector<Array> triangular_solve_jvp(Arrays in, Arrays t, Arrays out, const Params& p, SourceLoc) {
  Array rhs = t[1];
  if (!is_zero(t[0])) {
    const bool lower = p.get_bool("lower");
    Array da = lower ? tril(t[0], p.get_bool("unit_diagonal") ? -1 : 0) : triu(t[0], p.get_bool("unit_diagonal") ? 1 : 0);
    if (p.get_bool("transpose_a")) da = mT(da);
    Array term = p.get_bool("left_side") ? mm(da, out[0]) : mm(out[0], da);
    rhs = is_zero(rhs) ? lax::neg(term) : lax::sub(rhs, term);
  }
  return {solve_like(in[0], rhs, p, false)};
}

// Linear in b: x = M b (left) or b M (right) with M = op(a)^-1, so ct_b = op(a)^-T ct (or ct op(a)^-T).
std::vector<Array> triangular_solve_transpose(Arrays ct, std::span<const LinearArg> a, const Params& p, SourceLoc loc) {
  if (a[0].linear) throw TypeError("TypeError: transpose of triangular_solve at " + loc.str() + ": not linear in a");
  if (is_zero(ct[0])) return {Array(), Array()};
  return {Array(), solve_like(a[0].value, ct[0], p, true)};
}

constexpr KernelParam kTriangularSolveParams[] = {
    {"left_side", true}, {"lower", true}, {"transpose_a", true}, {"unit_diagonal", true}};

const Registration triangular_solve_registration = PrimitiveRules{
    .prim = Prim::triangular_solve,
    .shape = &triangular_solve_shape,
    .kernel = &triangular_solve_kernel,
    .kernel_params = kTriangularSolveParams,
    .jvp = &triangular_solve_jvp,
    .transpose = &triangular_solve_transpose,
    .linear = {.operands = 0b10},
    .batch = &batch_leading<Prim::triangular_solve>,
    .reads = Reads::whole,
};

// ---- lu(a) = (lu, pivots, permutation): P a = L U, L unit lower and U upper packed in lu ----------------
// pivots[j]: the row swapped with row j at step j (LAPACK's getrf, 0-based); permutation: row i of
// P a is row permutation[i] of a. Square matrices only.
std::vector<AbstractArray> lu_shape(std::span<const AbstractArray> in, const Params&) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand");
  check_matrix(in[0], "the operand", true);
  const Shape& s = in[0].shape;
  const AbstractArray rows{with_vector(s, s[size_t(s.rank() - 1)]), DType::int32, false};
  return {in[0], rows, rows};
}

// Eigen's blocked PartialPivLU (the same choice of pivot as getrf: the largest magnitude in the
// column; a zero column leaves a zero pivot, and the solves downstream give inf/NaN). Eigen exposes
// only the final permutation; getrf's pivots follow from it, because row j of P a is fixed once
// step j has swapped it into place: pivots[j] is where row permutation[j] sits at step j.
void lu_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  LinalgBlock blk = block_of(LinalgOp::lu, in[0].dtype());
  const int64_t n = blk.n = in[0].shape()[size_t(in[0].shape().rank() - 1)];
  const int64_t count = batch_count(in[0].shape());
  run_each_matrix(blk, count, in, {n * n}, out, {n * n, n, n});
  std::vector<int32_t> row_at(static_cast<size_t>(n)), position_of(static_cast<size_t>(n));
  for (int64_t b = 0; b < count; ++b) {
    int32_t* piv = out[1].as<int32_t>() + b * n;
    const int32_t* perm = out[2].as<int32_t>() + b * n;
    for (int64_t i = 0; i < n; ++i) row_at[size_t(i)] = position_of[size_t(i)] = int32_t(i);
    for (int64_t j = 0; j < n; ++j) {
      const int32_t p = position_of[size_t(perm[j])];
      piv[j] = p;
      std::swap(row_at[size_t(j)], row_at[size_t(p)]);
      position_of[size_t(row_at[size_t(j)])] = int32_t(j);
      position_of[size_t(row_at[size_t(p)])] = p;
    }
  }
}

// With x = L^-1 P dA U^-1: dL = L tril(x, -1), dU = triu(x) U (JAX's lu_jvp_rule, square case).
std::vector<Array> lu_jvp(Arrays, Arrays t, Arrays out, const Params&, SourceLoc) {
  const Array& lu = out[0];
  const AbstractArray& m = lu.aval();
  const int r = m.ndim();
  // P as a matrix: P[i, j] = (permutation[i] == j).
  Array cols = lax::iota(DType::int32, m.shape, r - 1);
  Array p = lax::convert(lax::eq(cols_of(out[2], m.shape), cols), m.dtype);
  Array l = lax::add(tril(lu, -1), eye_like(m)), u = triu(lu);
  Array la = triangular_solve(l, mm(p, t[0]), true, true, false, true);
  Array x = triangular_solve(u, la, false, false, false, false);
  return {lax::add(mm(l, tril(x, -1)), mm(triu(x), u)), Array(), Array()};
}

const Registration lu_registration = PrimitiveRules{
    .prim = Prim::lu,
    .shape = &lu_shape,
    .kernel = &lu_kernel,
    .jvp = &lu_jvp,
    .batch = &batch_leading<Prim::lu>,
    .reads = Reads::whole,
};

}  // namespace
}  // namespace fluxion::linalg_rules
