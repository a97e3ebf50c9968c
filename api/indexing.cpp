#include "api/indexing.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "api/debug.h"
#include "api/operands.h"
#include "api/shape_ops.h"
#include "ir/debug_checks.h"
#include "ir/trace.h"

namespace fluxion {
namespace {

[[noreturn]] void fail(ErrorKind kind, std::string_view op, std::initializer_list<ArrayLike> xs, SourceLoc loc,
                       const std::string& detail) {
  std::vector<AbstractArray> avals;
  for (const ArrayLike& x : xs) avals.push_back(x.aval());
  op_error(kind, op, avals, loc, detail);
}

// Indices as an integer array (a C++ integer becomes an int32 scalar) with negative entries
// wrapped numpy-style by `size`.
Array wrapped_indices(std::string_view op, const Array& x, const ArrayLike& indices, int64_t size, SourceLoc loc) {
  if (!is_integer(indices.dtype()))
    fail(ErrorKind::Type, op, {x, indices}, loc,
         "indices must have an integer dtype, got " + std::string(dtype_name(indices.dtype())));
  Array i = detail::as_array(indices, indices.is_scalar() ? default_int : indices.dtype(), false, loc);
  if (!is_signed_int(i.dtype())) return i;
  if (!i.is_tracer()) {
    // Known indices are wrapped here rather than staged, so a traced program holds only the gather.
    std::vector<int64_t> v = i.to_vector<int64_t>();
    if (std::none_of(v.begin(), v.end(), [](int64_t k) { return k < 0; })) return i;
    for (int64_t& k : v) k += k < 0 ? size : 0;
    return make_concrete(AbstractArray{i.shape(), DType::int64, false}, v.data());
  }
  // i + size must not overflow the index dtype (an int8 index into an axis of 300).
  if (i.dtype() == DType::int8 && size > 127) i = detail::convert(i, DType::int32, false, loc);
  if (i.dtype() == DType::int32 && size > INT32_MAX) i = detail::convert(i, DType::int64, false, loc);
  return where(less(i, 0, loc), add(i, int64_t(size), loc), i, loc);
}

// x.shape[:axis] + indices.shape[batch_dims:] + x.shape[axis+1:]
Shape gathered_shape(const Array& x, const Array& indices, int64_t axis, int64_t batch_dims) {
  Shape s;
  for (int64_t d = 0; d < axis; ++d) s.push_back(x.shape()[size_t(d)]);
  for (int d = int(batch_dims); d < indices.ndim(); ++d) s.push_back(indices.shape()[size_t(d)]);
  for (int d = int(axis) + 1; d < x.ndim(); ++d) s.push_back(x.shape()[size_t(d)]);
  return s;
}

// batch_dims must lie in [0, axis] and within the indices' rank, the leading dims agreeing.
void check_batch_dims(std::string_view op, const Array& x, const ArrayLike& indices, int64_t axis, int64_t batch_dims,
                      SourceLoc loc) {
  const Shape is = indices.shape();
  if (batch_dims < 0 || batch_dims > axis || batch_dims > is.rank())
    fail(ErrorKind::Shape, op, {x, indices}, loc,
         "batch_dims " + std::to_string(batch_dims) + " must lie in [0, min(axis " + std::to_string(axis) +
             ", indices rank " + std::to_string(is.rank()) + ")]");
  for (size_t d = 0; d < size_t(batch_dims); ++d)
    if (x.shape()[d] != is[d])
      fail(ErrorKind::Shape, op, {x, indices}, loc,
           "the first " + std::to_string(batch_dims) + " (batch) dimensions of x " + x.shape().str() + " and indices " +
               is.str() + " must agree");
}

Params axis_params(int64_t axis, int64_t batch_dims) {
  // batch_dims = 0 is left out, so programs without batching print as before.
  return batch_dims ? Params{{"axis", axis}, {"batch_dims", batch_dims}} : Params{{"axis", axis}};
}

// One 0-d integer array per axis of x.
std::vector<Array> start_indices(std::string_view op, const Array& x, const std::vector<ArrayLike>& starts,
                                 SourceLoc loc) {
  if (int(starts.size()) != x.ndim())
    fail(ErrorKind::Shape, op, {x}, loc,
         "needs one start index per axis (" + std::to_string(x.ndim()) + "), got " + std::to_string(starts.size()));
  std::vector<Array> out;
  for (const ArrayLike& s : starts) {
    if (!is_integer(s.dtype()))
      fail(ErrorKind::Type, op, {x, s}, loc,
           "start indices must have an integer dtype, got " + std::string(dtype_name(s.dtype())));
    if (s.shape().rank() != 0)
      fail(ErrorKind::Shape, op, {x, s}, loc, "start indices must be scalars, got shape " + s.shape().str());
    out.push_back(detail::as_array(s, s.is_scalar() ? default_int : s.dtype(), false, loc));
  }
  return out;
}

Array scatter_along(Prim p, std::string_view op, const Array& x, const ArrayLike& indices, const ArrayLike& updates,
                    int64_t axis, int64_t batch_dims, SourceLoc loc) {
  if (x.ndim() == 0) fail(ErrorKind::Shape, op, {x, indices, updates}, loc, "cannot index a 0-d array");
  const int64_t a = detail::normalize_axis(op, axis, x.ndim(), x.aval(), loc);
  check_batch_dims(op, x, indices, a, batch_dims, loc);
  Array i = wrapped_indices(op, x, indices, x.shape()[size_t(a)], loc);
  const Shape target = gathered_shape(x, i, a, batch_dims);
  const Shape us = updates.shape();
  bool broadcastable = us.rank() <= target.rank();
  for (int d = 0; broadcastable && d < us.rank(); ++d) {
    const int64_t u = us[size_t(d)], t = target[size_t(target.rank() - us.rank() + d)];
    broadcastable = u == 1 || u == t;
  }
  if (!broadcastable)
    fail(ErrorKind::Shape, op, {x, indices, updates}, loc,
         "updates of shape " + us.str() +
             " do not broadcast to x.shape[:axis] + indices.shape[batch_dims:] + x.shape[axis+1:] = " +
             target.str());
  Array u = detail::as_array(updates, x.dtype(), x.weak_type(), loc);
  u = detail::broadcast(u, target, loc);
  return bind1(p, {x, i, u}, axis_params(a, batch_dims), loc);
}

}  // namespace

Array take(const Array& x, const ArrayLike& indices, int64_t axis, SourceLoc loc) {
  return take(x, indices, axis, 0, loc);
}

Array take(const Array& x, const ArrayLike& indices, int64_t axis, int64_t batch_dims, SourceLoc loc) {
  if (x.ndim() == 0) fail(ErrorKind::Shape, "take", {x, indices}, loc, "cannot take from a 0-d array");
  const int64_t a = detail::normalize_axis("take", axis, x.ndim(), x.aval(), loc);
  check_batch_dims("take", x, indices, a, batch_dims, loc);
  const int64_t n = x.shape()[size_t(a)];
  Array i = wrapped_indices("take", x, indices, n, loc);
  if (config::check_bounds()) {
    const AbstractArray types[] = {x.aval(), i.aval()};
    debug::check_index_bounds("take", types, i, n, "axis " + std::to_string(a) + " of size " + std::to_string(n), loc);
  }
  if (n == 0 && i.size() > 0)
    fail(ErrorKind::Shape, "take", {x, indices}, loc, "cannot take from axis " + std::to_string(a) + " of size 0");
  return bind1(Prim::gather, {x, i}, axis_params(a, batch_dims), loc);
}

Array take(const Array& x, const ArrayLike& indices, SourceLoc loc) {
  return take(reshape(x, Shape{-1}, loc), indices, 0, loc);
}

Array dynamic_slice(const Array& x, const std::vector<ArrayLike>& starts, const IntList& sizes, SourceLoc loc) {
  std::vector<Array> operands{x};
  for (Array& s : start_indices("dynamic_slice", x, starts, loc)) operands.push_back(std::move(s));
  bool fits = int(sizes.size()) == x.ndim();
  for (size_t d = 0; fits && d < sizes.size(); ++d) fits = sizes[d] >= 0 && sizes[d] <= x.shape()[d];
  if (!fits) {
    std::string s = "(";
    for (size_t d = 0; d < sizes.size(); ++d) s += (d ? ", " : "") + std::to_string(sizes[d]);
    fail(ErrorKind::Shape, "dynamic_slice", {x}, loc,
         "slice sizes " + s + ") must have one entry per axis, each between 0 and the axis size");
  }
  if (config::check_bounds()) {
    std::vector<AbstractArray> types;
    for (const Array& o : operands) types.push_back(o.aval());
    for (size_t d = 0; d < sizes.size(); ++d) {
      const int64_t limit = x.shape()[d] - sizes[d] + 1;
      debug::check_index_bounds("dynamic_slice", types, operands[d + 1], limit,
                                "the start of axis " + std::to_string(d) + " (size " + std::to_string(x.shape()[d]) +
                                    ", slice " + std::to_string(sizes[d]) + ")",
                                loc);
    }
  }
  return bind1(Prim::dynamic_slice, operands, Params{{"slice_sizes", sizes}}, loc);
}

Array dynamic_update_slice(const Array& x, const ArrayLike& update, const std::vector<ArrayLike>& starts,
                           SourceLoc loc) {
  const Shape us = update.shape();
  bool fits = us.rank() == x.ndim();
  for (int d = 0; fits && d < us.rank(); ++d) fits = us[size_t(d)] <= x.shape()[size_t(d)];
  if (!fits)
    fail(ErrorKind::Shape, "dynamic_update_slice", {x, update}, loc,
         "the update must have the array's rank and fit inside it");
  std::vector<Array> operands{x, detail::as_array(update, x.dtype(), x.weak_type(), loc)};
  for (Array& s : start_indices("dynamic_update_slice", x, starts, loc)) operands.push_back(std::move(s));
  return bind1(Prim::dynamic_update_slice, operands, {}, loc);
}

Array at_set(const Array& x, const ArrayLike& indices, const ArrayLike& updates, int64_t axis, SourceLoc loc) {
  return scatter_along(Prim::scatter, "at_set", x, indices, updates, axis, 0, loc);
}

Array at_set(const Array& x, const ArrayLike& indices, const ArrayLike& updates, int64_t axis, int64_t batch_dims,
             SourceLoc loc) {
  return scatter_along(Prim::scatter, "at_set", x, indices, updates, axis, batch_dims, loc);
}

Array at_add(const Array& x, const ArrayLike& indices, const ArrayLike& updates, int64_t axis, SourceLoc loc) {
  return scatter_along(Prim::scatter_add, "at_add", x, indices, updates, axis, 0, loc);
}

Array at_add(const Array& x, const ArrayLike& indices, const ArrayLike& updates, int64_t axis, int64_t batch_dims,
             SourceLoc loc) {
  return scatter_along(Prim::scatter_add, "at_add", x, indices, updates, axis, batch_dims, loc);
}

}  // namespace fluxion
