// Zero-copy views between Eigen and Fluxion (include this header beside <fluxion.h>; fluxion.h
// itself does not pull in Eigen):
//
//   Eigen::Matrix<float, -1, -1, Eigen::RowMajor> m = ...;
//   fx::Array a = fx::from_eigen(std::move(m));       // takes the matrix's heap block, no copy
//   fx::Array b = fx::from_eigen(Eigen::Map<...>(p, r, c), owner);  // borrows (owner kept alive, may be null)
//   auto v = fx::as_eigen<float>(x);                   // Eigen::Map over x's bytes (rank 1: a column)
//
// Fluxion arrays are row-major and contiguous, so only row-major matrices with no padding
// (outer stride = columns) and vectors are shared; anything else (Eigen's default column-major
// matrices) is a ValueError naming the layout -- convert explicitly, e.g. with a RowMajor copy.
// as_eigen's map is read-only (arrays are immutable) and valid while x (or any copy of the handle)
// lives; a tracer, a dtype other than T or a rank above 2 is an error.
#pragma once
#include <Eigen/Core>
#include <memory>
#include <type_traits>

#include "api/interop.h"

namespace fluxion {

namespace interop_detail {
/// The checks of as_eigen: a concrete host array of dtype `want` and rank <= 2 (throws otherwise).
const void* eigen_view_data(const Array& x, DType want, SourceLoc loc);
/// from_eigen's layout error (a column-major or padded matrix).
[[noreturn]] void not_row_major(int64_t rows, int64_t cols, DType dtype, SourceLoc loc);
}  // namespace interop_detail

template <class T>
using RowMajorMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

/// A view over an Eigen expression's memory (a Map, a Ref, a matrix): [rows, cols], or [size] for
/// a compile-time vector. `owner` keeps the memory alive (null: the caller does).
template <class Derived>
Array from_eigen(const Eigen::DenseBase<Derived>& m, std::shared_ptr<void> owner,
                 SourceLoc loc = std::source_location::current()) {
  using T = typename Derived::Scalar;
  const auto& d = m.derived();
  constexpr bool vector = Derived::IsVectorAtCompileTime;
  const DType dtype = dtype_of_v<T>;
  if constexpr (!vector) {
    const bool row_major = bool(Derived::IsRowMajor) || d.rows() == 1;
    if (!row_major || (d.rows() > 1 && d.outerStride() != d.cols()))
      interop_detail::not_row_major(d.rows(), d.cols(), dtype, loc);
  } else if (d.innerStride() != 1) {
    interop_detail::not_row_major(d.rows(), d.cols(), dtype, loc);
  }
  void* data = const_cast<T*>(d.data());
  const Shape shape = vector ? Shape{int64_t(d.size())} : Shape{int64_t(d.rows()), int64_t(d.cols())};
  return from_buffer(data, shape, dtype, std::move(owner), loc);
}

/// Takes a dynamically sized Eigen matrix or vector by move: its heap block becomes the array's
/// memory (freed with the last array), no copy.
template <class T, int R, int C, int O, int MR, int MC>
  requires(R == Eigen::Dynamic || C == Eigen::Dynamic)
Array from_eigen(Eigen::Matrix<T, R, C, O, MR, MC>&& m, SourceLoc loc = std::source_location::current()) {
  auto owned = std::make_shared<Eigen::Matrix<T, R, C, O, MR, MC>>(std::move(m));
  return from_eigen(*owned, owned, loc);
}

/// A read-only Eigen view of x's bytes: [rows, cols] row-major; a rank-1 x is a column, a rank-0 a 1x1.
template <class T>
RowMajorMap<T> as_eigen(const Array& x, SourceLoc loc = std::source_location::current()) {
  const T* p = static_cast<const T*>(interop_detail::eigen_view_data(x, dtype_of_v<T>, loc));
  const int64_t rows = x.ndim() == 2 ? x.shape()[0] : x.ndim() == 1 ? x.shape()[0] : 1;
  const int64_t cols = x.ndim() == 2 ? x.shape()[1] : 1;
  return RowMajorMap<T>(p, rows, cols);
}

}  // namespace fluxion
