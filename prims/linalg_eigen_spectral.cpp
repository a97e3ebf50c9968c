// eigh and svd of one matrix for one x86-64 level (prims/linalg_block.h): Eigen's
// SelfAdjointEigenSolver and BDCSVD. Apart from the other Eigen kernels (prims/linalg_eigen.cpp)
// because they are three quarters of that file's compile time and gain nothing from AVX-512:
// kernels/meson.build builds this file once, for level 3 on x86-64 (level 4 runs it; CPUs below
// AVX2 run LAPACK) and for the baseline elsewhere (docs/architecture.md, "How long a fresh build
// takes", has the measurements).
#include "prims/eigen_level.h"

#include <Eigen/Dense>

#include "prims/linalg_eigen_maps.h"

namespace {

template <class T>
void eigh(LinalgBlock& b) {
  const ConstMap<T> a(static_cast<const T*>(b.a), b.n, b.n);
  Eigen::SelfAdjointEigenSolver<Matrix<T>> es(Matrix<T>((a + a.transpose()) * T(0.5)));
  Map<T>(out<T>(b, 0), b.n, b.n) = es.eigenvectors();
  VectorMap<T>(out<T>(b, 1), b.n) = es.eigenvalues();
}

template <class T>
void svd(LinalgBlock& b) {
  const int64_t k = b.m < b.n ? b.m : b.n;
  const unsigned options =
      b.full_matrices ? Eigen::ComputeFullU | Eigen::ComputeFullV : Eigen::ComputeThinU | Eigen::ComputeThinV;
  Eigen::BDCSVD<Matrix<T>> f(Matrix<T>(ConstMap<T>(static_cast<const T*>(b.a), b.m, b.n)), options);
  Map<T>(out<T>(b, 0), b.m, b.cols) = f.matrixU();
  VectorMap<T>(out<T>(b, 1), k) = f.singularValues();
  Map<T>(out<T>(b, 2), b.rows, b.n) = f.matrixV().transpose();
}

}  // namespace

namespace fluxion::linalg_rules {

void FLUXION_LEVEL_NAME(linalg_spectral_level)(LinalgBlock& b) {
  const bool eigh_op = b.op == LinalgOp::eigh;
  if (b.is_double) eigh_op ? eigh<double>(b) : svd<double>(b);
  else eigh_op ? eigh<float>(b) : svd<float>(b);
}

}  // namespace fluxion::linalg_rules
