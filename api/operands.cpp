#include "api/operands.h"

#include <algorithm>

namespace fluxion {
namespace detail {

PromotedType promote(std::span<const ArrayLike> xs) {
  PromotedType r{xs[0].dtype(), xs[0].weak()};
  for (size_t i = 1; i < xs.size(); ++i) r = promote_types(r.dtype, r.weak, xs[i].dtype(), xs[i].weak());
  return r;
}

Array convert(const Array& x, DType dtype, bool weak, SourceLoc loc) {
  if (x.dtype() == dtype && x.weak_type() == weak) return x;
  return bind1(Prim::convert_element_type, {x}, Params{{"new_dtype", dtype}, {"weak_type", weak}}, loc);
}

Array as_array(const ArrayLike& x, DType dtype, bool weak, SourceLoc loc) {
  if (!x.is_scalar()) return convert(x.array(), dtype, weak, loc);
  Literal l = x.scalar_kind() == DType::complex64 ? Literal::of_complex(x.scalar_double(), x.scalar_imag(), dtype, weak)
              : x.scalar_kind() == DType::float32 ? Literal::of_double(x.scalar_double(), dtype, weak)
                                                  : Literal::of_int(x.scalar_int(), dtype, weak);
  return literal_array(l);
}

Shape broadcast_shapes(std::string_view op, std::span<const ArrayLike> xs, SourceLoc loc) {
  int rank = 0;
  for (const ArrayLike& x : xs) rank = std::max(rank, x.shape().rank());
  std::vector<int64_t> out(size_t(rank), 1);
  for (const ArrayLike& x : xs) {
    Shape s = x.shape();
    int off = rank - s.rank();
    for (int i = 0; i < s.rank(); ++i) {
      int64_t& o = out[size_t(off + i)];
      if (s[size_t(i)] == o || s[size_t(i)] == 1) continue;
      if (o == 1) {
        o = s[size_t(i)];
        continue;
      }
      std::vector<AbstractArray> avals;
      for (const ArrayLike& y : xs) avals.push_back(y.aval());
      op_error(ErrorKind::Shape, op, avals, loc, "shapes cannot be broadcast together (numpy rules)");
    }
  }
  return Shape(std::move(out));
}

Array broadcast(const Array& x, const Shape& shape, SourceLoc loc) {
  if (x.shape() == shape) return x;
  int off = shape.rank() - x.ndim();
  if (off < 0) {
    AbstractArray target{shape, x.dtype()};
    std::vector<AbstractArray> avals{x.aval(), target};
    op_error(ErrorKind::Shape, "broadcast_to", avals, loc, "cannot broadcast to a lower rank");
  }
  IntList bdims;
  for (int i = 0; i < x.ndim(); ++i) bdims.push_back(off + i);
  return bind1(Prim::broadcast_in_dim, {x}, Params{{"shape", shape.dims()}, {"broadcast_dimensions", bdims}}, loc);
}

std::vector<Array> elementwise_operands(std::string_view op, std::span<const ArrayLike> xs, SourceLoc loc,
                                        const DType* force) {
  PromotedType t = promote(xs);
  if (force) t = {*force, false};
  Shape s = broadcast_shapes(op, xs, loc);
  std::vector<Array> out;
  out.reserve(xs.size());
  for (const ArrayLike& x : xs) {
    Array a = as_array(x, t.dtype, t.weak, loc);
    if (a.ndim() != 0) a = broadcast(a, s, loc);
    out.push_back(std::move(a));
  }
  return out;
}

int64_t normalize_axis(std::string_view op, int64_t axis, int rank, const AbstractArray& x, SourceLoc loc) {
  if (axis < -rank || axis >= rank) {
    std::vector<AbstractArray> avals{x};
    op_error(ErrorKind::Shape, op, avals, loc,
             "axis " + std::to_string(axis) + " is out of bounds for an array of rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace detail

Array broadcast_to(const ArrayLike& x, const Shape& shape, SourceLoc loc) {
  Array a = x.is_scalar() ? detail::as_array(x, detail::promote(std::span(&x, 1)).dtype, false, loc) : x.array();
  if (a.ndim() > shape.rank()) {
    std::vector<AbstractArray> avals{a.aval(), AbstractArray{shape, a.dtype()}};
    op_error(ErrorKind::Shape, "broadcast_to", avals, loc, "cannot broadcast to a lower rank");
  }
  int off = shape.rank() - a.ndim();
  for (int i = 0; i < a.ndim(); ++i)
    if (a.shape()[size_t(i)] != 1 && a.shape()[size_t(i)] != shape[size_t(off + i)]) {
      std::vector<AbstractArray> avals{a.aval(), AbstractArray{shape, a.dtype()}};
      op_error(ErrorKind::Shape, "broadcast_to", avals, loc, "shapes are not broadcast-compatible (numpy rules)");
    }
  return detail::broadcast(a, shape, loc);
}

Array astype(const ArrayLike& x, DType dtype, SourceLoc loc) {
  return detail::as_array(x, dtype, false, loc);
}

DType result_type(std::span<const ArrayLike> xs) { return detail::promote(xs).dtype; }

}  // namespace fluxion
