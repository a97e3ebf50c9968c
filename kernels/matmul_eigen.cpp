// Eigen's matrix product for one x86-64 micro-architecture level. runtime/meson.build compiles this
// file once per level, each time with that level's -march flag and FLUXION_ISA_LEVEL set, so
// that Eigen picks its SSE, AVX2+FMA or AVX-512 kernels from the compiler's own ISA macros.
//
// Eigen's namespace is renamed per level (prims/eigen_level.h says why). The only other symbol an
// object defines is its entry point; tests/check_level_symbols.sh proves it on the built objects,
// so a standard-library function emitted out of line here would fail that test.
#include "prims/eigen_level.h"
#include "kernels/matmul_block.h"

#include <Eigen/Core>

namespace {

template <class T, int Order>
using MapOf = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order>, 0, Eigen::OuterStride<>>;

// A transposed row-major operand is the same memory read column-major.
template <class T, int LhsOrder, int RhsOrder>
void product(const fluxion::runtime::MatmulBlock& b) {
  using Out = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  MapOf<T, LhsOrder> x(static_cast<const T*>(b.lhs), b.m, b.k, Eigen::OuterStride<>(b.lhs_stride));
  MapOf<T, RhsOrder> y(static_cast<const T*>(b.rhs), b.k, b.n, Eigen::OuterStride<>(b.rhs_stride));
  Eigen::Map<Out, 0, Eigen::OuterStride<>> z(static_cast<T*>(b.out), b.m, b.n, Eigen::OuterStride<>(b.out_stride));
  z.noalias() = x * y;
}

template <class T>
void product_of(const fluxion::runtime::MatmulBlock& b) {
  constexpr int R = Eigen::RowMajor, C = Eigen::ColMajor;
  if (!b.trans_lhs && !b.trans_rhs) product<T, R, R>(b);
  else if (b.trans_lhs && !b.trans_rhs) product<T, C, R>(b);
  else if (!b.trans_lhs && b.trans_rhs) product<T, R, C>(b);
  else product<T, C, C>(b);
}

}  // namespace

namespace fluxion::runtime {

void FLUXION_LEVEL_NAME(matmul_eigen_level)(bool is_double, const MatmulBlock& b) {
  if (is_double) product_of<double>(b);
  else product_of<float>(b);
}

}  // namespace fluxion::runtime
