// Matrix decompositions II: qr, eigh, svd (jax.lax.linalg), batched over leading dims,
// float32/float64, with Eigen's solvers as reference kernels (compiled code calls the same kernels).
// Derivatives follow JAX's rules; their degenerate cases (docs/linalg.md):
//   eigh: repeated eigenvalues make eigenvector derivatives undefined; the 1/(w_j - w_i) terms of
//         equal eigenvalues are taken as 0 (JAX gives inf/NaN there). Eigenvalue derivatives stay exact.
//   svd:  the same for repeated singular values, and 1/s for s = 0 is taken as 0.
//   qr, svd: derivatives need reduced factors (full_matrices=false, or square), and qr needs m >= n,
//         as in JAX; other cases are a TypeError naming the op.
#include "prims/linalg.h"

namespace fluxion::linalg_rules {
namespace {

int64_t rows(const AbstractArray& a) { return a.shape[size_t(a.ndim() - 2)]; }
int64_t cols(const AbstractArray& a) { return a.shape[size_t(a.ndim() - 1)]; }
bool full(const Params& p) { return p.has("full_matrices") && p.get_bool("full_matrices"); }

[[noreturn]] void no_derivative(const char* op, const std::string& why, SourceLoc loc) {
  throw TypeError(std::string("TypeError: derivative of ") + op + " at " + loc.str() + ": " + why);
}

// ---- qr(a)[full_matrices] = (q, r), q r = a, q orthonormal columns, r upper -----------------------------
std::vector<AbstractArray> qr_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand");
  if (!params.has("full_matrices")) rule_error(ErrorKind::Value, "expects the param full_matrices");
  check_matrix(in[0], "the operand", false);
  const int64_t m = rows(in[0]), n = cols(in[0]), k = full(params) ? m : std::min(m, n);
  return {AbstractArray{with_matrix(in[0].shape, m, k), in[0].dtype, false},
          AbstractArray{with_matrix(in[0].shape, k, n), in[0].dtype, false}};
}

void qr_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  LinalgBlock blk = block_of(LinalgOp::qr, in[0].dtype());
  const int64_t m = blk.m = rows(*in[0].aval), n = blk.n = cols(*in[0].aval), k = blk.cols = cols(*out[0].aval);
  run_each_matrix(blk, batch_count(in[0].shape()), in, {m * n}, out, {m * k, k * n});
}

// With X = Q^T dA R^-1 and its skew part dO = tril(X, -1) - tril(X, -1)^T:
// dQ = Q (dO - X) + dA R^-1, dR = (X - dO) R.
std::vector<Array> qr_jvp(Arrays in, Arrays t, Arrays out, const Params& params, SourceLoc loc) {
  if (rows(in[0].aval()) < cols(in[0].aval()) || (full(params) && rows(in[0].aval()) != cols(in[0].aval())))
    no_derivative("qr", "implemented for m >= n with reduced factors (full_matrices=false), as in JAX", loc);
  const Array &q = out[0], &r = out[1];
  Array da_rinv = triangular_solve(r, t[0], false, false, false, false);
  Array x = mm(mT(q), da_rinv);
  Array low = tril(x, -1);
  Array d_o = lax::sub(low, mT(low));
  return {lax::add(mm(q, lax::sub(d_o, x)), da_rinv), mm(lax::sub(x, d_o), r)};
}

const KernelParam kFullMatricesParam[] = {{"full_matrices", true}};

const Registration qr_registration = PrimitiveRules{
    .prim = Prim::qr,
    .shape = &qr_shape,
    .kernel = &qr_kernel,
    .kernel_params = kFullMatricesParam,
    .jvp = &qr_jvp,
    .batch = &batch_leading<Prim::qr>,
    .reads = Reads::whole,
};

// ---- eigh(a) = (v, w): s v = v diag(w) for s = (a + a^T) / 2, w ascending, v orthonormal ---------------
// The primitive symmetrizes its operand itself (jax.lax.linalg.eigh's symmetrize_input, always on):
// its kernels average a with a^T as they copy it for the solver, cheaper than a program's transpose.
std::vector<AbstractArray> eigh_shape(std::span<const AbstractArray> in, const Params&) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand");
  check_matrix(in[0], "the operand", true);
  return {in[0], AbstractArray{with_vector(in[0].shape, cols(in[0])), in[0].dtype, false}};
}

void eigh_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  LinalgBlock blk = block_of(LinalgOp::eigh, in[0].dtype());
  const int64_t n = blk.m = blk.n = cols(*in[0].aval);
  run_each_matrix(blk, batch_count(in[0].shape()), in, {n * n}, out, {n * n, n});
}

// With dS = (dA + dA^T) / 2, whose V^T dS V is the symmetric part of V^T dA V:
// dw = diag(V^T dS V); dV = V (F o V^T dS V) with F_ij = 1 / (w_j - w_i) (0 where w_j = w_i).
std::vector<Array> eigh_jvp(Arrays, Arrays t, Arrays out, const Params&, SourceLoc) {
  const Array &v = out[0], &w = out[1];
  Array vt_da_v = sym(mm(mT(v), mm(t[0], v)));
  const Shape& sq = v.shape();
  Array f = safe_reciprocal(lax::sub(rows_of(w, sq), cols_of(w, sq)));
  return {mm(v, lax::mul(f, vt_da_v)), diagonal(vt_da_v)};
}

const Registration eigh_registration = PrimitiveRules{
    .prim = Prim::eigh,
    .shape = &eigh_shape,
    .kernel = &eigh_kernel,
    .jvp = &eigh_jvp,
    .batch = &batch_leading<Prim::eigh>,
    .reads = Reads::whole,
};

// ---- svd(a)[full_matrices] = (u, s, vt): a = u diag(s) vt, s descending --------------------------------
std::vector<AbstractArray> svd_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand");
  if (!params.has("full_matrices")) rule_error(ErrorKind::Value, "expects the param full_matrices");
  check_matrix(in[0], "the operand", false);
  const int64_t m = rows(in[0]), n = cols(in[0]), k = std::min(m, n);
  const bool f = full(params);
  return {AbstractArray{with_matrix(in[0].shape, m, f ? m : k), in[0].dtype, false},
          AbstractArray{with_vector(in[0].shape, k), in[0].dtype, false},
          AbstractArray{with_matrix(in[0].shape, f ? n : k, n), in[0].dtype, false}};
}

void svd_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  LinalgBlock blk = block_of(LinalgOp::svd, in[0].dtype());
  const int64_t m = blk.m = rows(*in[0].aval), n = blk.n = cols(*in[0].aval), k = std::min(m, n);
  const int64_t ku = blk.cols = cols(*out[0].aval), kv = blk.rows = rows(*out[2].aval);
  blk.full_matrices = full(params);
  run_each_matrix(blk, batch_count(in[0].shape()), in, {m * n}, out, {m * ku, k, kv * n});
}

// JAX's svd_jvp_rule (real, reduced): with dS = U^T dA V and F_ij = 1 / (s_j^2 - s_i^2),
// ds = diag(dS), dU = U (F o (dS S + S dS^T)) (+ the part of dA V outside span U when m > n),
// dV = V (F o (S dS + dS^T S)) (+ the part of dA^T U outside span V when n > m).
std::vector<Array> svd_jvp(Arrays in, Arrays t, Arrays out, const Params& params, SourceLoc loc) {
  const int64_t m = rows(in[0].aval()), n = cols(in[0].aval());
  if (full(params) && m != n) no_derivative("svd", "implemented for reduced factors (full_matrices=false), as in JAX", loc);
  const Array &u = out[0], &s = out[1], v = mT(out[2]);
  const Array& da = t[0];
  Array ds_mat = mm(mT(u), mm(da, v));
  Shape sq = ds_mat.shape();
  Array s_row = rows_of(s, sq), s_col = cols_of(s, sq);  // [i, j] = s_j and s_i
  Array f = safe_reciprocal(lax::mul(lax::add(s_row, s_col), lax::sub(s_row, s_col)));
  Array dss = lax::mul(ds_mat, s_row), sds = lax::mul(s_col, ds_mat);
  Array du = mm(u, lax::mul(f, lax::add(dss, mT(dss))));
  Array dv = mm(v, lax::mul(f, lax::add(sds, mT(sds))));
  if (m > n) {
    Array dav = mm(da, v);
    du = lax::add(du, lax::mul(lax::sub(dav, mm(u, mm(mT(u), dav))), safe_reciprocal(rows_of(s, dav.shape()))));
  }
  if (n > m) {
    Array dau = mm(mT(da), u);
    dv = lax::add(dv, lax::mul(lax::sub(dau, mm(v, mm(mT(v), dau))), safe_reciprocal(rows_of(s, dau.shape()))));
  }
  return {du, diagonal(ds_mat), mT(dv)};
}

const Registration svd_registration = PrimitiveRules{
    .prim = Prim::svd,
    .shape = &svd_shape,
    .kernel = &svd_kernel,
    .kernel_params = kFullMatricesParam,
    .jvp = &svd_jvp,
    .batch = &batch_leading<Prim::svd>,
    .reads = Reads::whole,
};

}  // namespace
}  // namespace fluxion::linalg_rules
