// Lowerings of the indexing primitives (prims/indexing.cpp), with the reference's semantics:
//   dynamic_slice          tensor.extract_slice at starts clamped to [0, size - window]
//   dynamic_update_slice   tensor.insert_slice at the same clamped starts
//   gather                 one linalg.generic over the output: index read, clamped to [0, n-1],
//                          then tensor.extract from x (vectorizes as a gather)
//   scatter, scatter_add   scalar scf.for loops over (outer, index, inner) carrying the result
//                          tensor, in the reference's order, so the last duplicate wins (scatter)
//                          or duplicates accumulate (scatter_add); out-of-range indices are dropped
//
// gather/scatter/scatter_add take params {axis} only. A `batch_dims` param (being added to those
// primitives for vmap) changes their meaning; until these rules implement it they raise
// CompileError rather than compile something else.
#include <mlir/Dialect/SCF/IR/SCF.h>

#include "ir/error.h"
#include "lowering/gpu_lines.h"
#include "lowering/lower.h"
#include "lowering/lower_complex.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

// A param by key, or nullptr.
const ParamValue* find_param(const Params& p, std::string_view key) {
  for (const auto& [k, v] : p.entries())
    if (k == key) return &v;
  return nullptr;
}

// An integer scalar of dtype d (storage value) as i64, by d's signedness.
Value to_i64(OpBuilder& b, Location l, Value v, DType d) {
  if (v.getType().getIntOrFloatBitWidth() == 64) return v;
  if (is_signed_int(d)) return b.create<arith::ExtSIOp>(l, b.getI64Type(), v);
  return b.create<arith::ExtUIOp>(l, b.getI64Type(), v);
}

Value i64c(OpBuilder& b, Location l, int64_t v) { return b.create<arith::ConstantOp>(l, b.getI64IntegerAttr(v)); }

Value clamp_i64(OpBuilder& b, Location l, Value v, int64_t lo, int64_t hi) {
  v = b.create<arith::MaxSIOp>(l, v, i64c(b, l, lo));
  return b.create<arith::MinSIOp>(l, v, i64c(b, l, hi));
}

Value as_index(OpBuilder& b, Location l, Value i64) { return b.create<arith::IndexCastOp>(l, b.getIndexType(), i64); }

// The scalar value of a 0-d operand (a literal, or a rank-0 tensor).
Value scalar_of(LowerCtx& c, const Operand& o) {
  if (o.scalar) return o.value;
  return c.b.create<tensor::ExtractOp>(c.loc, o.value, ValueRange{});
}

// The window starts: operand first+d clamped to [0, shape[d] - window[d]], as index values.
SmallVector<OpFoldResult> clamped_starts(LowerCtx& c, std::span<const Operand> in, size_t first, const Shape& shape,
                                         const Shape& window) {
  SmallVector<OpFoldResult> starts;
  for (size_t d = 0; d < shape.size(); ++d) {
    const Operand& o = in[first + d];
    Value v = to_i64(c.b, c.loc, scalar_of(c, o), o.aval.dtype);
    starts.push_back(as_index(c.b, c.loc, clamp_i64(c.b, c.loc, v, 0, shape[d] - window[d])));
  }
  return starts;
}

SmallVector<OpFoldResult> index_attrs(OpBuilder& b, const Shape& s, int64_t fill = -1) {
  SmallVector<OpFoldResult> r;
  for (int64_t d : s) r.push_back(b.getIndexAttr(fill < 0 ? d : fill));
  return r;
}

// The GPU forms: the starts live in device memory, so a kernel reads them itself and the window
// is index arithmetic in one linalg.generic over the result (a view at those starts would have to
// be placed by the host). `first`: the first start operand; x is read by tensor.extract.
Value gpu_window_copy(LowerCtx& c, std::span<const Operand> in, const AbstractArray& out, size_t first,
                      const Shape& window, bool update) {
  OpBuilder& b = c.b;
  MLIRContext* ctx = b.getContext();
  const unsigned rank = unsigned(out.ndim());
  const Shape& xs = in[0].aval.shape;
  SmallVector<Value> ins;
  SmallVector<AffineMap> maps;
  std::vector<int> slot(rank, -1);  // per dim: its start's block argument, or -1 (a literal)
  if (update) {
    ins.push_back(as_tensor(c, in[0]));
    maps.push_back(b.getMultiDimIdentityMap(rank));
  }
  for (unsigned d = 0; d < rank; ++d) {
    if (in[first + d].scalar) continue;
    slot[d] = int(ins.size());
    ins.push_back(in[first + d].value);
    maps.push_back(AffineMap::get(rank, 0, ctx));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  Value x = as_tensor(c, in[0]), u = update ? as_tensor(c, in[1]) : Value();
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto g = b.create<linalg::GenericOp>(
      c.loc, TypeRange{tensor_type(ctx, out)}, ins, ValueRange{empty(c, out)}, maps, iters,
      [&](OpBuilder& nb, Location l, ValueRange args) {
        SmallVector<Value> at;
        Value inside = nb.create<arith::ConstantOp>(l, nb.getBoolAttr(true));
        for (unsigned d = 0; d < rank; ++d) {
          const Operand& o = in[first + d];
          Value raw = slot[d] < 0 ? o.value : args[size_t(slot[d])];
          Value start = clamp_i64(nb, l, to_i64(nb, l, raw, o.aval.dtype), 0, xs[d] - window[d]);
          Value i = nb.create<arith::IndexCastOp>(l, nb.getI64Type(), nb.create<linalg::IndexOp>(l, uint64_t(d)));
          if (!update) {
            at.push_back(as_index(nb, l, nb.create<arith::AddIOp>(l, i, start)));
            continue;
          }
          Value rel = nb.create<arith::SubIOp>(l, i, start);
          inside = nb.create<arith::AndIOp>(
              l, inside,
              nb.create<arith::AndIOp>(l, nb.create<arith::CmpIOp>(l, arith::CmpIPredicate::sge, rel, i64c(nb, l, 0)),
                                       nb.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, rel, i64c(nb, l, window[d]))));
          at.push_back(as_index(nb, l, clamp_i64(nb, l, rel, 0, window[d] - 1)));
        }
        Value r = update ? Value(nb.create<arith::SelectOp>(l, inside, nb.create<tensor::ExtractOp>(l, u, at), args[0]))
                         : Value(nb.create<tensor::ExtractOp>(l, x, at));
        nb.create<linalg::YieldOp>(l, r);
      });
  return g.getResult(0);
}

std::vector<Value> dynamic_slice_rule(LowerCtx& c, const Eqn&, std::span<const Operand> in, std::span<const AbstractArray> out) {
  const AbstractArray& x = in[0].aval;
  if (out[0].size() == 0 || x.size() == 0) return {empty(c, out[0])};
  if (lowering_for_gpu(c)) return {gpu_window_copy(c, in, out[0], 1, out[0].shape, false)};
  auto starts = clamped_starts(c, in, 1, x.shape, out[0].shape);
  auto type = tensor_type(c.b.getContext(), out[0]);
  return {c.b.create<tensor::ExtractSliceOp>(c.loc, type, as_tensor(c, in[0]), starts, index_attrs(c.b, out[0].shape),
                                             index_attrs(c.b, out[0].shape, 1))};
}

std::vector<Value> dynamic_update_slice_rule(LowerCtx& c, const Eqn&, std::span<const Operand> in,
                                             std::span<const AbstractArray> out) {
  const AbstractArray &x = in[0].aval, &update = in[1].aval;
  if (x.size() == 0) return {empty(c, out[0])};
  if (update.size() == 0) return {as_tensor(c, in[0])};
  if (lowering_for_gpu(c)) return {gpu_window_copy(c, in, out[0], 2, update.shape, true)};
  auto starts = clamped_starts(c, in, 2, x.shape, update.shape);
  return {c.b.create<tensor::InsertSliceOp>(c.loc, as_tensor(c, in[1]), as_tensor(c, in[0]), starts,
                                            index_attrs(c.b, update.shape), index_attrs(c.b, update.shape, 1))};
}

// batch_dims=n pairs the first n dims of x with the first n dims of the indices (absent: 0).
int64_t batch_dims_of(const Eqn& e) {
  const ParamValue* v = find_param(e.params, "batch_dims");
  return v && std::holds_alternative<int64_t>(*v) ? std::get<int64_t>(*v) : 0;
}

// out = x.shape[:nb] + x.shape[nb:axis] + idx.shape[nb:] + x.shape[axis+1:]: index dim k < nb is
// output dim k (paired with x's dim k), index dim k >= nb is output dim axis + k - nb.
std::vector<Value> gather_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  const int64_t nb = batch_dims_of(e);
  OpBuilder& b = c.b;
  MLIRContext* ctx = b.getContext();
  const AbstractArray &x = in[0].aval, &idx = in[1].aval;
  if (out[0].size() == 0) return {empty(c, out[0])};
  const int64_t axis = e.params.get_int("axis");
  const unsigned rank = unsigned(out[0].ndim()), ri = unsigned(idx.ndim());
  const int64_t n = x.shape[size_t(axis)];
  Value xt = as_tensor(c, in[0]);
  SmallVector<Value> ins;
  SmallVector<AffineMap> maps;
  if (!in[1].scalar) {
    SmallVector<AffineExpr> ie;
    for (unsigned k = 0; k < ri; ++k)
      ie.push_back(getAffineDimExpr(int64_t(k) < nb ? k : unsigned(axis + int64_t(k) - nb), ctx));
    ins.push_back(in[1].value);
    maps.push_back(AffineMap::get(rank, 0, ie, ctx));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  const DType id = idx.dtype;
  auto g = b.create<linalg::GenericOp>(
      c.loc, TypeRange{tensor_type(ctx, out[0])}, ins, ValueRange{empty(c, out[0])}, maps, iters,
      [&, batch = nb](OpBuilder& nb, Location l, ValueRange args) {
        Value raw = in[1].scalar ? in[1].value : args[0];
        Value i = as_index(nb, l, clamp_i64(nb, l, to_i64(nb, l, raw, id), 0, n - 1));
        SmallVector<Value> at;
        for (int64_t d = 0; d < axis; ++d) at.push_back(nb.create<linalg::IndexOp>(l, uint64_t(d)));
        at.push_back(i);
        for (int d = int(axis) + 1; d < x.ndim(); ++d)
          at.push_back(nb.create<linalg::IndexOp>(l, uint64_t(int64_t(d) - 1 + int64_t(ri) - batch)));
        nb.create<linalg::YieldOp>(l, ValueRange{nb.create<tensor::ExtractOp>(l, xt, at)});
      });
  return {g.getResult(0)};
}

template <bool Add>
std::vector<Value> scatter_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  OpBuilder& b = c.b;
  const AbstractArray &x = in[0].aval, &idx = in[1].aval, &upd = in[2].aval;
  const int64_t axis = e.params.get_int("axis"), nb = batch_dims_of(e);
  int64_t batch = 1, outer = 1, inner = 1, m = 1;
  const int64_t n = x.shape[size_t(axis)];
  for (int64_t d = 0; d < nb; ++d) batch *= x.shape[size_t(d)];
  for (int64_t d = nb; d < axis; ++d) outer *= x.shape[size_t(d)];
  for (int d = int(axis) + 1; d < x.ndim(); ++d) inner *= x.shape[size_t(d)];
  for (int d = int(nb); d < idx.ndim(); ++d) m *= idx.shape[size_t(d)];
  Value xt = as_tensor(c, in[0]);
  if (x.size() == 0 || upd.size() == 0) return {xt};
  const DType d = x.dtype;
  // x as [batch*outer, n, inner], updates as [batch*outer, m, inner], indices as [batch, m]: row
  // o = bi * outer + oi of x reads its indices from row bi.
  Value x3 = reshape_to(c, xt, x.shape, AbstractArray{Shape({batch * outer, n, inner}), d, false});
  Value u3 = reshape_to(c, as_tensor(c, in[2]), upd.shape, AbstractArray{Shape({batch * outer, m, inner}), d, false});
  Value i1 = reshape_to(c, as_tensor(c, in[1]), idx.shape, AbstractArray{Shape({batch, m}), idx.dtype, false});
  outer *= batch;
  const int64_t per_batch = outer / batch;
  Location l = c.loc;
  auto cidx = [&](int64_t v) -> Value { return b.create<arith::ConstantIndexOp>(l, v); };
  Value zero = cidx(0), one = cidx(1);
  if (lowering_for_gpu(c)) {
    // A thread per line (o, k) of x (gpu_lines.h): every index in order, so the last duplicate
    // wins and duplicates accumulate as in the reference; an index out of range writes back the
    // element at the clamped one (no branch).
    Value y3 = lines_in_parallel(c, x3, [&](OpBuilder& b1, Location l1, Value o, Value k, Value line) {
      Value bi = b1.create<arith::DivUIOp>(l1, o, cidx(per_batch));
      auto loop_j = b1.create<scf::ForOp>(l1, zero, cidx(m), one, ValueRange{line}, [&](OpBuilder& b2, Location l2, Value j, ValueRange acc) {
        Value raw = to_i64(b2, l2, b2.create<tensor::ExtractOp>(l2, i1, ValueRange{bi, j}), idx.dtype);
        Value in_range = b2.create<arith::AndIOp>(
            l2, b2.create<arith::CmpIOp>(l2, arith::CmpIPredicate::sge, raw, i64c(b2, l2, 0)),
            b2.create<arith::CmpIOp>(l2, arith::CmpIPredicate::slt, raw, i64c(b2, l2, n)));
        Value i = as_index(b2, l2, clamp_i64(b2, l2, raw, 0, n - 1));
        Value old = b2.create<tensor::ExtractOp>(l2, acc[0], ValueRange{i});
        Value u = b2.create<tensor::ExtractOp>(l2, u3, ValueRange{o, j, k});
        if constexpr (Add) {
          if (d == DType::bool_) {
            u = b2.create<arith::OrIOp>(l2, old, u);
          } else {
            u = from_compute(b2, l2, add_scalars(b2, l2, to_compute(b2, l2, old, d), to_compute(b2, l2, u, d), d), d);
          }
        }
        u = b2.create<arith::SelectOp>(l2, in_range, u, old);
        b2.create<scf::YieldOp>(l2, ValueRange{b2.create<tensor::InsertOp>(l2, u, acc[0], ValueRange{i}).getResult()});
      });
      return loop_j.getResult(0);
    });
    return {reshape_to(c, y3, Shape({outer, n, inner}), out[0])};
  }
  auto loop_o = b.create<scf::ForOp>(l, zero, cidx(outer), one, ValueRange{x3}, [&](OpBuilder& b1, Location l1, Value o, ValueRange acc1) {
    Value bi = b1.create<arith::DivUIOp>(l1, o, cidx(per_batch));
    auto loop_j = b1.create<scf::ForOp>(l1, zero, cidx(m), one, acc1, [&](OpBuilder& b2, Location l2, Value j, ValueRange acc2) {
      Value raw = to_i64(b2, l2, b2.create<tensor::ExtractOp>(l2, i1, ValueRange{bi, j}), idx.dtype);
      Value in_range = b2.create<arith::AndIOp>(
          l2, b2.create<arith::CmpIOp>(l2, arith::CmpIPredicate::sge, raw, i64c(b2, l2, 0)),
          b2.create<arith::CmpIOp>(l2, arith::CmpIPredicate::slt, raw, i64c(b2, l2, n)));
      Value i = as_index(b2, l2, clamp_i64(b2, l2, raw, 0, n - 1));
      Value bound = b2.create<arith::SelectOp>(l2, in_range, cidx(inner), zero);  // dropped: no iterations
      auto loop_k = b2.create<scf::ForOp>(l2, zero, bound, one, acc2, [&](OpBuilder& b3, Location l3, Value k, ValueRange acc3) {
        Value u = b3.create<tensor::ExtractOp>(l3, u3, ValueRange{o, j, k});
        if constexpr (Add) {
          Value old = b3.create<tensor::ExtractOp>(l3, acc3[0], ValueRange{o, i, k});
          if (d == DType::bool_) {
            u = b3.create<arith::OrIOp>(l3, old, u);
          } else {
            u = from_compute(b3, l3, add_scalars(b3, l3, to_compute(b3, l3, old, d), to_compute(b3, l3, u, d), d), d);
          }
        }
        Value r = b3.create<tensor::InsertOp>(l3, u, acc3[0], ValueRange{o, i, k});
        b3.create<scf::YieldOp>(l3, r);
      });
      b2.create<scf::YieldOp>(l2, loop_k.getResult(0));
    });
    b1.create<scf::YieldOp>(l1, loop_j.getResult(0));
  });
  return {reshape_to(c, loop_o.getResult(0), Shape({outer, n, inner}), out[0])};
}

}  // namespace

void add_indexing_lowerings(LowerTable& t) {
  t[size_t(Prim::dynamic_slice)] = &dynamic_slice_rule;
  t[size_t(Prim::dynamic_update_slice)] = &dynamic_update_slice_rule;
  t[size_t(Prim::gather)] = &gather_rule;
  t[size_t(Prim::scatter)] = &scatter_rule<false>;
  t[size_t(Prim::scatter_add)] = &scatter_rule<true>;
}

}  // namespace fluxion::lowering
