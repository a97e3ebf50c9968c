#include "api/shape_ops.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "api/operands.h"
#include "ir/dim_expr.h"
#include "ir/trace.h"

namespace fluxion {
namespace {
using detail::normalize_axis;

[[noreturn]] void fail(ErrorKind kind, std::string_view op, const Array& x, SourceLoc loc, const std::string& detail) {
  std::vector<AbstractArray> avals{x.aval()};
  op_error(kind, op, avals, loc, detail);
}

std::string ints_str(const IntList& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

// Normalises each axis of an array of rank `rank` and checks that none repeats.
IntList normalize_axes(std::string_view op, const IntList& axes, int rank, const Array& x, SourceLoc loc) {
  IntList out;
  for (int64_t a : axes) {
    int64_t n = normalize_axis(op, a, rank, x.aval(), loc);
    if (std::find(out.begin(), out.end(), n) != out.end())
      fail(ErrorKind::Shape, op, x, loc, "repeated axis in " + ints_str(axes));
    out.push_back(n);
  }
  return out;
}

bool is_identity(const IntList& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i)) return false;
  return true;
}

Array bind_transpose(const Array& x, const IntList& perm, SourceLoc loc) {
  if (is_identity(perm)) return x;
  return bind1(Prim::transpose, {x}, Params{{"permutation", perm}}, loc);
}

Array bind_reshape(const Array& x, const Shape& shape, SourceLoc loc) {
  return bind1(Prim::reshape, {x}, Params{{"new_sizes", shape.dims()}}, loc);
}
}  // namespace

namespace {
/// A reshape that involves symbolic dims (docs/shape_polymorphism.md): no size arithmetic here (a
/// symbol's code is not a size); bind's check keeps each symbol a dim of its own.
Array reshape_symbolic(const Array& x, const Shape& shape, SourceLoc loc) {
  for (int64_t d : shape)
    if (d < 0 && !is_symbolic_dim(d))
      fail(ErrorKind::Shape, "reshape", x, loc,
           "the new shape " + shape.str() + " has a -1 or negative dimension: over a symbolic shape every dimension is written out");
  return bind_reshape(x, shape, loc);
}
}  // namespace

Array reshape(const Array& x, const Shape& shape, SourceLoc loc) {
  for (const Shape* s : {&x.shape(), &shape})
    if (std::any_of(s->begin(), s->end(), is_symbolic_dim)) return reshape_symbolic(x, shape, loc);
  Shape out = shape;
  int inferred = -1;
  int64_t known = 1;
  for (int d = 0; d < out.rank(); ++d) {
    if (out[size_t(d)] == -1 && inferred < 0) {
      inferred = d;
    } else if (out[size_t(d)] < 0) {
      fail(ErrorKind::Shape, "reshape", x, loc,
           "invalid new shape " + out.str() + ": only one dimension may be -1 and none may be otherwise negative");
    } else if (__builtin_mul_overflow(known, out[size_t(d)], &known)) {
      fail(ErrorKind::Shape, "reshape", x, loc, "the shape " + shape.str() + " has more elements than an int64 counts");
    }
  }
  if (inferred >= 0) {
    if (known == 0 || x.size() % known != 0)
      fail(ErrorKind::Shape, "reshape", x, loc,
           "cannot reshape " + std::to_string(x.size()) + " elements into shape " + shape.str());
    out[size_t(inferred)] = x.size() / known;
  }
  if (out.numel() != x.size())
    fail(ErrorKind::Shape, "reshape", x, loc,
         "cannot reshape " + std::to_string(x.size()) + " elements into shape " + shape.str());
  return bind_reshape(x, out, loc);
}

Array ravel(const Array& x, SourceLoc loc) { return reshape(x, Shape{-1}, loc); }

Array transpose(const Array& x, SourceLoc loc) {
  IntList perm(size_t(x.ndim()));
  std::iota(perm.rbegin(), perm.rend(), 0);
  return bind_transpose(x, perm, loc);
}

Array transpose(const Array& x, const IntList& axes, SourceLoc loc) {
  if (int(axes.size()) != x.ndim())
    fail(ErrorKind::Shape, "transpose", x, loc,
         "axes " + ints_str(axes) + " must list each of the " + std::to_string(x.ndim()) + " axes once");
  return bind_transpose(x, normalize_axes("transpose", axes, x.ndim(), x, loc), loc);
}

Array swapaxes(const Array& x, int64_t axis1, int64_t axis2, SourceLoc loc) {
  IntList perm(size_t(x.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  const int64_t a = normalize_axis("swapaxes", axis1, x.ndim(), x.aval(), loc);
  const int64_t b = normalize_axis("swapaxes", axis2, x.ndim(), x.aval(), loc);
  std::swap(perm[size_t(a)], perm[size_t(b)]);
  return bind_transpose(x, perm, loc);
}

Array moveaxis(const Array& x, int64_t source, int64_t destination, SourceLoc loc) {
  const int64_t s = normalize_axis("moveaxis", source, x.ndim(), x.aval(), loc);
  const int64_t d = normalize_axis("moveaxis", destination, x.ndim(), x.aval(), loc);
  IntList perm;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != s) perm.push_back(i);
  perm.insert(perm.begin() + d, s);
  return bind_transpose(x, perm, loc);
}

Array expand_dims(const Array& x, int64_t axis, SourceLoc loc) { return expand_dims(x, IntList{axis}, loc); }

Array expand_dims(const Array& x, const IntList& axes, SourceLoc loc) {
  const int out_rank = x.ndim() + int(axes.size());
  IntList at = normalize_axes("expand_dims", axes, out_rank, x, loc);
  Shape out;
  for (int d = 0, next = 0; d < out_rank; ++d)
    out.push_back(std::find(at.begin(), at.end(), d) != at.end() ? 1 : x.shape()[size_t(next++)]);
  return bind_reshape(x, out, loc);
}

Array squeeze(const Array& x, SourceLoc loc) {
  IntList dims;
  for (int d = 0; d < x.ndim(); ++d)
    if (x.shape()[size_t(d)] == 1) dims.push_back(d);
  if (dims.empty()) return x;
  return bind1(Prim::squeeze, {x}, Params{{"dimensions", dims}}, loc);
}

Array squeeze(const Array& x, const IntList& axes, SourceLoc loc) {
  IntList dims = normalize_axes("squeeze", axes, x.ndim(), x, loc);
  for (int64_t d : dims)
    if (x.shape()[size_t(d)] != 1)
      fail(ErrorKind::Shape, "squeeze", x, loc,
           "cannot squeeze axis " + std::to_string(d) + " of size " + std::to_string(x.shape()[size_t(d)]) +
               " (only axes of size 1)");
  if (dims.empty()) return x;
  std::sort(dims.begin(), dims.end());
  return bind1(Prim::squeeze, {x}, Params{{"dimensions", dims}}, loc);
}

Array flip(const Array& x, SourceLoc loc) {
  IntList all(size_t(x.ndim()));
  std::iota(all.begin(), all.end(), 0);
  return flip(x, all, loc);
}

Array flip(const Array& x, const IntList& axes, SourceLoc loc) {
  IntList dims = normalize_axes("flip", axes, x.ndim(), x, loc);
  if (dims.empty()) return x;
  std::sort(dims.begin(), dims.end());
  return bind1(Prim::rev, {x}, Params{{"dimensions", dims}}, loc);
}

Array concatenate(const std::vector<Array>& xs, int64_t axis, SourceLoc loc) {
  std::vector<AbstractArray> avals;
  for (const Array& x : xs) avals.push_back(x.aval());
  if (xs.empty()) op_error(ErrorKind::Value, "concatenate", avals, loc, "needs at least one array");
  if (xs[0].ndim() == 0) op_error(ErrorKind::Shape, "concatenate", avals, loc, "cannot concatenate 0-d arrays");
  const int64_t a = normalize_axis("concatenate", axis, xs[0].ndim(), xs[0].aval(), loc);
  for (const Array& x : xs) {
    bool same = x.ndim() == xs[0].ndim();
    for (int d = 0; same && d < x.ndim(); ++d) same = d == a || x.shape()[size_t(d)] == xs[0].shape()[size_t(d)];
    if (!same)
      op_error(ErrorKind::Shape, "concatenate", avals, loc,
               "all arrays must have the same rank and equal sizes on every axis but axis " + std::to_string(a));
  }
  std::vector<ArrayLike> likes(xs.begin(), xs.end());
  const PromotedType t = detail::promote(likes);
  std::vector<Array> operands;
  for (const Array& x : xs) operands.push_back(detail::convert(x, t.dtype, t.weak, loc));
  if (operands.size() == 1) return operands[0];
  return bind1(Prim::concatenate, operands, Params{{"dimension", a}}, loc);
}

Array stack(const std::vector<Array>& xs, int64_t axis, SourceLoc loc) {
  std::vector<AbstractArray> avals;
  for (const Array& x : xs) avals.push_back(x.aval());
  if (xs.empty()) op_error(ErrorKind::Value, "stack", avals, loc, "needs at least one array");
  for (const Array& x : xs)
    if (!(x.shape() == xs[0].shape())) op_error(ErrorKind::Shape, "stack", avals, loc, "all arrays must have the same shape");
  const int64_t a = normalize_axis("stack", axis, xs[0].ndim() + 1, xs[0].aval(), loc);
  std::vector<Array> expanded;
  for (const Array& x : xs) expanded.push_back(expand_dims(x, a, loc));
  return concatenate(expanded, a, loc);
}

Array slice(const Array& x, const IntList& start, const IntList& limit, SourceLoc loc) {
  return slice(x, start, limit, IntList(size_t(x.ndim()), 1), loc);
}

Array slice(const Array& x, const IntList& start, const IntList& limit, const IntList& strides, SourceLoc loc) {
  const size_t rank = size_t(x.ndim());
  if (start.size() != rank || limit.size() != rank || strides.size() != rank)
    fail(ErrorKind::Shape, "slice", x, loc,
         "start " + ints_str(start) + ", limit " + ints_str(limit) + " and strides " + ints_str(strides) +
             " must have one entry per axis");
  for (size_t d = 0; d < rank; ++d) {
    if (start[d] < 0 || start[d] > limit[d] || limit[d] > x.shape()[d])
      fail(ErrorKind::Shape, "slice", x, loc,
           "start " + ints_str(start) + " and limit " + ints_str(limit) +
               " must satisfy 0 <= start <= limit <= size on every axis");
    if (strides[d] < 1) fail(ErrorKind::Shape, "slice", x, loc, "strides " + ints_str(strides) + " must be positive");
  }
  return bind1(Prim::slice, {x},
               Params{{"start_indices", start}, {"limit_indices", limit}, {"strides", strides}}, loc);
}

Array pad(const Array& x, const std::vector<std::pair<int64_t, int64_t>>& pad_width, const ArrayLike& value,
          SourceLoc loc) {
  std::vector<std::pair<int64_t, int64_t>> widths = pad_width;
  if (widths.size() == 1) widths.assign(size_t(x.ndim()), pad_width[0]);
  if (int(widths.size()) != x.ndim())
    fail(ErrorKind::Shape, "pad", x, loc,
         "pad_width has " + std::to_string(pad_width.size()) + " (before, after) pairs for an array of rank " +
             std::to_string(x.ndim()));
  if (value.shape().rank() != 0) {
    std::vector<AbstractArray> avals{x.aval(), value.aval()};
    op_error(ErrorKind::Shape, "pad", avals, loc, "the constant value must be a scalar");
  }
  IntList config;
  bool all_zero = true;
  for (auto [lo, hi] : widths) {
    if (lo < 0 || hi < 0) fail(ErrorKind::Value, "pad", x, loc, "pad widths must be non-negative");
    config.insert(config.end(), {lo, hi, 0});
    all_zero = all_zero && lo == 0 && hi == 0;
  }
  if (all_zero) return x;
  Array v = detail::as_array(value, x.dtype(), x.weak_type(), loc);
  return bind1(Prim::pad, {x, v}, Params{{"padding_config", config}}, loc);
}

Array tile(const Array& x, const IntList& reps, SourceLoc loc) {
  for (int64_t r : reps)
    if (r < 0) fail(ErrorKind::Value, "tile", x, loc, "reps " + ints_str(reps) + " must be non-negative");
  const int rank = std::max(x.ndim(), int(reps.size()));
  IntList r(size_t(rank) - reps.size(), 1);
  r.insert(r.end(), reps.begin(), reps.end());
  // Broadcast x (padded with leading 1s) to [r0, s0, r1, s1, ...], then merge each pair.
  Shape expanded, merged;
  IntList bdims;
  for (int d = 0; d < rank; ++d) {
    const int64_t size = d < rank - x.ndim() ? 1 : x.shape()[size_t(d - (rank - x.ndim()))];
    expanded.push_back(r[size_t(d)]);
    expanded.push_back(size);
    merged.push_back(mul_dims(r[size_t(d)], size));  // r copies of a symbolic b are the dim r*b
    if (d >= rank - x.ndim()) bdims.push_back(2 * d + 1);
  }
  Array b = bind1(Prim::broadcast_in_dim, {x}, Params{{"shape", expanded.dims()}, {"broadcast_dimensions", bdims}}, loc);
  return bind_reshape(b, merged, loc);
}

}  // namespace fluxion
