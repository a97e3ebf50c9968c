// The matrix kernels of the linear-algebra primitives for one x86-64 level (prims/linalg_block.h):
// Eigen's LLT, triangular solves, PartialPivLU and HouseholderQR on one matrix, and cholesky's
// derivative map. kernels/meson.build compiles this file once per level with that level's -march
// and FLUXION_ISA_LEVEL set, and Eigen's namespace is renamed per level (prims/eigen_level.h).
// eigh and svd are prims/linalg_eigen_spectral.cpp's, built for fewer levels.
#include "prims/eigen_level.h"

#include <Eigen/Dense>
#include <limits>

#include "prims/linalg_eigen_maps.h"

namespace {

using fluxion::linalg_rules::LinalgOp;

// Factored in place in the output: no copy of the factor, no temporary.
template <class T>
void cholesky(LinalgBlock& b) {
  Map<T> l(out<T>(b, 0), b.n, b.n);
  l = ConstMap<T>(static_cast<const T*>(b.a), b.n, b.n);
  Eigen::LLT<Eigen::Ref<Matrix<T>>> llt(l);
  if (llt.info() != Eigen::Success) {
    l.setConstant(std::numeric_limits<T>::quiet_NaN());
    b.failed = true;
    return;
  }
  l.template triangularView<Eigen::StrictlyUpper>().setZero();
}

// Solved in place in the output, reading a where it lies: op(a) is a view (a or a^T, whose
// triangle is then the other one); the right side uses Eigen's OnTheRight solve.
template <class T>
void triangular_solve(LinalgBlock& b) {
  ConstMap<T> a(static_cast<const T*>(b.a), b.n, b.n);
  Map<T> x(out<T>(b, 0), b.rows, b.cols);
  x = ConstMap<T>(static_cast<const T*>(b.b), b.rows, b.cols);
  auto solve = [&](const auto& op_a) {
    // One right-hand side goes to Eigen's vector solve: its matrix path (blocked, packing the
    // right-hand side) is several times slower for a single column.
    auto in_place = [&](auto view) {
      if (b.left && b.cols == 1) view.solveInPlace(x.col(0));
      else if (b.left) view.solveInPlace(x);
      else if (b.rows == 1) view.template solveInPlace<Eigen::OnTheRight>(x.row(0));
      else view.template solveInPlace<Eigen::OnTheRight>(x);
    };
    if (b.lower && b.unit_diagonal) in_place(op_a.template triangularView<Eigen::UnitLower>());
    else if (b.lower) in_place(op_a.template triangularView<Eigen::Lower>());
    else if (b.unit_diagonal) in_place(op_a.template triangularView<Eigen::UnitUpper>());
    else in_place(op_a.template triangularView<Eigen::Upper>());
  };
  if (b.transpose_a) solve(a.transpose());
  else solve(a);
}

template <class T>
void lu(LinalgBlock& b) {
  Map<T> packed(out<T>(b, 0), b.n, b.n);
  packed = ConstMap<T>(static_cast<const T*>(b.a), b.n, b.n);
  Eigen::PartialPivLU<Eigen::Ref<Matrix<T>>> f(packed);
  const auto& to_row = f.permutationP().indices();  // row i of a is row to_row[i] of P a
  int32_t* perm = static_cast<int32_t*>(b.out[2]);
  for (int64_t i = 0; i < b.n; ++i) perm[to_row[i]] = int32_t(i);
}

template <class T>
void qr(LinalgBlock& b) {
  const int64_t k = b.cols;
  Eigen::HouseholderQR<Matrix<T>> f(Matrix<T>(ConstMap<T>(static_cast<const T*>(b.a), b.m, b.n)));
  Map<T>(out<T>(b, 0), b.m, k) = f.householderQ() * Matrix<T>::Identity(b.m, k);
  Map<T>(out<T>(b, 1), k, b.n) = f.matrixQR().topRows(k).template triangularView<Eigen::Upper>();
}

// cholesky's derivative at L as a linear map (prims/linalg_block.h), by its closed form: two
// triangular solves and a triangular product. Small matrices only (large ones take OpenBLAS's
// blocked kernel, prims/linalg_lapack.cpp), so the temporaries are cheap.
template <class T>
void cholesky_linear(LinalgBlock& b) {
  ConstMap<T> l(static_cast<const T*>(b.a), b.n, b.n), x(static_cast<const T*>(b.b), b.n, b.n);
  Map<T> result(out<T>(b, 0), b.n, b.n);
  const auto lower = l.template triangularView<Eigen::Lower>();
  const auto upper = l.transpose().template triangularView<Eigen::Upper>();
  auto phi = [](Matrix<T>& y) {
    y.template triangularView<Eigen::StrictlyUpper>().setZero();
    y.diagonal() *= T(0.5);
  };
  if (!b.transpose_a) {  // L Phi(L^-1 sym(x) L^-T)
    Matrix<T> y = T(0.5) * (x + x.transpose());
    lower.solveInPlace(y);
    upper.template solveInPlace<Eigen::OnTheRight>(y);
    phi(y);
    result.noalias() = lower * y;
    return;
  }
  Matrix<T> p = upper * Matrix<T>(x.template triangularView<Eigen::Lower>());  // sym(L^-T Phi(L^T tril(x)) L^-1)
  phi(p);
  upper.solveInPlace(p);
  lower.template solveInPlace<Eigen::OnTheRight>(p);
  result = T(0.5) * (p + p.transpose());
}

template <class T>
void run(LinalgBlock& b) {
  switch (b.op) {
    case LinalgOp::cholesky: return cholesky<T>(b);
    case LinalgOp::triangular_solve: return triangular_solve<T>(b);
    case LinalgOp::lu: return lu<T>(b);
    case LinalgOp::qr: return qr<T>(b);
    case LinalgOp::eigh: case LinalgOp::svd: break;  // linalg_spectral_level (prims/linalg.cpp's dispatch)
    case LinalgOp::cholesky_linear: return cholesky_linear<T>(b);
  }
}

}  // namespace

namespace fluxion::linalg_rules {

void FLUXION_LEVEL_NAME(linalg_eigen_level)(LinalgBlock& b) {
  if (b.is_double) run<double>(b);
  else run<float>(b);
}

}  // namespace fluxion::linalg_rules
