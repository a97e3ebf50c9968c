#include "transforms/jacobian.h"

#include "api/creation.h"
#include "api/elementwise.h"
#include "api/operands.h"
#include "api/shape_ops.h"
#include "transforms/vmap_api.h"

namespace fluxion::detail {
namespace {
Shape concat_shapes(const Shape& a, const Shape& b) {
  Shape s = a;
  for (int64_t d : b) s.push_back(d);
  return s;
}

// Rows [offset, offset + aval.size()) of the identity of size `total`, shaped [total] + aval.shape:
// the basis vectors that belong to one leaf when all leaves are laid end to end.
Array basis_block(int64_t total, int64_t offset, const AbstractArray& aval, SourceLoc loc) {
  const Shape square{total, aval.size()};
  Array hot = equal(iota(int32, square, 0, loc), add(iota(int32, square, 1, loc), int32_t(offset), loc), loc);
  return reshape(astype(hot, aval.dtype, loc), concat_shapes(Shape{total}, aval.shape), loc);
}

// x[..., from:to] along axis `axis`.
Array slice_axis(const Array& x, int axis, int64_t from, int64_t to, SourceLoc loc) {
  IntList start(size_t(x.ndim()), 0), limit = x.shape().dims();
  start[size_t(axis)] = from;
  limit[size_t(axis)] = to;
  return slice(x, start, limit, loc);
}

std::vector<int64_t> offsets(const std::vector<AbstractArray>& avals) {
  std::vector<int64_t> off{0};
  for (const AbstractArray& a : avals) off.push_back(off.back() + a.size());
  return off;
}
}  // namespace

std::vector<std::vector<Array>> jacobian_blocks(const Program& p, std::span<const Array> leaves,
                                                const std::vector<bool>& wrt, bool forward, SourceLoc loc) {
  std::vector<size_t> wrt_index;
  std::vector<AbstractArray> x_avals;
  for (size_t j = 0; j < leaves.size(); ++j)
    if (wrt[j]) {
      wrt_index.push_back(j);
      x_avals.push_back(leaves[j].aval());
    }
  const std::vector<AbstractArray> y_avals = p.out_avals();
  const std::vector<int64_t> x_off = offsets(x_avals), y_off = offsets(y_avals);
  std::vector<std::vector<Array>> blocks(y_avals.size());

  if (forward) {
    // One column per input element: jvp vmapped over the inputs' basis, the batch axis last.
    std::vector<Array> basis;
    for (size_t k = 0; k < x_avals.size(); ++k) basis.push_back(basis_block(x_off.back(), x_off[k], x_avals[k], loc));
    auto push_forward = [&](const std::vector<Array>& ts) {
      std::vector<Array> all(leaves.size());  // empty: a symbolic zero tangent
      for (size_t k = 0; k < ts.size(); ++k) all[wrt_index[k]] = ts[k];
      return jvp_flat(p, leaves, all).second;
    };
    std::vector<Array> columns = vmap(push_forward, in_axes(0), out_axes(-1), loc)(basis);  // y.shape + [N]
    for (size_t i = 0; i < y_avals.size(); ++i)
      for (size_t k = 0; k < x_avals.size(); ++k)
        blocks[i].push_back(reshape(slice_axis(columns[i], y_avals[i].ndim(), x_off[k], x_off[k + 1], loc),
                                    concat_shapes(y_avals[i].shape, x_avals[k].shape), loc));
    return blocks;
  }
  // One row per output element: the pullback vmapped over the outputs' basis.
  for (size_t i = 0; i < y_avals.size(); ++i)
    if (!is_float(y_avals[i].dtype))
      throw TypeError("TypeError: jacrev at " + loc.str() + ": output leaf " + std::to_string(i) + " has type " +
                      y_avals[i].str() + "; only floating-point outputs have a Jacobian in reverse mode");
  std::vector<Array> outs;
  Pullback pb = make_pullback(p, leaves, wrt, outs, loc);
  std::vector<Array> basis;
  for (size_t i = 0; i < y_avals.size(); ++i) basis.push_back(basis_block(y_off.back(), y_off[i], y_avals[i], loc));
  auto pull_back = [&](const std::vector<Array>& cts) {
    std::vector<Array> all = pb(cts), picked;
    for (size_t j : wrt_index) picked.push_back(all[j]);
    return picked;
  };
  std::vector<Array> rows = vmap(pull_back, loc)(basis);  // [M] + x.shape
  for (size_t i = 0; i < y_avals.size(); ++i)
    for (size_t k = 0; k < x_avals.size(); ++k)
      blocks[i].push_back(reshape(slice_axis(rows[k], 0, y_off[i], y_off[i + 1], loc),
                                  concat_shapes(y_avals[i].shape, x_avals[k].shape), loc));
  return blocks;
}

}  // namespace fluxion::detail
