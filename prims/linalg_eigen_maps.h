// What the per-level Eigen kernels of the linear-algebra primitives (prims/linalg_eigen.cpp,
// prims/linalg_eigen_spectral.cpp) see a LinalgBlock's matrices as: row-major maps of its buffers.
// Included after prims/eigen_level.h and <Eigen/Dense>, so Eigen here is the level's renamed one.
#pragma once

#include "prims/linalg_block.h"

// Internal linkage: the per-level objects are compiled with different -march, and a shared inline
// symbol would be one copy for all of them (tests/check_level_symbols.sh).
namespace {

using fluxion::linalg_rules::LinalgBlock;

template <class T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Map = Eigen::Map<Matrix<T>>;
template <class T>
using ConstMap = Eigen::Map<const Matrix<T>>;
template <class T>
using VectorMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>;

template <class T>
T* out(LinalgBlock& b, int i) {
  return static_cast<T*>(b.out[i]);
}

}  // namespace
