// concatenate, pad and slice, one block per primitive (the pattern of prims/unary.cpp): the
// primitives that join, widen or cut arrays along their dimensions. Like the layout primitives
// (prims/shape.cpp) they only move elements: linear, with kernels that copy raw elements.
#include <algorithm>
#include <cstring>
#include <string>

#include "lax/lax.h"
#include "prims/registry.h"
#include "prims/strides.h"

namespace fluxion {
namespace {
using namespace strides;
using lax::operator-;
using Arrays = std::span<const Array>;
using LinearArgs = std::span<const LinearArg>;
using BatchedArgs = std::span<const BatchedArray>;

std::vector<BatchedArray> one(Array x, int64_t dim) { return {BatchedArray{std::move(x), dim}}; }
IntList strides_param(const Params& params, int rank) {
  return params.has("strides") ? params.get_ints("strides") : IntList(size_t(rank), 1);
}

// ---- concatenate[dimension=d] x0 x1 ...: joins n >= 1 operands of one dtype along d ---------------
// All other dimensions agree.
std::vector<AbstractArray> concatenate_shape(std::span<const AbstractArray> in, const Params& params) {
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

// Each linear operand gets its slice of the cotangent.
std::vector<Array> concatenate_transpose(Arrays ct, LinearArgs a, const Params& params, SourceLoc) {
  const int64_t dim = params.get_int("dimension");
  std::vector<Array> out;
  int64_t offset = 0;
  for (const LinearArg& arg : a) {
    const int64_t n = arg.aval.shape[size_t(dim)];
    if (arg.linear) {
      IntList start(size_t(ct[0].ndim()), 0), limit = ct[0].shape().dims();
      start[size_t(dim)] = offset;
      limit[size_t(dim)] = offset + n;
      out.push_back(lax::slice(ct[0], start, limit));
    } else {
      out.emplace_back();
    }
    offset += n;
  }
  return out;
}

// Every operand gets the batch dim where the first mapped one has it (unmapped ones broadcast).
std::vector<BatchedArray> concatenate_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  int64_t bd;
  std::vector<Array> ins = batch_like_first(a, n, loc, bd);
  const int64_t dim = params.get_int("dimension");
  return one(bind1(Prim::concatenate, ins, Params{{"dimension", dim >= bd ? dim + 1 : dim}}, loc), bd);
}

const Registration concatenate_registration = PrimitiveRules{
    .prim = Prim::concatenate,
    .shape = &concatenate_shape,
    .kernel = &concatenate_kernel,
    .jvp = &linear_jvp<Prim::concatenate>,
    .transpose = &concatenate_transpose,
    .linear = kLinear,
    .batch = &concatenate_batch,
    .gpu = GpuLowering::generic,
};

// ---- pad[padding_config=(lo0,hi0,interior0, lo1,hi1,interior1, ...)] x padding_value: lax.pad ------
// Per dimension, `interior` copies of the value go between neighbouring elements, then `lo` before
// and `hi` after; a negative lo/hi removes elements from that end instead.
std::vector<AbstractArray> pad_shape(std::span<const AbstractArray> in, const Params& params) {
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
    int64_t size = 0;  // lo + hi + n + (n - 1) * interior, refused where it would overflow
    if (__builtin_mul_overflow(std::max<int64_t>(n - 1, 0), interior, &size) || __builtin_add_overflow(size, n, &size) ||
        __builtin_add_overflow(size, lo, &size) || __builtin_add_overflow(size, hi, &size))
      rule_error(ErrorKind::Shape, "padding_config " + ints_str(config) + " gives dimension " + std::to_string(d) +
                                       " a size past int64");
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

// The operand's cotangent is the cotangent at the positions it was copied to (undo lo/hi by
// padding with their negation, then take every (interior+1)-th element); the padding value's
// cotangent is everything else.
std::vector<Array> pad_transpose(Arrays ct, LinearArgs a, const Params& params, SourceLoc) {
  const IntList& config = params.get_ints("padding_config");
  const AbstractArray& x = a[0].aval;
  IntList unpad, start, limit, strides;
  for (size_t d = 0; d < size_t(x.ndim()); ++d) {
    unpad.insert(unpad.end(), {-config[3 * d], -config[3 * d + 1], 0});
    start.push_back(0);
    strides.push_back(config[3 * d + 2] + 1);
  }
  Array zero = literal_array(Literal::of_int(0, x.dtype));
  Array core = lax::pad(ct[0], zero, unpad);
  for (size_t d = 0; d < size_t(x.ndim()); ++d) limit.push_back(core.shape()[d]);
  Array t_x = lax::slice(core, start, limit, strides);
  Array t_v;
  if (a[1].linear) t_v = lax::reduce_sum_all(ct[0]) - lax::reduce_sum_all(t_x);
  return {a[0].linear ? t_x : Array(), t_v};
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
  if (a[1].dim == kNotMapped) return one(lax::pad(x, a[1].value, batched_config), bd);
  const DType dtype = x.dtype();
  Array padded = lax::pad(x, literal_array(Literal::of_int(0, dtype)), batched_config);
  Array inside = lax::broadcast_in_dim(literal_array(Literal::of_int(1, DType::bool_)), x.shape(), {});
  Array mask = lax::pad(inside, literal_array(Literal::of_int(0, DType::bool_)), batched_config);
  Array value = lax::broadcast_in_dim(a[1].value, padded.shape(), {bd});
  return one(lax::select(mask, padded, value), bd);
}

const Registration pad_registration = PrimitiveRules{
    .prim = Prim::pad,
    .shape = &pad_shape,
    .kernel = &pad_kernel,
    .jvp = &linear_jvp<Prim::pad>,
    .transpose = &pad_transpose,
    .linear = kLinear,
    .batch = &pad_batch,
    .gpu = GpuLowering::generic,
};

// ---- slice[start_indices=S limit_indices=L strides=T] x: elements S[d], S[d]+T[d], ... below L[d] --
// (lax.slice: 0 <= S <= L <= size, T >= 1; absent strides mean 1).
std::vector<AbstractArray> slice_shape(std::span<const AbstractArray> in, const Params& params) {
  expect_operands(in, 1);
  const AbstractArray& x = in[0];
  const IntList& start = params.get_ints("start_indices");
  const IntList& limit = params.get_ints("limit_indices");
  check_length("start_indices", start, x.ndim());
  check_length("limit_indices", limit, x.ndim());
  const IntList strides = strides_param(params, x.ndim());
  check_length("strides", strides, x.ndim());
  Shape out;
  for (size_t d = 0; d < size_t(x.ndim()); ++d) {
    if (start[d] < 0 || start[d] > limit[d] || limit[d] > x.shape[d])
      rule_error(ErrorKind::Shape, "start_indices " + ints_str(start) + " and limit_indices " + ints_str(limit) +
                                       " must satisfy 0 <= start <= limit <= size in every dimension (dimension " +
                                       std::to_string(d) + " has size " + std::to_string(x.shape[d]) + ")");
    if (strides[d] < 1) rule_error(ErrorKind::Shape, "strides " + ints_str(strides) + " must be positive");
    const int64_t span = limit[d] - start[d];  // ceil(span / stride), without overflow for a huge stride
    out.push_back(span == 0 ? 0 : 1 + (span - 1) / strides[d]);
  }
  return {AbstractArray{std::move(out), x.dtype, x.weak_type}};
}

void slice_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  const IntList& start = params.get_ints("start_indices");
  const IntList strides = strides_param(params, in[0].shape().rank());
  const std::vector<int64_t> in_strides = strides_of(in[0].shape());
  for_each_index(out[0].shape(), [&](int64_t o, const std::vector<int64_t>& idx) {
    int64_t i = 0;
    for (size_t d = 0; d < idx.size(); ++d) i += (start[d] + idx[d] * strides[d]) * in_strides[d];
    copy_element(in[0], i, out[0], o);
  });
}

// The cotangent goes back to the sliced positions, zeros elsewhere.
std::vector<Array> slice_transpose(Arrays ct, LinearArgs a, const Params& params, SourceLoc loc) {
  const AbstractArray& x = a[0].aval;
  const IntList& start = params.get_ints("start_indices");
  const IntList strides = strides_param(params, x.ndim());
  if (ct[0].size() == 0) return {lax::zeros(x, loc)};
  IntList config;
  for (size_t d = 0; d < size_t(x.ndim()); ++d) {
    const int64_t n = ct[0].shape()[d];
    const int64_t last = start[d] + (n - 1) * strides[d];
    config.insert(config.end(), {start[d], x.shape[d] - last - 1, strides[d] - 1});
  }
  return {lax::pad(ct[0], literal_array(Literal::of_int(0, x.dtype)), config)};
}

std::vector<BatchedArray> slice_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  const int64_t bd = a[0].dim;
  auto with_batch = [&](IntList v, int64_t value) {
    v.insert(v.begin() + bd, value);
    return v;
  };
  Params p{{"start_indices", with_batch(params.get_ints("start_indices"), 0)},
           {"limit_indices", with_batch(params.get_ints("limit_indices"), n)}};
  if (params.has("strides")) p.set("strides", with_batch(params.get_ints("strides"), 1));
  return one(bind1(Prim::slice, {a[0].value}, p, loc), bd);
}

const Registration slice_registration = PrimitiveRules{
    .prim = Prim::slice,
    .shape = &slice_shape,
    .kernel = &slice_kernel,
    .jvp = &linear_jvp<Prim::slice>,
    .transpose = &slice_transpose,
    .linear = kLinear,
    .batch = &slice_batch,
    .gpu = GpuLowering::generic,
};

}  // namespace
}  // namespace fluxion
