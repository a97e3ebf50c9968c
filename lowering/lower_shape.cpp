// Lowering of the shape primitives (prims/shape.cpp). Moves of elements that an indexing map can
// express (broadcast_in_dim, transpose, rev, iota) are linalg.generic ops, so they fuse with their
// elementwise neighbours; the others are tensor slices and reshapes that bufferize to views/copies.
#include "ir/dim_expr.h"
#include "lowering/lower.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

// A generic whose one input is read through `in_map` (over the output's loops).
Value gather_copy(LowerCtx& c, const AbstractArray& out, Value in, AffineMap in_map) {
  OpBuilder& b = c.b;
  const unsigned rank = unsigned(out.ndim());
  SmallVector<AffineMap> maps{in_map, b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto g = b.create<linalg::GenericOp>(c.loc, TypeRange{tensor_type(b.getContext(), out)}, ValueRange{in},
                                       ValueRange{empty(c, out)}, maps, iters,
                                       [](OpBuilder& nb, Location nl, ValueRange args) { nb.create<linalg::YieldOp>(nl, args[0]); });
  return g.getResult(0);
}

std::vector<Value> broadcast_in_dim_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in,
                                         std::span<const AbstractArray> out) {
  const IntList& bdims = e.params.get_ints("broadcast_dimensions");
  const Shape& is = in[0].aval.shape;
  SmallVector<AffineExpr> exprs;
  for (size_t i = 0; i < bdims.size(); ++i) {
    const bool stretched = is[i] == 1 && out[0].shape[size_t(bdims[i])] != 1;
    exprs.push_back(stretched ? getAffineConstantExpr(0, c.b.getContext()) : getAffineDimExpr(unsigned(bdims[i]), c.b.getContext()));
  }
  AffineMap m = AffineMap::get(unsigned(out[0].ndim()), 0, exprs, c.b.getContext());
  return {gather_copy(c, out[0], as_tensor(c, in[0]), m)};
}

std::vector<Value> transpose_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  const IntList& perm = e.params.get_ints("permutation");
  // Output dim i is operand dim perm[i]: operand dim perm[i] is indexed by loop i.
  SmallVector<AffineExpr> exprs(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) exprs[size_t(perm[i])] = getAffineDimExpr(unsigned(i), c.b.getContext());
  AffineMap m = AffineMap::get(unsigned(out[0].ndim()), 0, exprs, c.b.getContext());
  return {gather_copy(c, out[0], as_tensor(c, in[0]), m)};
}

// rev reads the operand at reversed indices with tensor.extract (an index map n-1-d is not a
// projected permutation, which tiling and vectorization require of indexing maps).
std::vector<Value> rev_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  OpBuilder& b = c.b;
  const IntList& dims = e.params.get_ints("dimensions");
  const Shape& s = out[0].shape;
  const unsigned rank = unsigned(s.rank());
  Value src = as_tensor(c, in[0]);
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  SmallVector<Value> last(rank);  // n-1 of each reversed dim (a symbolic one computed at run time)
  for (int64_t d : dims)
    last[size_t(d)] = is_symbolic_dim(s[size_t(d)])
                          ? Value(b.create<arith::SubIOp>(c.loc, dim_value(c, s[size_t(d)]), b.create<arith::ConstantIndexOp>(c.loc, 1)))
                          : Value(b.create<arith::ConstantIndexOp>(c.loc, s[size_t(d)] - 1));
  auto g = b.create<linalg::GenericOp>(
      c.loc, TypeRange{tensor_type(b.getContext(), out[0])}, ValueRange{}, ValueRange{empty(c, out[0])}, maps, iters,
      [&](OpBuilder& nb, Location nl, ValueRange) {
        SmallVector<Value> idx;
        for (unsigned d = 0; d < rank; ++d) {
          Value i = nb.create<linalg::IndexOp>(nl, uint64_t(d));
          if (last[d]) i = nb.create<arith::SubIOp>(nl, last[d], i);
          idx.push_back(i);
        }
        nb.create<linalg::YieldOp>(nl, Value(nb.create<tensor::ExtractOp>(nl, src, idx)));
      });
  return {g.getResult(0)};
}

std::vector<Value> iota_rule(LowerCtx& c, const Eqn& e, std::span<const Operand>, std::span<const AbstractArray> out) {
  OpBuilder& b = c.b;
  const unsigned rank = unsigned(out[0].ndim());
  const int64_t dim = e.params.get_int("dimension");
  const DType d = out[0].dtype;
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto g = b.create<linalg::GenericOp>(
      c.loc, TypeRange{tensor_type(b.getContext(), out[0])}, ValueRange{}, ValueRange{empty(c, out[0])}, maps, iters,
      [&](OpBuilder& nb, Location nl, ValueRange) {
        Value i = nb.create<linalg::IndexOp>(nl, uint64_t(dim));
        Value i64 = nb.create<arith::IndexCastOp>(nl, nb.getI64Type(), i);
        Value v = from_compute(nb, nl, convert_scalar(nb, nl, i64, DType::int64, d), d);
        nb.create<linalg::YieldOp>(nl, v);
      });
  return {g.getResult(0)};
}

}  // namespace

/// The same elements under another shape (row-major order): collapse to 1-D, expand to `to`.
Value reshape_to(LowerCtx& c, Value t, const Shape& from, const AbstractArray& to) {
  if (from == to.shape) return t;
  OpBuilder& b = c.b;
  Type elem = storage_type(b.getContext(), to.dtype);
  auto all = [](int rank) {
    ReassociationIndices r;
    for (int i = 0; i < rank; ++i) r.push_back(i);
    return SmallVector<ReassociationIndices>{r};
  };
  if (is_symbolic(from) || is_symbolic(to.shape)) {  // a polymorphic reshape: through one dynamic dim
    Value flat = t;
    auto flat_type = RankedTensorType::get({ShapedType::kDynamic}, elem);
    if (from.rank() > 1) flat = b.create<tensor::CollapseShapeOp>(c.loc, flat_type, t, all(from.rank()));
    if (to.shape.rank() == 1) return flat;
    SmallVector<OpFoldResult> sizes;
    for (int64_t d : to.shape) sizes.push_back(is_symbolic_dim(d) ? OpFoldResult(dim_value(c, d)) : b.getIndexAttr(d));
    return b.create<tensor::ExpandShapeOp>(c.loc, tensor_type(b.getContext(), to), flat, all(to.shape.rank()), sizes);
  }
  const int64_t n = to.shape.numel();
  auto flat_type = RankedTensorType::get({n}, elem);
  Value flat = t;
  if (from.rank() == 0) flat = b.create<tensor::ExpandShapeOp>(c.loc, flat_type, t, SmallVector<ReassociationIndices>{});
  else if (from.rank() > 1) flat = b.create<tensor::CollapseShapeOp>(c.loc, flat_type, t, all(from.rank()));
  auto out_type = tensor_type(b.getContext(), to);
  if (to.shape.rank() == 0) return b.create<tensor::CollapseShapeOp>(c.loc, out_type, flat, SmallVector<ReassociationIndices>{});
  if (to.shape.rank() == 1) return flat;
  return b.create<tensor::ExpandShapeOp>(c.loc, out_type, flat, all(to.shape.rank()));
}

namespace {

std::vector<Value> reshape_rule(LowerCtx& c, const Eqn&, std::span<const Operand> in, std::span<const AbstractArray> out) {
  return {reshape_to(c, as_tensor(c, in[0]), in[0].aval.shape, out[0])};
}

std::vector<Value> slice_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  const IntList& start = e.params.get_ints("start_indices");
  const int rank = in[0].aval.ndim();
  IntList strides = e.params.has("strides") ? e.params.get_ints("strides") : IntList(size_t(rank), 1);
  SmallVector<OpFoldResult> offs, sizes, steps;
  for (int d = 0; d < rank; ++d) {
    offs.push_back(c.b.getIndexAttr(start[size_t(d)]));
    sizes.push_back(c.b.getIndexAttr(out[0].shape[size_t(d)]));
    steps.push_back(c.b.getIndexAttr(strides[size_t(d)]));
  }
  return {c.b.create<tensor::ExtractSliceOp>(c.loc, tensor_type(c.b.getContext(), out[0]), as_tensor(c, in[0]), offs, sizes, steps)
              .getResult()};
}

std::vector<Value> concatenate_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in,
                                    std::span<const AbstractArray> out) {
  const int64_t dim = e.params.get_int("dimension");
  const int rank = out[0].ndim();
  Value acc = empty(c, out[0]);
  int64_t at = 0;
  for (const Operand& o : in) {
    SmallVector<OpFoldResult> offs, sizes, steps;
    for (int d = 0; d < rank; ++d) {
      offs.push_back(c.b.getIndexAttr(d == dim ? at : 0));
      sizes.push_back(c.b.getIndexAttr(o.aval.shape[size_t(d)]));
      steps.push_back(c.b.getIndexAttr(1));
    }
    acc = c.b.create<tensor::InsertSliceOp>(c.loc, as_tensor(c, o), acc, offs, sizes, steps);
    at += o.aval.shape[size_t(dim)];
  }
  return {acc};
}

// pad: fill with the padding value, then insert the operand's elements that land inside the
// output (negative padding drops some) at offset lo with stride interior+1.
std::vector<Value> pad_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  OpBuilder& b = c.b;
  const IntList& config = e.params.get_ints("padding_config");
  const Shape& is = in[0].aval.shape;
  const Shape& os = out[0].shape;
  Value value = in[1].scalar ? in[1].value : Value(b.create<tensor::ExtractOp>(c.loc, in[1].value, ValueRange{}));
  Value acc = filled(c, out[0], value);
  SmallVector<OpFoldResult> src_off, src_size, src_step, dst_off, dst_step;
  AbstractArray part{Shape{}, out[0].dtype, false};
  for (int d = 0; d < is.rank(); ++d) {
    const int64_t lo = config[size_t(3 * d)], step = config[size_t(3 * d + 2)] + 1, n = is[size_t(d)];
    // first and last operand index whose position lo + i*step lies in [0, os[d])
    int64_t first = lo >= 0 ? 0 : (-lo + step - 1) / step;
    int64_t last = std::min(n - 1, os[size_t(d)] - 1 - lo < 0 ? int64_t(-1) : (os[size_t(d)] - 1 - lo) / step);
    int64_t count = std::max<int64_t>(0, last - first + 1);
    if (count == 0) return {acc};
    src_off.push_back(b.getIndexAttr(first));
    src_size.push_back(b.getIndexAttr(count));
    src_step.push_back(b.getIndexAttr(1));
    dst_off.push_back(b.getIndexAttr(lo + first * step));
    dst_step.push_back(b.getIndexAttr(step));
    part.shape.push_back(count);
  }
  Value src = as_tensor(c, in[0]);
  if (!(part.shape == is))
    src = b.create<tensor::ExtractSliceOp>(c.loc, tensor_type(b.getContext(), part), src, src_off, src_size, src_step);
  return {b.create<tensor::InsertSliceOp>(c.loc, src, acc, dst_off, src_size, dst_step).getResult()};
}

}  // namespace

void add_shape_lowerings(LowerTable& t) {
  t[size_t(Prim::broadcast_in_dim)] = &broadcast_in_dim_rule;
  t[size_t(Prim::reshape)] = &reshape_rule;
  t[size_t(Prim::squeeze)] = &reshape_rule;
  t[size_t(Prim::transpose)] = &transpose_rule;
  t[size_t(Prim::rev)] = &rev_rule;
  t[size_t(Prim::iota)] = &iota_rule;
  t[size_t(Prim::slice)] = &slice_rule;
  t[size_t(Prim::concatenate)] = &concatenate_rule;
  t[size_t(Prim::pad)] = &pad_rule;
}

}  // namespace fluxion::lowering
