// Shape primitives: broadcast_in_dim reshape transpose squeeze rev concatenate pad iota slice.
// They move elements and never compute with them, so every kernel copies raw elements of
// itemsize(dtype) bytes and handles every dtype alike.
#include "prims/registry.h"
#include "ir/error.h"
#include "ir/trace.h"
#include "api/creation.h"
#include "transforms/jvp.h"
#include "transforms/transpose.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace fluxion {
namespace {

std::string ints_str(const IntList& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

void expect_operands(std::span<const AbstractArray> in, size_t n) {
  if (in.size() != n) rule_error(ErrorKind::Type, "expects " + std::to_string(n) + " operand(s), got " + std::to_string(in.size()));
}

// Each entry of `dims` is a distinct dimension of an array of rank `rank`.
void check_distinct_dims(const char* what, const IntList& dims, int rank) {
  std::vector<bool> seen(size_t(rank), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      rule_error(ErrorKind::Shape, std::string(what) + " " + ints_str(dims) + " has an entry out of range for rank " +
                                       std::to_string(rank));
    if (seen[size_t(d)]) rule_error(ErrorKind::Shape, std::string(what) + " " + ints_str(dims) + " repeats dimension " + std::to_string(d));
    seen[size_t(d)] = true;
  }
}

void check_length(const char* what, const IntList& v, int rank) {
  if (int(v.size()) != rank)
    rule_error(ErrorKind::Shape, std::string(what) + " " + ints_str(v) + " must have one entry per dimension (rank " +
                                     std::to_string(rank) + ")");
}

/// Calls f(out_index, multi_index) for every element of `shape` in row-major order.
template <class F>
void for_each_index(const Shape& shape, F f) {
  const int64_t n = shape.numel();
  const int rank = shape.rank();
  std::vector<int64_t> idx(size_t(rank), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, idx);
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < shape[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
}

void copy_element(const View& from, int64_t i, const View& to, int64_t j) {
  const size_t isz = itemsize(to.dtype());
  std::memcpy(static_cast<char*>(to.data) + size_t(j) * isz, static_cast<const char*>(from.data) + size_t(i) * isz, isz);
}


// broadcast_in_dim[shape=S broadcast_dimensions=B] x: operand dim i becomes output dim B[i]; each
// operand dim is 1 or equal to the output dim; B is strictly increasing.
std::vector<AbstractArray> broadcast_in_dim_rule(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand");
  const IntList& shape = params.get_ints("shape");
  const IntList& bdims = params.get_ints("broadcast_dimensions");
  const AbstractArray& x = in[0];
  if (int(bdims.size()) != x.ndim())
    rule_error(ErrorKind::Shape, "broadcast_dimensions has " + std::to_string(bdims.size()) +
                                     " entries for an operand of rank " + std::to_string(x.ndim()));
  for (size_t i = 0; i < bdims.size(); ++i) {
    int64_t d = bdims[i];
    if (d < 0 || d >= int64_t(shape.size()) || (i && d <= bdims[i - 1]))
      rule_error(ErrorKind::Shape, "broadcast_dimensions must be strictly increasing and within the output rank");
    if (x.shape[i] != 1 && x.shape[i] != shape[size_t(d)])
      rule_error(ErrorKind::Shape, "operand dimension " + std::to_string(i) + " (size " + std::to_string(x.shape[i]) +
                                       ") cannot broadcast to output dimension " + std::to_string(d) + " (size " +
                                       std::to_string(shape[size_t(d)]) + ")");
  }
  for (int64_t s : shape)
    if (s < 0) rule_error(ErrorKind::Shape, "negative dimension in shape");
  return {AbstractArray{Shape(shape), x.dtype, x.weak_type}};
}

void broadcast_in_dim_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  const IntList& bdims = params.get_ints("broadcast_dimensions");
  const Shape& os = out[0].shape();
  const Shape& is = in[0].shape();
  const int rank = os.rank();
  // Stride of each output dim in the operand (0 where broadcast).
  std::vector<int64_t> in_strides = strides_of(is), st(size_t(rank), 0);
  for (size_t i = 0; i < bdims.size(); ++i)
    if (is[i] != 1) st[size_t(bdims[i])] = in_strides[i];
  const size_t isz = itemsize(out[0].dtype());
  const char* src = static_cast<const char*>(in[0].data);
  char* dst = static_cast<char*>(out[0].data);
  const int64_t n = out[0].size();
  if (n == 0) return;
  // Innermost run: copy contiguous rows when the last dim is not broadcast, else splat.
  std::vector<int64_t> idx(size_t(rank), 0);
  int64_t inner = rank ? os[size_t(rank - 1)] : 1;
  int64_t inner_st = rank ? st[size_t(rank - 1)] : 0;
  for (int64_t o = 0; o < n; o += inner) {
    int64_t off = 0;
    for (int d = 0; d < rank - 1; ++d) off += idx[size_t(d)] * st[size_t(d)];
    const char* s = src + size_t(off) * isz;
    char* t = dst + size_t(o) * isz;
    if (inner_st == 1) {
      std::memcpy(t, s, size_t(inner) * isz);
    } else {
      for (int64_t k = 0; k < inner; ++k) std::memcpy(t + size_t(k) * isz, s + size_t(k * inner_st) * isz, isz);
    }
    for (int d = rank - 2; d >= 0; --d) {
      if (++idx[size_t(d)] < os[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
}

// iota[dtype shape dimension]: 0, 1, ... along `dimension`, constant along the others.
std::vector<AbstractArray> iota_rule(std::span<const AbstractArray> in, const Params& params) {
  if (!in.empty()) rule_error(ErrorKind::Type, "takes no operands");
  const IntList& shape = params.get_ints("shape");
  int64_t dim = params.get_int("dimension");
  if (dim < 0 || dim >= int64_t(shape.size()))
    rule_error(ErrorKind::Shape, "dimension " + std::to_string(dim) + " is out of range for shape " + Shape(shape).str());
  DType d = params.get_dtype("dtype");
  if (d == DType::bool_) rule_error(ErrorKind::Type, "iota of bool");
  return {AbstractArray{Shape(shape), d, false}};
}

void iota_kernel(std::span<const View>, std::span<const View> out, const Params& params) {
  const Shape& s = out[0].shape();
  int64_t dim = params.get_int("dimension");
  int64_t inner = 1;
  for (int d = int(dim) + 1; d < s.rank(); ++d) inner *= s[size_t(d)];
  int64_t len = s[size_t(dim)];
  const int64_t n = out[0].size();
  dispatch_dtype(out[0].dtype(), [&](auto z) {
    using T = decltype(z);
    T* o = out[0].as<T>();
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(static_cast<compute_t<T>>((i / inner) % len));
  });
}

// reshape[new_sizes=S] x: the same elements in row-major order under a new shape of equal size.
std::vector<AbstractArray> reshape_rule(std::span<const AbstractArray> in, const Params& params) {
  expect_operands(in, 1);
  const IntList& sizes = params.get_ints("new_sizes");
  for (int64_t s : sizes)
    if (s < 0) rule_error(ErrorKind::Shape, "new_sizes " + ints_str(sizes) + " has a negative dimension");
  Shape out(sizes);
  if (out.numel() != in[0].size())
    rule_error(ErrorKind::Shape, "cannot reshape " + std::to_string(in[0].size()) + " elements into new_sizes " +
                                     ints_str(sizes) + " (" + std::to_string(out.numel()) + " elements)");
  return {AbstractArray{std::move(out), in[0].dtype, in[0].weak_type}};
}

void copy_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  if (const size_t n = out[0].aval->nbytes()) std::memcpy(out[0].data, in[0].data, n);
}

// transpose[permutation=P] x: output dim i is operand dim P[i].
std::vector<AbstractArray> transpose_rule(std::span<const AbstractArray> in, const Params& params) {
  expect_operands(in, 1);
  const IntList& perm = params.get_ints("permutation");
  check_length("permutation", perm, in[0].ndim());
  check_distinct_dims("permutation", perm, in[0].ndim());
  Shape out;
  for (int64_t p : perm) out.push_back(in[0].shape[size_t(p)]);
  return {AbstractArray{std::move(out), in[0].dtype, in[0].weak_type}};
}

void transpose_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  const IntList& perm = params.get_ints("permutation");
  const std::vector<int64_t> in_strides = strides_of(in[0].shape());
  for_each_index(out[0].shape(), [&](int64_t o, const std::vector<int64_t>& idx) {
    int64_t i = 0;
    for (size_t d = 0; d < perm.size(); ++d) i += idx[d] * in_strides[size_t(perm[d])];
    copy_element(in[0], i, out[0], o);
  });
}

// squeeze[dimensions=D] x: drops the listed dimensions, each of size 1.
std::vector<AbstractArray> squeeze_rule(std::span<const AbstractArray> in, const Params& params) {
  expect_operands(in, 1);
  const IntList& dims = params.get_ints("dimensions");
  check_distinct_dims("dimensions", dims, in[0].ndim());
  Shape out;
  for (int d = 0; d < in[0].ndim(); ++d) {
    bool dropped = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (dropped && in[0].shape[size_t(d)] != 1)
      rule_error(ErrorKind::Shape, "cannot squeeze dimension " + std::to_string(d) + " of size " +
                                       std::to_string(in[0].shape[size_t(d)]) + " (only size-1 dimensions)");
    if (!dropped) out.push_back(in[0].shape[size_t(d)]);
  }
  return {AbstractArray{std::move(out), in[0].dtype, in[0].weak_type}};
}

// rev[dimensions=D] x: reverses the order of elements along each listed dimension.
std::vector<AbstractArray> rev_rule(std::span<const AbstractArray> in, const Params& params) {
  expect_operands(in, 1);
  check_distinct_dims("dimensions", params.get_ints("dimensions"), in[0].ndim());
  return {in[0]};
}

void rev_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  const Shape& s = in[0].shape();
  std::vector<bool> reversed(size_t(s.rank()), false);
  for (int64_t d : params.get_ints("dimensions")) reversed[size_t(d)] = true;
  const std::vector<int64_t> strides = strides_of(s);
  for_each_index(s, [&](int64_t o, const std::vector<int64_t>& idx) {
    int64_t i = 0;
    for (size_t d = 0; d < idx.size(); ++d) i += (reversed[d] ? s[d] - 1 - idx[d] : idx[d]) * strides[d];
    copy_element(in[0], i, out[0], o);
  });
}

// concatenate[dimension=d] x0 x1 ...: joins n >= 1 operands of one dtype along d; all other
// dimensions agree.
std::vector<AbstractArray> concatenate_rule(std::span<const AbstractArray> in, const Params& params) {
  if (in.empty()) rule_error(ErrorKind::Type, "expects at least 1 operand");
  const int64_t dim = params.get_int("dimension");
  const AbstractArray& first = in[0];
  if (dim < 0 || dim >= first.ndim())
    rule_error(ErrorKind::Shape, "dimension " + std::to_string(dim) + " is out of range for rank " + std::to_string(first.ndim()));
  Shape out = first.shape;
  out[size_t(dim)] = 0;
  bool weak = true;
  for (const AbstractArray& a : in) {
    if (a.dtype != first.dtype)
      rule_error(ErrorKind::Type, "operands must have the same dtype, got " + std::string(dtype_name(first.dtype)) +
                                      " and " + std::string(dtype_name(a.dtype)));
    bool same = a.ndim() == first.ndim();
    for (int d = 0; same && d < a.ndim(); ++d) same = d == dim || a.shape[size_t(d)] == first.shape[size_t(d)];
    if (!same)
      rule_error(ErrorKind::Shape, "operand shapes " + first.shape.str() + " and " + a.shape.str() +
                                       " differ outside dimension " + std::to_string(dim));
    out[size_t(dim)] += a.shape[size_t(dim)];
    weak = weak && a.weak_type;
  }
  return {AbstractArray{std::move(out), first.dtype, weak}};
}

void concatenate_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  // Row-major: the output is `outer` rows, each the operands' blocks (size[d] * inner elements) in turn.
  const int64_t dim = params.get_int("dimension");
  const Shape& os = out[0].shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= os[size_t(d)];
  for (int d = int(dim) + 1; d < os.rank(); ++d) inner *= os[size_t(d)];
  const size_t isz = itemsize(out[0].dtype());
  char* dst = static_cast<char*>(out[0].data);
  for (int64_t r = 0; r < outer; ++r) {
    for (const View& v : in) {
      const size_t block = size_t(v.shape()[size_t(dim)] * inner) * isz;
      std::memcpy(dst, static_cast<const char*>(v.data) + size_t(r) * block, block);
      dst += block;
    }
  }
}

// pad[padding_config=(lo0,hi0,interior0, lo1,hi1,interior1, ...)] x padding_value: lax.pad. Per
// dimension, `interior` copies of the value go between neighbouring elements, then `lo` before and
// `hi` after; a negative lo/hi removes elements from that end instead.
std::vector<AbstractArray> pad_rule(std::span<const AbstractArray> in, const Params& params) {
  expect_operands(in, 2);
  const AbstractArray &x = in[0], &value = in[1];
  if (value.ndim() != 0) rule_error(ErrorKind::Shape, "padding_value must be a scalar, got shape " + value.shape.str());
  if (value.dtype != x.dtype)
    rule_error(ErrorKind::Type, "padding_value dtype " + std::string(dtype_name(value.dtype)) + " differs from operand dtype " +
                                    std::string(dtype_name(x.dtype)));
  const IntList& config = params.get_ints("padding_config");
  if (int64_t(config.size()) != 3 * int64_t(x.ndim()))
    rule_error(ErrorKind::Shape, "padding_config " + ints_str(config) + " must have 3 entries (lo, hi, interior) per dimension");
  Shape out;
  for (int d = 0; d < x.ndim(); ++d) {
    const int64_t lo = config[size_t(3 * d)], hi = config[size_t(3 * d + 1)], interior = config[size_t(3 * d + 2)];
    const int64_t n = x.shape[size_t(d)];
    if (interior < 0) rule_error(ErrorKind::Shape, "padding_config " + ints_str(config) + " has negative interior padding");
    const int64_t size = lo + hi + n + std::max<int64_t>(n - 1, 0) * interior;
    if (size < 0)
      rule_error(ErrorKind::Shape, "padding_config " + ints_str(config) + " gives dimension " + std::to_string(d) +
                                       " a negative size " + std::to_string(size));
    out.push_back(size);
  }
  return {AbstractArray{std::move(out), x.dtype, x.weak_type && value.weak_type}};
}

void pad_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  const IntList& config = params.get_ints("padding_config");
  const int64_t n = out[0].size();
  for (int64_t o = 0; o < n; ++o) copy_element(in[1], 0, out[0], o);
  // Each operand element lands at lo + i * (interior + 1); those outside the output were cut off.
  const Shape& os = out[0].shape();
  const std::vector<int64_t> out_strides = strides_of(os);
  for_each_index(in[0].shape(), [&](int64_t i, const std::vector<int64_t>& idx) {
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      const int64_t at = config[3 * d] + idx[d] * (config[3 * d + 2] + 1);
      if (at < 0 || at >= os[d]) return;
      o += at * out_strides[d];
    }
    copy_element(in[0], i, out[0], o);
  });
}

// slice[start_indices=S limit_indices=L strides=T] x: elements S[d], S[d]+T[d], ... below L[d]
// (lax.slice: 0 <= S <= L <= size, T >= 1; absent strides mean 1).
std::vector<AbstractArray> slice_rule(std::span<const AbstractArray> in, const Params& params) {
  expect_operands(in, 1);
  const AbstractArray& x = in[0];
  const IntList& start = params.get_ints("start_indices");
  const IntList& limit = params.get_ints("limit_indices");
  check_length("start_indices", start, x.ndim());
  check_length("limit_indices", limit, x.ndim());
  IntList strides = params.has("strides") ? params.get_ints("strides") : IntList(size_t(x.ndim()), 1);
  check_length("strides", strides, x.ndim());
  Shape out;
  for (size_t d = 0; d < size_t(x.ndim()); ++d) {
    if (start[d] < 0 || start[d] > limit[d] || limit[d] > x.shape[d])
      rule_error(ErrorKind::Shape, "start_indices " + ints_str(start) + " and limit_indices " + ints_str(limit) +
                                       " must satisfy 0 <= start <= limit <= size in every dimension (dimension " +
                                       std::to_string(d) + " has size " + std::to_string(x.shape[d]) + ")");
    if (strides[d] < 1) rule_error(ErrorKind::Shape, "strides " + ints_str(strides) + " must be positive");
    out.push_back((limit[d] - start[d] + strides[d] - 1) / strides[d]);
  }
  return {AbstractArray{std::move(out), x.dtype, x.weak_type}};
}

void slice_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  const IntList& start = params.get_ints("start_indices");
  const int rank = in[0].shape().rank();
  IntList strides = params.has("strides") ? params.get_ints("strides") : IntList(size_t(rank), 1);
  const std::vector<int64_t> in_strides = strides_of(in[0].shape());
  for_each_index(out[0].shape(), [&](int64_t o, const std::vector<int64_t>& idx) {
    int64_t i = 0;
    for (size_t d = 0; d < idx.size(); ++d) i += (start[d] + idx[d] * strides[d]) * in_strides[d];
    copy_element(in[0], i, out[0], o);
  });
}

// ---- derivatives --------------------------------------------------------------------------------
// Every shape primitive only moves elements, so it is linear: its JVP applies the primitive to the
// tangents, and its transpose moves cotangents back (summing where the forward copied).
using Arrays = std::span<const Array>;
using LinearArgs = std::span<const LinearArg>;

Array zeros_of(const AbstractArray& a, SourceLoc loc) { return zeros(a.shape, a.dtype, loc); }
Array tangent_or_zeros(const Array& t, const Array& primal, SourceLoc loc) {
  return is_zero(t) ? zeros_like(primal, loc) : t;
}

Array sum_all(const Array& x, SourceLoc loc) {
  IntList axes;
  for (int d = 0; d < x.ndim(); ++d) axes.push_back(d);
  return bind1(Prim::reduce_sum, {x}, Params{{"axes", axes}}, loc);
}

// JVP of a primitive linear in all its operands: the same primitive over the tangents.
std::vector<Array> linear_jvp_impl(Prim p, Arrays x, Arrays t, const Params& params, SourceLoc loc) {
  std::vector<Array> ts;
  for (size_t i = 0; i < x.size(); ++i) ts.push_back(tangent_or_zeros(t[i], x[i], loc));
  return {bind1(p, ts, params, loc)};
}
template <Prim P>
std::vector<Array> linear_jvp(Arrays x, Arrays t, Arrays, const Params& params, SourceLoc loc) {
  return linear_jvp_impl(P, x, t, params, loc);
}

std::vector<Array> reshape_to(const Array& ct, const AbstractArray& like, SourceLoc loc) {
  if (ct.shape() == like.shape) return {ct};
  return {bind1(Prim::reshape, {ct}, Params{{"new_sizes", like.shape.dims()}}, loc)};
}

// broadcast_in_dim: sum the cotangent over the broadcast dims, then restore the size-1 dims.
std::vector<Array> broadcast_in_dim_transpose(Arrays ct, LinearArgs a, const Params& params, SourceLoc loc) {
  const IntList& bdims = params.get_ints("broadcast_dimensions");
  const AbstractArray& x = a[0].aval;
  IntList sum_axes;
  for (int d = 0; d < ct[0].ndim(); ++d) {
    auto it = std::find(bdims.begin(), bdims.end(), d);
    if (it == bdims.end() || (x.shape[size_t(it - bdims.begin())] == 1 && ct[0].shape()[size_t(d)] != 1))
      sum_axes.push_back(d);
  }
  Array r = sum_axes.empty() ? ct[0] : bind1(Prim::reduce_sum, {ct[0]}, Params{{"axes", sum_axes}}, loc);
  return reshape_to(r, x, loc);
}
std::vector<Array> reshape_transpose(Arrays ct, LinearArgs a, const Params&, SourceLoc loc) {
  return reshape_to(ct[0], a[0].aval, loc);
}
std::vector<Array> transpose_transpose(Arrays ct, LinearArgs, const Params& params, SourceLoc loc) {
  const IntList& perm = params.get_ints("permutation");
  IntList inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int64_t(i);
  return {bind1(Prim::transpose, {ct[0]}, Params{{"permutation", inverse}}, loc)};
}
std::vector<Array> rev_transpose(Arrays ct, LinearArgs, const Params& params, SourceLoc loc) {
  return {bind1(Prim::rev, {ct[0]}, params, loc)};
}
// concatenate: each linear operand gets its slice of the cotangent.
std::vector<Array> concatenate_transpose(Arrays ct, LinearArgs a, const Params& params, SourceLoc loc) {
  const int64_t dim = params.get_int("dimension");
  std::vector<Array> out;
  int64_t offset = 0;
  for (const LinearArg& arg : a) {
    const int64_t n = arg.aval.shape[size_t(dim)];
    if (arg.linear) {
      IntList start(size_t(ct[0].ndim()), 0), limit = ct[0].shape().dims();
      start[size_t(dim)] = offset;
      limit[size_t(dim)] = offset + n;
      out.push_back(bind1(Prim::slice, {ct[0]}, Params{{"start_indices", start}, {"limit_indices", limit}}, loc));
    } else {
      out.emplace_back();
    }
    offset += n;
  }
  return out;
}
// pad: the operand's cotangent is the cotangent at the positions it was copied to (undo lo/hi by
// padding with their negation, then take every (interior+1)-th element); the padding value's
// cotangent is everything else.
std::vector<Array> pad_transpose(Arrays ct, LinearArgs a, const Params& params, SourceLoc loc) {
  const IntList& config = params.get_ints("padding_config");
  const AbstractArray& x = a[0].aval;
  IntList unpad, start, limit, strides;
  for (size_t d = 0; d < size_t(x.ndim()); ++d) {
    unpad.insert(unpad.end(), {-config[3 * d], -config[3 * d + 1], 0});
    start.push_back(0);
    strides.push_back(config[3 * d + 2] + 1);
  }
  Array zero = literal_array(Literal::of_int(0, x.dtype));
  Array core = bind1(Prim::pad, {ct[0], zero}, Params{{"padding_config", unpad}}, loc);
  for (size_t d = 0; d < size_t(x.ndim()); ++d) limit.push_back(core.shape()[d]);
  Array t_x = bind1(Prim::slice, {core}, Params{{"start_indices", start}, {"limit_indices", limit}, {"strides", strides}}, loc);
  Array t_v;
  if (a[1].linear) t_v = sum_all(ct[0], loc) - sum_all(t_x, loc);
  return {a[0].linear ? t_x : Array(), t_v};
}
// slice: the cotangent goes back to the sliced positions, zeros elsewhere.
std::vector<Array> slice_transpose(Arrays ct, LinearArgs a, const Params& params, SourceLoc loc) {
  const AbstractArray& x = a[0].aval;
  const IntList& start = params.get_ints("start_indices");
  IntList strides = params.has("strides") ? params.get_ints("strides") : IntList(size_t(x.ndim()), 1);
  if (ct[0].size() == 0) return {zeros_of(x, loc)};
  IntList config;
  for (size_t d = 0; d < size_t(x.ndim()); ++d) {
    const int64_t n = ct[0].shape()[d];
    const int64_t last = start[d] + (n - 1) * strides[d];
    config.insert(config.end(), {start[d], x.shape[d] - last - 1, strides[d] - 1});
  }
  Array zero = literal_array(Literal::of_int(0, x.dtype));
  return {bind1(Prim::pad, {ct[0], zero}, Params{{"padding_config", config}}, loc)};
}

// ---- batching -----------------------------------------------------------------------------------
// Each rule keeps the batch dimension where it is whenever the primitive allows, renumbering the
// dimension params around it; only reshape (which must see the batch as its leading block) and
// operands that must agree (concatenate, pad with a batched value) move it.
using BatchedArgs = std::span<const BatchedArray>;

/// A per-example dimension list renumbered for an array whose batch dimension sits at `bd`.
IntList past_batch(const IntList& dims, int64_t bd) {
  IntList out;
  for (int64_t d : dims) out.push_back(d >= bd ? d + 1 : d);
  return out;
}
/// A per-dimension list (one entry per per-example dimension) with `value` inserted for the batch.
IntList with_batch_entry(IntList v, int64_t bd, int64_t value) {
  v.insert(v.begin() + bd, value);
  return v;
}
std::vector<BatchedArray> one(Array x, int64_t dim) { return {BatchedArray{std::move(x), dim}}; }

// The batch dim lands right after the output dims of the operand dims before it.
std::vector<BatchedArray> broadcast_in_dim_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  const int64_t bd = a[0].dim;
  const IntList& bdims = params.get_ints("broadcast_dimensions");
  const int64_t out_bd = bd == 0 ? 0 : bdims[size_t(bd - 1)] + 1;
  IntList new_bdims = with_batch_entry(past_batch(bdims, out_bd), bd, out_bd);
  IntList shape = with_batch_entry(params.get_ints("shape"), out_bd, n);
  return one(bind1(Prim::broadcast_in_dim, {a[0].value}, Params{{"shape", shape}, {"broadcast_dimensions", new_bdims}}, loc),
             out_bd);
}
// Reshape reads row-major order, so the batch must be the leading block.
std::vector<BatchedArray> reshape_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  Array x = move_batch_dim(a[0].value, a[0].dim, 0, loc);
  IntList sizes = with_batch_entry(params.get_ints("new_sizes"), 0, n);
  return one(bind1(Prim::reshape, {x}, Params{{"new_sizes", sizes}}, loc), 0);
}
// The batch dim keeps its position in the output; the permutation routes around it.
std::vector<BatchedArray> transpose_batch(BatchedArgs a, const Params& params, int64_t, SourceLoc loc) {
  const int64_t bd = a[0].dim;
  IntList perm = with_batch_entry(past_batch(params.get_ints("permutation"), bd), bd, bd);
  return one(bind1(Prim::transpose, {a[0].value}, Params{{"permutation", perm}}, loc), bd);
}
std::vector<BatchedArray> squeeze_batch(BatchedArgs a, const Params& params, int64_t, SourceLoc loc) {
  const int64_t bd = a[0].dim;
  const IntList& dims = params.get_ints("dimensions");
  const int64_t dropped_before = std::count_if(dims.begin(), dims.end(), [&](int64_t d) { return d < bd; });
  return one(bind1(Prim::squeeze, {a[0].value}, Params{{"dimensions", past_batch(dims, bd)}}, loc), bd - dropped_before);
}
std::vector<BatchedArray> rev_batch(BatchedArgs a, const Params& params, int64_t, SourceLoc loc) {
  const int64_t bd = a[0].dim;
  return one(bind1(Prim::rev, {a[0].value}, Params{{"dimensions", past_batch(params.get_ints("dimensions"), bd)}}, loc), bd);
}
// Every operand gets the batch dim where the first mapped one has it (unmapped ones broadcast).
std::vector<BatchedArray> concatenate_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  int64_t bd;
  std::vector<Array> ins = batch_like_first(a, n, loc, bd);
  const int64_t dim = params.get_int("dimension");
  return one(bind1(Prim::concatenate, ins, Params{{"dimension", dim >= bd ? dim + 1 : dim}}, loc), bd);
}
// With one padding value the batch dim just gets no padding. A batched padding value cannot be a
// pad operand (it must be a scalar): pad with zero, then select each example's value wherever the
// mask -- the operand's positions, padded with false -- says padding.
std::vector<BatchedArray> pad_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  const IntList& config = params.get_ints("padding_config");
  const int64_t bd = a[0].dim == kNotMapped ? 0 : a[0].dim;
  IntList batched_config = config;
  batched_config.insert(batched_config.begin() + 3 * bd, {0, 0, 0});
  Array x = batch_at(a[0], bd, n, loc);
  const Params pad_params{{"padding_config", batched_config}};
  if (a[1].dim == kNotMapped) return one(bind1(Prim::pad, {x, a[1].value}, pad_params, loc), bd);
  const DType dtype = x.dtype();
  Array padded = bind1(Prim::pad, {x, literal_array(Literal::of_int(0, dtype))}, pad_params, loc);
  Array inside = bind1(Prim::broadcast_in_dim, {literal_array(Literal::of_int(1, DType::bool_))},
                       Params{{"shape", x.shape().dims()}, {"broadcast_dimensions", IntList{}}}, loc);
  Array mask = bind1(Prim::pad, {inside, literal_array(Literal::of_int(0, DType::bool_))}, pad_params, loc);
  Array value = bind1(Prim::broadcast_in_dim, {a[1].value},
                      Params{{"shape", padded.shape().dims()}, {"broadcast_dimensions", IntList{bd}}}, loc);
  return one(bind1(Prim::select, {mask, padded, value}, {}, loc), bd);
}
std::vector<BatchedArray> slice_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  const int64_t bd = a[0].dim;
  Params p{{"start_indices", with_batch_entry(params.get_ints("start_indices"), bd, 0)},
           {"limit_indices", with_batch_entry(params.get_ints("limit_indices"), bd, n)}};
  if (params.has("strides")) p.set("strides", with_batch_entry(params.get_ints("strides"), bd, 1));
  return one(bind1(Prim::slice, {a[0].value}, p, loc), bd);
}
// iota has no operands, so vmap never batches it; the rule states that for completeness.
std::vector<BatchedArray> iota_batch(BatchedArgs, const Params& params, int64_t, SourceLoc loc) {
  return one(bind1(Prim::iota, std::span<const Array>{}, params, loc), kNotMapped);
}

}  // namespace

void register_shape_prims(RuleTable& t) {
  t[size_t(Prim::iota)] = {.shape = &iota_rule, .kernel = &iota_kernel};
  t[size_t(Prim::broadcast_in_dim)] = {.shape = &broadcast_in_dim_rule, .kernel = &broadcast_in_dim_kernel};
  t[size_t(Prim::reshape)] = {.shape = &reshape_rule, .kernel = &copy_kernel};
  t[size_t(Prim::transpose)] = {.shape = &transpose_rule, .kernel = &transpose_kernel};
  t[size_t(Prim::squeeze)] = {.shape = &squeeze_rule, .kernel = &copy_kernel};
  t[size_t(Prim::rev)] = {.shape = &rev_rule, .kernel = &rev_kernel};
  t[size_t(Prim::concatenate)] = {.shape = &concatenate_rule, .kernel = &concatenate_kernel};
  t[size_t(Prim::pad)] = {.shape = &pad_rule, .kernel = &pad_kernel};
  t[size_t(Prim::slice)] = {.shape = &slice_rule, .kernel = &slice_kernel};

  t[size_t(Prim::broadcast_in_dim)].jvp = &linear_jvp<Prim::broadcast_in_dim>;
  t[size_t(Prim::broadcast_in_dim)].transpose = &broadcast_in_dim_transpose;
  t[size_t(Prim::reshape)].jvp = &linear_jvp<Prim::reshape>;
  t[size_t(Prim::reshape)].transpose = &reshape_transpose;
  t[size_t(Prim::transpose)].jvp = &linear_jvp<Prim::transpose>;
  t[size_t(Prim::transpose)].transpose = &transpose_transpose;
  t[size_t(Prim::squeeze)].jvp = &linear_jvp<Prim::squeeze>;
  t[size_t(Prim::squeeze)].transpose = &reshape_transpose;
  t[size_t(Prim::rev)].jvp = &linear_jvp<Prim::rev>;
  t[size_t(Prim::rev)].transpose = &rev_transpose;
  t[size_t(Prim::concatenate)].jvp = &linear_jvp<Prim::concatenate>;
  t[size_t(Prim::concatenate)].transpose = &concatenate_transpose;
  t[size_t(Prim::pad)].jvp = &linear_jvp<Prim::pad>;
  t[size_t(Prim::pad)].transpose = &pad_transpose;
  t[size_t(Prim::slice)].jvp = &linear_jvp<Prim::slice>;
  t[size_t(Prim::slice)].transpose = &slice_transpose;
  t[size_t(Prim::iota)].zero_derivative = true;  // no operands

  t[size_t(Prim::broadcast_in_dim)].batch = &broadcast_in_dim_batch;
  t[size_t(Prim::reshape)].batch = &reshape_batch;
  t[size_t(Prim::transpose)].batch = &transpose_batch;
  t[size_t(Prim::squeeze)].batch = &squeeze_batch;
  t[size_t(Prim::rev)].batch = &rev_batch;
  t[size_t(Prim::concatenate)].batch = &concatenate_batch;
  t[size_t(Prim::pad)].batch = &pad_batch;
  t[size_t(Prim::slice)].batch = &slice_batch;
  t[size_t(Prim::iota)].batch = &iota_batch;
}

}  // namespace fluxion
