// Indexing primitives: dynamic_slice dynamic_update_slice gather scatter scatter_add.
//
// Index operands may be of any integer dtype; kernels read them as int64.
//
// dynamic_slice[slice_sizes=Z] x i0 i1 ...: one 0-d integer index per dimension; the window of
//   sizes Z starting at (i0, i1, ...) with each start clamped to [0, size - Z[d]] so the window
//   always fits (lax.dynamic_slice).
// dynamic_update_slice x update i0 i1 ...: x with the window at the clamped starts replaced by
//   `update` (same dtype and rank as x, no larger in any dimension).
//
// gather / scatter / scatter_add cover what numpy's take and JAX's x.at[...].set/add along one
// axis need -- not lax's general dimension-number form:
//   gather[axis=a] x indices: out[o..., j..., k...] = x[o..., clip(indices[j...]), k...], shape
//     x.shape[:a] + indices.shape + x.shape[a+1:]. Out-of-range indices are clamped to
//     [0, size-1]: that is what JAX's x[i] does for retrieval, and unlike fill mode it needs no
//     fill value, so it is defined for every dtype (integers and bool have no NaN).
//   scatter[axis=a] x indices updates: x with x[o..., indices[j...], k...] = updates[o..., j..., k...];
//   scatter_add: the same with +=, so duplicate indices accumulate (bool adds as logical or).
//     updates.shape = x.shape[:a] + indices.shape + x.shape[a+1:]. Out-of-range indices (negative
//     or >= size) are dropped, which is JAX's default for scatter. For scatter with duplicate
//     indices the update that comes last in row-major order of `indices` wins.
// batch_dims=n (default 0; absent means 0): the first n dimensions of x and of indices are batch
//   dimensions of equal size, paired elementwise (n <= axis): gather[axis=a, batch_dims=n] gives
//   out[b..., o..., j..., k...] = x[b..., o..., clip(indices[b..., j...]), k...] of shape
//   x.shape[:a] + indices.shape[n:] + x.shape[a+1:]; scatter/scatter_add mirror it (updates of that
//   shape). This is what vmap needs when both x and the indices are batched.
// Negative indices are not wrapped here: the numpy-style API (api/indexing.h) wraps them first.
#include <algorithm>
#include <cstring>
#include <string>

#include "lax/lax.h"
#include "prims/registry.h"
#include "prims/strides.h"

namespace fluxion {
namespace {
using namespace strides;
using Arrays = std::span<const Array>;
using LinearArgs = std::span<const LinearArg>;
using BatchedArgs = std::span<const BatchedArray>;

void check_index(const AbstractArray& a, const char* what) {
  if (!is_integer(a.dtype))
    rule_error(ErrorKind::Type, std::string(what) + " must have an integer dtype, got " + std::string(dtype_name(a.dtype)));
}

int64_t load_index(const View& v, int64_t i) {
  return dispatch_dtype(v.dtype(), [&](auto z) -> int64_t {
    using T = decltype(z);
    if constexpr (std::is_integral_v<T>) return int64_t(v.as<const T>()[i]);
    else return 0;  // unreachable: shape rules admit only integer indices
  });
}

int64_t batch_dims_of(const Params& params) { return params.has("batch_dims") ? params.get_int("batch_dims") : 0; }
// gather/scatter params for an axis and a number of paired batch dimensions (absent when 0).
Params axis_params(int64_t axis, int64_t batch_dims) {
  Params p{{"axis", axis}};
  if (batch_dims) p = Params{{"axis", axis}, {"batch_dims", batch_dims}};
  return p;
}

// A tangent, or zeros of its primal's type for a symbolic zero.
Array or_zeros(const Array& t, const Array& primal) { return is_zero(t) ? lax::zeros_like(primal) : t; }

std::vector<Array> values(LinearArgs a, size_t first) {
  std::vector<Array> v;
  for (size_t i = first; i < a.size(); ++i) v.push_back(a[i].value);
  return v;
}

Array zero_start() { return literal_array(Literal::of_int(0, DType::int32)); }

bool any_mapped(std::span<const BatchedArray> a) {
  return std::any_of(a.begin(), a.end(), [](const BatchedArray& b) { return b.dim != kNotMapped; });
}

// ---- dynamic_slice[slice_sizes=Z] x i0 i1 ... : linear in x -----------------------------------------
// The trailing operands from `first` on are 0-d integer start indices, one per dimension of x.
void check_start_indices(std::span<const AbstractArray> in, size_t first, const AbstractArray& x) {
  if (in.size() - first != size_t(x.ndim()))
    rule_error(ErrorKind::Shape, "expects one start index per dimension (" + std::to_string(x.ndim()) + "), got " +
                                     std::to_string(in.size() - first));
  for (size_t i = first; i < in.size(); ++i) {
    check_index(in[i], "start indices");
    if (in[i].ndim() != 0) rule_error(ErrorKind::Shape, "start indices must be scalars, got shape " + in[i].shape.str());
  }
}

// Starts clamped so that a window of `window` fits in `shape`.
std::vector<int64_t> clamped_starts(std::span<const View> in, size_t first, const Shape& shape, const Shape& window) {
  std::vector<int64_t> starts;
  for (size_t d = 0; d < shape.size(); ++d)
    starts.push_back(std::clamp<int64_t>(load_index(in[first + d], 0), 0, shape[d] - window[d]));
  return starts;
}

std::vector<AbstractArray> dynamic_slice_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.empty()) rule_error(ErrorKind::Type, "expects an operand and its start indices");
  const AbstractArray& x = in[0];
  check_start_indices(in, 1, x);
  const IntList& sizes = params.get_ints("slice_sizes");
  if (int(sizes.size()) != x.ndim())
    rule_error(ErrorKind::Shape, "slice_sizes " + ints_str(sizes) + " must have one entry per dimension (rank " +
                                     std::to_string(x.ndim()) + ")");
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] < 0 || sizes[d] > x.shape[d])
      rule_error(ErrorKind::Shape, "slice_sizes " + ints_str(sizes) + " must lie in [0, size] of the operand " + x.shape.str());
  return {AbstractArray{Shape(sizes), x.dtype, x.weak_type}};
}

void dynamic_slice_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  const Shape& xs = in[0].shape();
  const Shape& window = out[0].shape();
  for_each_in_window(xs, window, clamped_starts(in, 1, xs, window),
                     [&](int64_t w, int64_t off) { copy_element(in[0], off, out[0], w); });
}

std::vector<Array> dynamic_slice_jvp(Arrays x, Arrays t, Arrays, const Params& params, SourceLoc loc) {
  std::vector<Array> ins(x.begin(), x.end());
  ins[0] = t[0];
  return {bind1(Prim::dynamic_slice, ins, params, loc)};
}
std::vector<Array> dynamic_slice_transpose(Arrays ct, LinearArgs a, const Params&, SourceLoc loc) {
  std::vector<Array> ins{lax::zeros(a[0].aval, loc), ct[0]};
  for (const Array& i : values(a, 1)) ins.push_back(i);
  std::vector<Array> out(a.size());
  out[0] = bind1(Prim::dynamic_update_slice, ins, {}, loc);
  return out;
}

// With batched starts the slice becomes gathers with batch_dims = 1 over per-example windows of
// indices, clamped exactly as the unbatched primitive clamps.

// The indices a window of `size` at the batched 0-d `start` covers in an axis of n, as
// [batch, size] int64: clamp(start, 0, n - size) + iota(size) -- dynamic_slice's clamping.
Array window_indices(const Array& start, int64_t n, int64_t size) {
  Array first = lax::convert(start, DType::int64);
  first = lax::min(lax::max(first, lax::scalar_like(first, 0)), lax::scalar_like(first, double(n - size)));
  first = lax::broadcast_in_dim(first, Shape{first.shape()[0], size}, {0});
  return lax::add(first, lax::iota(DType::int64, Shape{first.shape()[0], size}, 1));
}

std::vector<BatchedArray> dynamic_slice_batch(std::span<const BatchedArray> args, const Params& params, int64_t size,
                                              SourceLoc loc) {
  const IntList& sizes = params.get_ints("slice_sizes");
  const BatchedArray& x = args[0];
  std::span<const BatchedArray> starts = args.subspan(1);
  if (!any_mapped(starts)) {
    // Only x is batched: its batch dimension is sliced whole.
    std::vector<Array> ins{x.value};
    for (const BatchedArray& s : starts) ins.push_back(s.value);
    ins.insert(ins.begin() + 1 + x.dim, zero_start());
    IntList window = sizes;
    window.insert(window.begin() + x.dim, size);
    return {{bind1(Prim::dynamic_slice, ins, Params{{"slice_sizes", window}}, loc), x.dim}};
  }
  // Batch first; the axes with unbatched starts are sliced once, then each axis with batched
  // starts is gathered per batch element.
  Array v = batch_at(x, 0, size, loc);
  const Shape full = v.shape();
  std::vector<Array> ins{v, zero_start()};
  IntList window{size};
  bool slices = false;
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t n = v.shape()[k + 1];
    const bool mapped = starts[k].dim != kNotMapped;
    ins.push_back(mapped ? zero_start() : starts[k].value);
    window.push_back(mapped ? n : sizes[k]);
    slices = slices || window.back() != n;
  }
  if (slices) v = bind1(Prim::dynamic_slice, ins, Params{{"slice_sizes", window}}, loc);
  for (size_t k = 0; k < starts.size(); ++k)
    if (starts[k].dim != kNotMapped)
      v = bind1(Prim::gather, {v, window_indices(starts[k].value, full[k + 1], sizes[k])},
                axis_params(int64_t(k) + 1, 1), loc);
  return {{v, 0}};
}

const Registration dynamic_slice_registration = PrimitiveRules{
    .prim = Prim::dynamic_slice,
    .shape = &dynamic_slice_shape,
    .kernel = &dynamic_slice_kernel,
    .jvp = &dynamic_slice_jvp,
    .transpose = &dynamic_slice_transpose,
    .linear = {.operands = 0b1},
    .batch = &dynamic_slice_batch,
    .gpu = GpuLowering::generic,
};

// ---- dynamic_update_slice x update i0 i1 ...: linear in (x, update) jointly -------------------------
std::vector<AbstractArray> dynamic_update_slice_shape(std::span<const AbstractArray> in, const Params&) {
  if (in.size() < 2) rule_error(ErrorKind::Type, "expects an operand, an update and start indices");
  const AbstractArray &x = in[0], &update = in[1];
  if (update.dtype != x.dtype)
    rule_error(ErrorKind::Type, "update dtype " + std::string(dtype_name(update.dtype)) + " differs from operand dtype " +
                                    std::string(dtype_name(x.dtype)));
  bool fits = update.ndim() == x.ndim();
  for (int d = 0; fits && d < x.ndim(); ++d) fits = update.shape[size_t(d)] <= x.shape[size_t(d)];
  if (!fits)
    rule_error(ErrorKind::Shape, "update of shape " + update.shape.str() + " must have the operand's rank and fit in " +
                                     x.shape.str());
  check_start_indices(in, 2, x);
  return {x};
}

void dynamic_update_slice_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  if (const size_t n = out[0].aval->nbytes()) std::memcpy(out[0].data, in[0].data, n);
  const Shape& xs = in[0].shape();
  const Shape& window = in[1].shape();
  for_each_in_window(xs, window, clamped_starts(in, 2, xs, window),
                     [&](int64_t w, int64_t off) { copy_element(in[1], w, out[0], off); });
}

std::vector<Array> dynamic_update_slice_jvp(Arrays x, Arrays t, Arrays, const Params& params, SourceLoc loc) {
  std::vector<Array> ins(x.begin(), x.end());
  ins[0] = or_zeros(t[0], x[0]);
  ins[1] = or_zeros(t[1], x[1]);
  return {bind1(Prim::dynamic_update_slice, ins, params, loc)};
}
std::vector<Array> dynamic_update_slice_transpose(Arrays ct, LinearArgs a, const Params&, SourceLoc loc) {
  std::vector<Array> idx = values(a, 2);
  std::vector<Array> out(a.size());
  if (a[0].linear) {
    std::vector<Array> ins{ct[0], lax::zeros(a[1].aval, loc)};
    ins.insert(ins.end(), idx.begin(), idx.end());
    out[0] = bind1(Prim::dynamic_update_slice, ins, {}, loc);
  }
  if (a[1].linear) {
    std::vector<Array> ins{ct[0]};
    ins.insert(ins.end(), idx.begin(), idx.end());
    out[1] = bind1(Prim::dynamic_slice, ins, Params{{"slice_sizes", a[1].aval.shape.dims()}}, loc);
  }
  return out;
}

// Writes u ([batch, ...]) into x ([batch, ...]) at per-axis starts, batched ones at dim 0. Each
// axis with batched starts is handled by gathering the rows the window covers, updating them, and
// scattering them back; what is left is one dynamic_update_slice with unbatched starts.
Array update_window(const Array& x, const Array& u, std::vector<BatchedArray> starts, SourceLoc loc) {
  for (size_t k = 0; k < starts.size(); ++k) {
    if (starts[k].dim == kNotMapped) continue;
    Array idx = window_indices(starts[k].value, x.shape()[k + 1], u.shape()[k + 1]);
    starts[k] = {zero_start(), kNotMapped};
    const Params p = axis_params(int64_t(k) + 1, 1);
    Array rows = update_window(bind1(Prim::gather, {x, idx}, p, loc), u, std::move(starts), loc);
    return bind1(Prim::scatter, {x, idx, rows}, p, loc);
  }
  if (x.shape() == u.shape()) return u;
  std::vector<Array> ins{x, u, zero_start()};
  for (const BatchedArray& s : starts) ins.push_back(s.value);
  return bind1(Prim::dynamic_update_slice, ins, {}, loc);
}

std::vector<BatchedArray> dynamic_update_slice_batch(std::span<const BatchedArray> args, const Params&, int64_t size,
                                                     SourceLoc loc) {
  const BatchedArray &x = args[0], &u = args[1];
  std::span<const BatchedArray> starts = args.subspan(2);
  if (!any_mapped(starts)) {
    const int64_t d = x.dim != kNotMapped ? x.dim : u.dim;
    std::vector<Array> ins{batch_at(x, d, size, loc), batch_at(u, d, size, loc)};
    for (const BatchedArray& s : starts) ins.push_back(s.value);
    ins.insert(ins.begin() + 2 + d, zero_start());
    return {{bind1(Prim::dynamic_update_slice, ins, {}, loc), d}};
  }
  std::vector<BatchedArray> s(starts.begin(), starts.end());
  return {{update_window(batch_at(x, 0, size, loc), batch_at(u, 0, size, loc), std::move(s), loc), 0}};
}

const Registration dynamic_update_slice_registration = PrimitiveRules{
    .prim = Prim::dynamic_update_slice,
    .shape = &dynamic_update_slice_shape,
    .kernel = &dynamic_update_slice_kernel,
    .jvp = &dynamic_update_slice_jvp,
    .transpose = &dynamic_update_slice_transpose,
    .linear = {.operands = 0b11},
    .batch = &dynamic_update_slice_batch,
    .gpu = GpuLowering::generic,
};

// ---- gather, scatter, scatter_add: what take and x.at[...] need along one axis ------------------------

// x.shape[:a] + indices.shape[n:] + x.shape[a+1:] (n = batch_dims; x.shape[:n] == indices.shape[:n]).
Shape gathered_shape(const AbstractArray& x, const AbstractArray& indices, int64_t axis, int64_t batch_dims) {
  Shape s;
  for (int64_t d = 0; d < axis; ++d) s.push_back(x.shape[size_t(d)]);
  for (int d = int(batch_dims); d < indices.ndim(); ++d) s.push_back(indices.shape[size_t(d)]);
  for (int d = int(axis) + 1; d < x.ndim(); ++d) s.push_back(x.shape[size_t(d)]);
  return s;
}

// Checks axis and batch_dims against x and indices; returns {axis, batch_dims}.
std::pair<int64_t, int64_t> checked_axes(const Params& params, const AbstractArray& x, const AbstractArray& indices) {
  const int64_t axis = params.get_int("axis"), n = batch_dims_of(params);
  if (axis < 0 || axis >= x.ndim())
    rule_error(ErrorKind::Shape, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(x.ndim()));
  if (n < 0 || n > axis || n > indices.ndim())
    rule_error(ErrorKind::Shape, "batch_dims " + std::to_string(n) + " must lie in [0, min(axis " + std::to_string(axis) +
                                     ", indices rank " + std::to_string(indices.ndim()) + ")]");
  for (size_t d = 0; d < size_t(n); ++d)
    if (x.shape[d] != indices.shape[d])
      rule_error(ErrorKind::Shape, "the first " + std::to_string(n) + " (batch) dimensions of x " + x.shape.str() +
                                       " and indices " + indices.shape.str() + " must agree");
  return {axis, n};
}

// The loops of gather and scatter see x as [batch, outer, n, inner], indices as [batch, m] and the
// gathered/updates array as [batch, outer, m, inner], where batch = prod(x.shape[:batch_dims]),
// n = x.shape[axis] and m = prod(indices.shape[batch_dims:]).
struct AxisLayout {
  int64_t batch = 1, outer = 1, n = 0, inner = 1, m = 1;
  AxisLayout(const Shape& x, const Shape& indices, const Params& params) {
    const int64_t axis = params.get_int("axis"), nb = batch_dims_of(params);
    n = x[size_t(axis)];
    for (int64_t d = 0; d < nb; ++d) batch *= x[size_t(d)];
    for (int64_t d = nb; d < axis; ++d) outer *= x[size_t(d)];
    for (int d = int(axis) + 1; d < x.rank(); ++d) inner *= x[size_t(d)];
    for (int d = int(nb); d < indices.rank(); ++d) m *= indices[size_t(d)];
  }
};


// The indices as the forward pass used them: gather clamps into [0, n).
Array clamped_indices(const Array& idx, int64_t n) {
  return lax::min(lax::max(idx, lax::scalar_like(idx, 0)), lax::scalar_like(idx, double(std::max<int64_t>(n - 1, 0))));
}
// Broadcasts a mask over the indices' shape to the shape of the updates/gathered values.
// The mask's first batch_dims dimensions are those of `like`; the rest sit at `axis`.
Array mask_like(const Array& mask, const AbstractArray& like, const Params& params, SourceLoc loc) {
  const int64_t axis = params.get_int("axis"), nb = batch_dims_of(params);
  IntList dims;
  for (int64_t d = 0; d < mask.ndim(); ++d) dims.push_back(d < nb ? d : axis + d - nb);
  return bind1(Prim::broadcast_in_dim, {mask}, Params{{"shape", like.shape.dims()}, {"broadcast_dimensions", dims}}, loc);
}

// gather/scatter batch by folding the vmap dimension into the operands: only when both x and the
// indices are batched does it become one more paired batch dimension (batch_dims + 1, both moved
// to the front); otherwise it rides along as an ordinary dimension of whichever operand has it.

// ---- gather(x, indices): linear in x; the transpose adds each cotangent where it was read from ----
std::vector<AbstractArray> gather_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 2) rule_error(ErrorKind::Type, "expects 2 operands (x, indices)");
  const AbstractArray &x = in[0], &indices = in[1];
  check_index(indices, "indices");
  const auto [axis, nb] = checked_axes(params, x, indices);
  if (x.shape[size_t(axis)] == 0 && indices.size() > 0)
    rule_error(ErrorKind::Shape, "cannot take indices from axis " + std::to_string(axis) + " of size 0");
  return {AbstractArray{gathered_shape(x, indices, axis, nb), x.dtype, x.weak_type}};
}

void gather_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  const AxisLayout l(in[0].shape(), in[1].shape(), params);
  const size_t isz = itemsize(in[0].dtype()), block = size_t(l.inner) * isz;
  const char* src = static_cast<const char*>(in[0].data);
  char* dst = static_cast<char*>(out[0].data);
  for (int64_t b = 0; b < l.batch; ++b)
    for (int64_t o = 0; o < l.outer; ++o)
      for (int64_t j = 0; j < l.m; ++j) {
        const int64_t i = std::clamp<int64_t>(load_index(in[1], b * l.m + j), 0, l.n - 1);
        const int64_t bo = b * l.outer + o;
        std::memcpy(dst + size_t(bo * l.m + j) * block, src + size_t(bo * l.n + i) * block, block);
      }
}

std::vector<Array> gather_jvp(Arrays x, Arrays t, Arrays, const Params& params, SourceLoc loc) {
  return {bind1(Prim::gather, {t[0], x[1]}, params, loc)};
}
std::vector<Array> gather_transpose(Arrays ct, LinearArgs a, const Params& params, SourceLoc loc) {
  const int64_t axis = params.get_int("axis");
  Array idx = clamped_indices(a[1].value, a[0].aval.shape[size_t(axis)]);
  return {bind1(Prim::scatter_add, {lax::zeros(a[0].aval, loc), idx, ct[0]}, params, loc), Array()};
}

std::vector<BatchedArray> gather_batch(std::span<const BatchedArray> args, const Params& params, int64_t,
                                       SourceLoc loc) {
  const int64_t axis = params.get_int("axis"), nb = batch_dims_of(params);
  const BatchedArray &x = args[0], &idx = args[1];
  if (x.dim != kNotMapped && idx.dim != kNotMapped) {
    Array xv = move_batch_dim(x.value, x.dim, 0, loc), iv = move_batch_dim(idx.value, idx.dim, 0, loc);
    return {{bind1(Prim::gather, {xv, iv}, axis_params(axis + 1, nb + 1), loc), 0}};
  }
  if (x.dim != kNotMapped) {
    // The vmap dimension may not sit among x's paired batch dimensions: it goes right after them.
    const int64_t d = std::max(x.dim, nb);
    const int64_t a = axis + (d <= axis ? 1 : 0);
    Array out = bind1(Prim::gather, {move_batch_dim(x.value, x.dim, d, loc), idx.value}, axis_params(a, nb), loc);
    return {{out, d < a ? d : d - 1 + (idx.value.ndim() - nb)}};
  }
  const int64_t d = std::max(idx.dim, nb);
  Array out = bind1(Prim::gather, {x.value, move_batch_dim(idx.value, idx.dim, d, loc)}, axis_params(axis, nb), loc);
  return {{out, axis + d - nb}};
}

const Registration gather_registration = PrimitiveRules{
    .prim = Prim::gather,
    .shape = &gather_shape,
    .kernel = &gather_kernel,
    .jvp = &gather_jvp,
    .transpose = &gather_transpose,
    .linear = {.operands = 0b1},
    .batch = &gather_batch,
    .gpu = GpuLowering::generic,
};

// ---- scatter, scatter_add (x, indices, updates): linear in (x, updates) jointly -----------------------
std::vector<AbstractArray> scatter_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 3) rule_error(ErrorKind::Type, "expects 3 operands (x, indices, updates)");
  const AbstractArray &x = in[0], &indices = in[1], &updates = in[2];
  check_index(indices, "indices");
  const auto [axis, nb] = checked_axes(params, x, indices);
  if (updates.dtype != x.dtype)
    rule_error(ErrorKind::Type, "updates dtype " + std::string(dtype_name(updates.dtype)) + " differs from operand dtype " +
                                    std::string(dtype_name(x.dtype)));
  const Shape expected = gathered_shape(x, indices, axis, nb);
  if (!(updates.shape == expected))
    rule_error(ErrorKind::Shape,
               "updates must have shape x.shape[:axis] + indices.shape[batch_dims:] + x.shape[axis+1:] = " +
                   expected.str() + ", got " + updates.shape.str());
  return {x};
}

// Applies `combine(dst_element, src_element)` for every in-range index; drops the others.
template <class Combine>
void scatter_loop(std::span<const View> in, std::span<const View> out, const Params& params, Combine combine) {
  if (const size_t n = out[0].aval->nbytes()) std::memcpy(out[0].data, in[0].data, n);
  const AxisLayout l(in[0].shape(), in[1].shape(), params);
  for (int64_t b = 0; b < l.batch; ++b)
    for (int64_t o = 0; o < l.outer; ++o)
      for (int64_t j = 0; j < l.m; ++j) {
        const int64_t i = load_index(in[1], b * l.m + j);
        if (i < 0 || i >= l.n) continue;
        const int64_t bo = b * l.outer + o;
        for (int64_t k = 0; k < l.inner; ++k) combine((bo * l.n + i) * l.inner + k, (bo * l.m + j) * l.inner + k);
      }
}

void scatter_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  scatter_loop(in, out, params, [&](int64_t dst, int64_t src) { copy_element(in[2], src, out[0], dst); });
}

void scatter_add_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  dispatch_dtype_complex(out[0].dtype(), [&](auto z) {
    using T = decltype(z);
    using C = compute_t<T>;
    T* o = out[0].as<T>();
    const T* u = in[2].as<const T>();
    scatter_loop(in, out, params, [&](int64_t dst, int64_t src) {
      if constexpr (std::is_same_v<T, bool>) o[dst] = o[dst] || u[src];
      else o[dst] = static_cast<T>(static_cast<C>(static_cast<C>(o[dst]) + static_cast<C>(u[src])));
    });
  });
}

// scatter_add / scatter (x, idx, updates): linear in (x, updates) jointly. Out-of-range indices
// were dropped, so their updates get a zero cotangent.
template <Prim P>
std::vector<Array> scatter_jvp(Arrays x, Arrays t, Arrays, const Params& params, SourceLoc loc) {
  return {bind1(P, {or_zeros(t[0], x[0]), x[1], or_zeros(t[2], x[2])}, params, loc)};
}
Array updates_cotangent(const Array& ct, LinearArgs a, const Params& params, SourceLoc loc) {
  const int64_t axis = params.get_int("axis");
  const int64_t n = a[0].aval.shape[size_t(axis)];
  const Array& idx = a[1].value;
  Array read = bind1(Prim::gather, {ct, idx}, params, loc);
  Array in_range = lax::bitwise_and(lax::ge(idx, lax::scalar_like(idx, 0)), lax::lt(idx, lax::scalar_like(idx, double(n))));
  return lax::select(mask_like(in_range, a[2].aval, params, loc), read, lax::scalar_like(read, 0));
}
std::vector<Array> scatter_add_transpose(Arrays ct, LinearArgs a, const Params& params, SourceLoc loc) {
  return {a[0].linear ? ct[0] : Array(), Array(), a[2].linear ? updates_cotangent(ct[0], a, params, loc) : Array()};
}
// scatter overwrites: x's cotangent is zero where an update landed; each update gets the
// cotangent of its destination (exact for unique indices; with duplicates every writer gets it).
std::vector<Array> scatter_transpose(Arrays ct, LinearArgs a, const Params& params, SourceLoc loc) {
  Array t_x;
  if (a[0].linear) t_x = bind1(Prim::scatter, {ct[0], a[1].value, lax::zeros(a[2].aval, loc)}, params, loc);
  return {t_x, Array(), a[2].linear ? updates_cotangent(ct[0], a, params, loc) : Array()};
}

template <Prim P>
std::vector<BatchedArray> scatter_batch(std::span<const BatchedArray> args, const Params& params, int64_t size,
                                        SourceLoc loc) {
  const int64_t axis = params.get_int("axis"), nb = batch_dims_of(params);
  const BatchedArray &x = args[0], &idx = args[1], &upd = args[2];
  if (idx.dim != kNotMapped) {
    Array iv = move_batch_dim(idx.value, idx.dim, 0, loc);
    Array out = bind1(P, {batch_at(x, 0, size, loc), iv, batch_at(upd, 0, size, loc)}, axis_params(axis + 1, nb + 1), loc);
    return {{out, 0}};
  }
  // Unbatched indices: x and updates share the vmap dimension as an ordinary one (an unbatched x
  // must be broadcast: every batch element gets its own result). Its position in x is taken from
  // whichever operand has it, so that at most one of them moves.
  const int64_t r = idx.value.ndim() - nb;  // index dimensions in the updates
  int64_t d = x.dim;
  if (d == kNotMapped) d = upd.dim <= axis ? upd.dim : upd.dim >= axis + r ? upd.dim - r + 1 : axis;
  d = std::max(d, nb);
  const int64_t a = axis + (d <= axis ? 1 : 0);
  const int64_t ud = d < a ? d : d - 1 + r;
  Array out = bind1(P, {batch_at(x, d, size, loc), idx.value, batch_at(upd, ud, size, loc)}, axis_params(a, nb), loc);
  return {{out, d}};
}

const Registration scatter_registration = PrimitiveRules{
    .prim = Prim::scatter,
    .shape = &scatter_shape,
    .kernel = &scatter_kernel,
    .jvp = &scatter_jvp<Prim::scatter>,
    .transpose = &scatter_transpose,
    .linear = {.operands = 0b101},
    .batch = &scatter_batch<Prim::scatter>,
    .gpu = GpuLowering::generic,
};
const Registration scatter_add_registration = PrimitiveRules{
    .prim = Prim::scatter_add,
    .shape = &scatter_shape,
    .kernel = &scatter_add_kernel,
    .jvp = &scatter_jvp<Prim::scatter_add>,
    .transpose = &scatter_add_transpose,
    .linear = {.operands = 0b101},
    .batch = &scatter_batch<Prim::scatter_add>,
    .gpu = GpuLowering::generic,
};

}  // namespace
}  // namespace fluxion
