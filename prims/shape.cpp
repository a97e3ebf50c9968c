// Layout primitives, one block per primitive (the pattern of prims/unary.cpp): broadcast_in_dim,
// reshape, squeeze, transpose, rev, and iota. They move elements and never compute with them, so
// every kernel copies raw elements of itemsize(dtype) bytes and handles every dtype alike; every one
// with operands is linear, its JVP the primitive itself over the tangents (linear_jvp), its
// transpose the movement undone. Batching rules keep the batch dimension where it is whenever the
// primitive allows, renumbering the dimension params around it. (concatenate, pad and slice:
// prims/slicing.cpp.)
#include <algorithm>
#include <cstring>
#include <string>

#include "ir/dim_expr.h"
#include "ir/poly_shapes.h"
#include "lax/lax.h"
#include "prims/registry.h"
#include "prims/strides.h"

namespace fluxion {
namespace {
using namespace strides;
using Arrays = std::span<const Array>;
using LinearArgs = std::span<const LinearArg>;
using BatchedArgs = std::span<const BatchedArray>;

// The cotangent reshaped back to the operand's shape (squeeze, reshape, broadcast_in_dim).
std::vector<Array> reshape_to(const Array& ct, const AbstractArray& like) {
  if (ct.shape() == like.shape) return {ct};
  return {lax::reshape(ct, like.shape)};
}

/// A per-dimension list (one entry per per-example dimension) with `value` inserted for the batch.
IntList with_batch_entry(IntList v, int64_t bd, int64_t value) {
  v.insert(v.begin() + bd, value);
  return v;
}
std::vector<BatchedArray> one(Array x, int64_t dim) { return {BatchedArray{std::move(x), dim}}; }

void copy_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  if (const size_t n = out[0].aval->nbytes()) std::memcpy(out[0].data, in[0].data, n);
}

// ---- broadcast_in_dim[shape=S broadcast_dimensions=B] x -------------------------------------------
// Operand dim i becomes output dim B[i]; each operand dim is 1 or equal to the output dim; B is
// strictly increasing.
std::vector<AbstractArray> broadcast_in_dim_shape(std::span<const AbstractArray> in, const Params& params) {
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
    if (s < 0 && !is_symbolic_dim(s)) rule_error(ErrorKind::Shape, "negative dimension in shape");  // a symbolic dim: ir/dim_expr.h
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

// The transpose sums the cotangent over the broadcast dims, then restores the size-1 dims.
std::vector<Array> broadcast_in_dim_transpose(Arrays ct, LinearArgs a, const Params& params, SourceLoc) {
  const IntList& bdims = params.get_ints("broadcast_dimensions");
  const AbstractArray& x = a[0].aval;
  IntList sum_axes;
  for (int d = 0; d < ct[0].ndim(); ++d) {
    auto it = std::find(bdims.begin(), bdims.end(), d);
    if (it == bdims.end() || (x.shape[size_t(it - bdims.begin())] == 1 && ct[0].shape()[size_t(d)] != 1))
      sum_axes.push_back(d);
  }
  Array r = sum_axes.empty() ? ct[0] : lax::reduce_sum(ct[0], sum_axes);
  return reshape_to(r, x);
}

// The batch dim lands right after the output dims of the operand dims before it.
std::vector<BatchedArray> broadcast_in_dim_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc) {
  const int64_t bd = a[0].dim;
  const IntList& bdims = params.get_ints("broadcast_dimensions");
  const int64_t out_bd = bd == 0 ? 0 : bdims[size_t(bd - 1)] + 1;
  IntList new_bdims = with_batch_entry(dims_past_batch(bdims, out_bd), bd, out_bd);
  IntList shape = with_batch_entry(params.get_ints("shape"), out_bd, n);
  return one(lax::broadcast_in_dim(a[0].value, Shape(shape), new_bdims), out_bd);
}

// Sharding: a dimension the operand carries whole keeps its split; broadcast dimensions are whole.
std::optional<ShardPlan> broadcast_in_dim_shard(std::span<const PartitionSpec> in, std::span<const AbstractArray> avals,
                                                const Params& params, const Mesh& mesh) {
  const IntList& shape = params.get_ints("shape");
  const IntList& bdims = params.get_ints("broadcast_dimensions");
  ShardPlan plan;
  PartitionSpec x, out;
  out.dims.resize(shape.size());
  for (size_t i = 0; i < bdims.size(); ++i) {
    const bool kept = avals[0].shape[i] == shape[size_t(bdims[i])];
    x.dims.push_back(kept ? in[0].dim(i) : AxisList{});
    if (kept) out.dims[size_t(bdims[i])] = in[0].dim(i);
  }
  plan.params = params;
  plan.params.set("shape", block_shape(mesh, out, Shape(shape)).dims());
  plan.in = {x};
  plan.out = {Layout{out, {}}};
  plan.linear = 0b1;
  return plan;
}

const Registration broadcast_in_dim_registration = PrimitiveRules{
    .prim = Prim::broadcast_in_dim,
    .shape = &broadcast_in_dim_shape,
    .kernel = &broadcast_in_dim_kernel,
    .jvp = &linear_jvp<Prim::broadcast_in_dim>,
    .transpose = &broadcast_in_dim_transpose,
    .linear = kLinear,
    .batch = &broadcast_in_dim_batch,
    .shard = &broadcast_in_dim_shard,
    .gpu = GpuLowering::generic,
};

// ---- reshape[new_sizes=S] x: the same elements in row-major order under a new shape of equal size --
std::vector<AbstractArray> reshape_shape(std::span<const AbstractArray> in, const Params& params) {
  expect_operands(in, 1);
  const IntList& sizes = params.get_ints("new_sizes");
  for (int64_t s : sizes)
    if (s < 0 && !is_symbolic_dim(s)) rule_error(ErrorKind::Shape, "new_sizes " + ints_str(sizes) + " has a negative dimension");
  AbstractArray out{Shape(sizes), in[0].dtype, in[0].weak_type};
  // Over symbolic dims a size is no number to compare: a symbolic dim must stay a dim of its own.
  if (has_symbolic_dim(in) || has_symbolic_dim(std::span(&out, 1))) {
    if (std::string why = symbolic_reshape_problem(in[0], out); !why.empty()) rule_error(ErrorKind::Shape, why);
  } else if (out.size() != in[0].size()) {
    rule_error(ErrorKind::Shape, "cannot reshape " + std::to_string(in[0].size()) + " elements into new_sizes " +
                                     ints_str(sizes) + " (" + std::to_string(out.size()) + " elements)");
  }
  return {std::move(out)};
}

std::vector<Array> reshape_transpose(Arrays ct, LinearArgs a, const Params&, SourceLoc) {
  return reshape_to(ct[0], a[0].aval);
}

// Reshape reads row-major order, so the batch must be the leading block.
std::vector<BatchedArray> reshape_batch(BatchedArgs a, const Params& params, int64_t n, SourceLoc loc) {
  Array x = move_batch_dim(a[0].value, a[0].dim, 0, loc);
  return one(lax::reshape(x, Shape(with_batch_entry(params.get_ints("new_sizes"), 0, n))), 0);
}

// Sharding: dimensions fall into groups of equal size before and after (prefix products); the split
// of a group's leading dimension carries over to its leading output dimension where that divides
// (the block is then the same run of elements); other splits are gathered first.
std::optional<ShardPlan> reshape_shard(std::span<const PartitionSpec> in, std::span<const AbstractArray> avals,
                                       const Params& params, const Mesh& mesh) {
  const Shape& from = avals[0].shape;
  const IntList& to = params.get_ints("new_sizes");
  if (from.numel() == 0) return std::nullopt;
  PartitionSpec x, out;
  x.dims.resize(from.size());
  out.dims.resize(to.size());
  for (size_t i = 0, o = 0; i < from.size() || o < to.size();) {
    size_t i2 = i, o2 = o;
    int64_t pi = i2 < from.size() ? from[i2++] : 1, po = o2 < to.size() ? to[o2++] : 1;
    while (pi != po) {
      if (pi < po && i2 < from.size()) pi *= from[i2++];
      else if (po < pi && o2 < to.size()) po *= to[o2++];
      else return std::nullopt;
    }
    if (i < from.size() && o < to.size() && !in[0].dim(i).empty() && to[o] % blocks_along(mesh, in[0], i) == 0) {
      x.dims[i] = in[0].dim(i);
      out.dims[o] = in[0].dim(i);
    }
    i = i2, o = o2;
  }
  ShardPlan plan;
  plan.params = params;
  plan.params.set("new_sizes", block_shape(mesh, out, Shape(to)).dims());
  plan.in = {x};
  plan.out = {Layout{out, {}}};
  plan.linear = 0b1;
  return plan;
}

const Registration reshape_registration = PrimitiveRules{
    .prim = Prim::reshape,
    .shape = &reshape_shape,
    .kernel = &copy_kernel,
    .jvp = &linear_jvp<Prim::reshape>,
    .transpose = &reshape_transpose,
    .linear = kLinear,
    .batch = &reshape_batch,
    .shard = &reshape_shard,
    .gpu = GpuLowering::generic,
};

// ---- squeeze[dimensions=D] x: drops the listed dimensions, each of size 1 ---------------------------
std::vector<AbstractArray> squeeze_shape(std::span<const AbstractArray> in, const Params& params) {
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

std::vector<BatchedArray> squeeze_batch(BatchedArgs a, const Params& params, int64_t, SourceLoc loc) {
  const int64_t bd = a[0].dim;
  const IntList& dims = params.get_ints("dimensions");
  const int64_t dropped_before = std::count_if(dims.begin(), dims.end(), [&](int64_t d) { return d < bd; });
  return one(bind1(Prim::squeeze, {a[0].value}, Params{{"dimensions", dims_past_batch(dims, bd)}}, loc), bd - dropped_before);
}

const Registration squeeze_registration = PrimitiveRules{
    .prim = Prim::squeeze,
    .shape = &squeeze_shape,
    .kernel = &copy_kernel,
    .jvp = &linear_jvp<Prim::squeeze>,
    .transpose = &reshape_transpose,
    .linear = kLinear,
    .batch = &squeeze_batch,
    .gpu = GpuLowering::generic,
};

// ---- transpose[permutation=P] x: output dim i is operand dim P[i] ---------------------------------
std::vector<AbstractArray> transpose_shape(std::span<const AbstractArray> in, const Params& params) {
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

std::vector<Array> transpose_transpose(Arrays ct, LinearArgs, const Params& params, SourceLoc) {
  const IntList& perm = params.get_ints("permutation");
  IntList inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int64_t(i);
  return {lax::transpose(ct[0], inverse)};
}

// The batch dim keeps its position in the output; the permutation routes around it.
std::vector<BatchedArray> transpose_batch(BatchedArgs a, const Params& params, int64_t, SourceLoc) {
  const int64_t bd = a[0].dim;
  IntList perm = with_batch_entry(dims_past_batch(params.get_ints("permutation"), bd), bd, bd);
  return one(lax::transpose(a[0].value, perm), bd);
}

// Sharding: the splits travel with their dimensions.
std::optional<ShardPlan> transpose_shard(std::span<const PartitionSpec> in, std::span<const AbstractArray>,
                                         const Params& params, const Mesh&) {
  PartitionSpec out;
  for (int64_t d : params.get_ints("permutation")) out.dims.push_back(in[0].dim(size_t(d)));
  return ShardPlan{{in[0]}, {Layout{out, {}}}, params, 0b1};
}

const Registration transpose_registration = PrimitiveRules{
    .prim = Prim::transpose,
    .shape = &transpose_shape,
    .kernel = &transpose_kernel,
    .jvp = &linear_jvp<Prim::transpose>,
    .transpose = &transpose_transpose,
    .linear = kLinear,
    .batch = &transpose_batch,
    .shard = &transpose_shard,
    .gpu = GpuLowering::generic,
};

// ---- rev[dimensions=D] x: reverses the order of elements along each listed dimension ---------------
std::vector<AbstractArray> rev_shape(std::span<const AbstractArray> in, const Params& params) {
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

std::vector<Array> rev_transpose(Arrays ct, LinearArgs, const Params& params, SourceLoc loc) {
  return {bind1(Prim::rev, {ct[0]}, params, loc)};
}
std::vector<BatchedArray> rev_batch(BatchedArgs a, const Params& params, int64_t, SourceLoc loc) {
  const int64_t bd = a[0].dim;
  return one(bind1(Prim::rev, {a[0].value}, Params{{"dimensions", dims_past_batch(params.get_ints("dimensions"), bd)}}, loc), bd);
}

const Registration rev_registration = PrimitiveRules{
    .prim = Prim::rev,
    .shape = &rev_shape,
    .kernel = &rev_kernel,
    .jvp = &linear_jvp<Prim::rev>,
    .transpose = &rev_transpose,
    .linear = kLinear,
    .batch = &rev_batch,
    .gpu = GpuLowering::generic,
};

// ---- iota[dtype shape dimension]: 0, 1, ... along `dimension`, constant along the others ------------
std::vector<AbstractArray> iota_shape(std::span<const AbstractArray> in, const Params& params) {
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

// iota has no operands, so vmap never batches it; the rule states that for completeness.
std::vector<BatchedArray> iota_batch(BatchedArgs, const Params& params, int64_t, SourceLoc loc) {
  return one(bind1(Prim::iota, std::span<const Array>{}, params, loc), kNotMapped);
}

const Registration iota_registration = PrimitiveRules{
    .prim = Prim::iota,
    .shape = &iota_shape,
    .kernel = &iota_kernel,
    .zero_derivative = true,  // no operands
    .batch = &iota_batch,
    .gpu = GpuLowering::generic,
};

}  // namespace
}  // namespace fluxion
