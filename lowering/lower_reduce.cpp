// Lowering of the reductions (prims/reduce.cpp) and the cumulative scans (prims/cumulative.cpp).
// A reduction is one linalg.generic with reduction iterators over
// the reduced axes, into an accumulator initialised by linalg.fill. Producers fuse into it
// (linalg-fuse-elementwise-ops), and the pipeline splits the innermost reduction for vectors.
//
// Accumulation: float16/bfloat16 in f32 (as the reference), float32 in f32 (the reference uses
// f64; XLA uses f32 -- vector partial sums keep the error small), integers in their own width
// (wrapping, which equals the reference's uint64 accumulation modulo 2^bits).
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>

#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/Vector/IR/VectorOps.h>

#include "ir/dim_expr.h"
#include "ir/settings.h"
#include "lowering/gpu_lines.h"
#include "lowering/lower.h"
#include "lowering/lower_complex.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

enum class Kind { sum, prod, max, min, and_, or_ };

// The reduction's identity in the accumulator type.
Value identity(OpBuilder& b, Location l, Kind k, DType d) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  switch (k) {
    case Kind::sum: return constant(b, l, d, 0);
    case Kind::prod: return constant(b, l, d, 1);
    case Kind::and_: return constant(b, l, d, d == DType::bool_ ? 1 : -1);
    case Kind::or_: return constant(b, l, d, 0);
    case Kind::max:
    case Kind::min: {
      const bool max = k == Kind::max;
      if (is_complex(d)) return complex_constant(b, l, d, max ? -inf : inf, max ? -inf : inf);
      if (is_float(d)) return constant(b, l, d, max ? -inf : inf);
      if (d == DType::bool_) return constant(b, l, d, max ? 0 : 1);
      Type t = compute_type(b.getContext(), d);
      unsigned w = t.getIntOrFloatBitWidth();
      APInt v = is_signed_int(d) ? (max ? APInt::getSignedMinValue(w) : APInt::getSignedMaxValue(w))
                                 : (max ? APInt::getMinValue(w) : APInt::getMaxValue(w));
      return b.create<arith::ConstantOp>(l, b.getIntegerAttr(t, v));
    }
  }
  return Value();
}

Value combine(OpBuilder& b, Location l, Kind k, DType d, Value x, Value acc) {
  const bool f = is_float(d);
  switch (k) {
    case Kind::sum: return add_scalars(b, l, acc, x, d);
    case Kind::prod: return mul_scalars(b, l, acc, x, d);
    case Kind::and_: return b.create<arith::AndIOp>(l, acc, x);
    case Kind::or_: return b.create<arith::OrIOp>(l, acc, x);
    case Kind::max:
    case Kind::min: {
      const bool max = k == Kind::max;
      if (is_complex(d)) return b.create<arith::SelectOp>(l, complex_beats(b, l, x, acc, max), x, acc);
      if (f) return max ? Value(b.create<arith::MaximumFOp>(l, acc, x)) : Value(b.create<arith::MinimumFOp>(l, acc, x));
      if (is_signed_int(d)) return max ? Value(b.create<arith::MaxSIOp>(l, acc, x)) : Value(b.create<arith::MinSIOp>(l, acc, x));
      return max ? Value(b.create<arith::MaxUIOp>(l, acc, x)) : Value(b.create<arith::MinUIOp>(l, acc, x));
    }
  }
  return Value();
}

// Loop maps of a reduction of `rank` loops over `axes`: identity for the operand, the kept loops
// for the result.
AffineMap kept_map(MLIRContext* ctx, int rank, const IntList& axes) {
  SmallVector<AffineExpr> kept;
  for (int d = 0; d < rank; ++d)
    if (std::find(axes.begin(), axes.end(), int64_t(d)) == axes.end()) kept.push_back(getAffineDimExpr(unsigned(d), ctx));
  return AffineMap::get(unsigned(rank), 0, kept, ctx);
}

SmallVector<utils::IteratorType> iterators(int rank, const IntList& axes) {
  SmallVector<utils::IteratorType> it(size_t(rank), utils::IteratorType::parallel);
  for (int64_t a : axes) it[size_t(a)] = utils::IteratorType::reduction;
  return it;
}

// One linalg.generic reducing tensor `x` (dims `shape`, dtype d) over `axes` into an accumulator
// of d's compute type, shaped as the kept dims.
template <Kind K>
Value reduce_generic(LowerCtx& c, Value x, const Shape& shape, DType d, const IntList& axes) {
  OpBuilder& b = c.b;
  MLIRContext* ctx = b.getContext();
  const int rank = shape.rank();
  Shape kept;
  for (int i = 0; i < rank; ++i)
    if (std::find(axes.begin(), axes.end(), int64_t(i)) == axes.end()) kept.push_back(shape[size_t(i)]);
  Type acc_elem = cast<ShapedType>(x.getType()).getElementType() == storage_type(ctx, d) ? compute_type(ctx, d)
                                                                                       : cast<ShapedType>(x.getType()).getElementType();
  auto acc_type = RankedTensorType::get(mlir_dims(kept), acc_elem);
  Value init = empty_of(c, kept, acc_elem);
  init = b.create<linalg::FillOp>(c.loc, ValueRange{identity(b, c.loc, K, d)}, ValueRange{init}).getResult(0);
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(unsigned(rank)), kept_map(ctx, rank, axes)};
  auto g = b.create<linalg::GenericOp>(c.loc, TypeRange{acc_type}, ValueRange{x}, ValueRange{init}, maps,
                                       iterators(rank, axes), [&](OpBuilder& nb, Location nl, ValueRange args) {
                                         Value v = args[0].getType() == acc_elem ? args[0] : to_compute(nb, nl, args[0], d);
                                         nb.create<linalg::YieldOp>(nl, combine(nb, nl, K, d, v, args[1]));
                                       });
  return g.getResult(0);
}

/// The operand's dims with adjacent dims of the same kind (reduced or kept) merged: [N, C, H, W]
/// over {0, 2, 3} is [N, C, H*W] over {0, 2}.
struct Merged {
  Shape shape;
  IntList axes;
};
Merged merge_dims(const Shape& s, const IntList& axes) {
  Merged m;
  bool prev_reduced = false;
  for (int i = 0; i < s.rank(); ++i) {
    const bool r = std::find(axes.begin(), axes.end(), int64_t(i)) != axes.end();
    if (i > 0 && r == prev_reduced) {
      // A symbolic dim's code is no size: a merged dim with one keeps a symbolic code (only
      // its axes are used then: reduce_rule does not reshape a symbolic operand).
      int64_t& last = m.shape[size_t(m.shape.rank() - 1)];
      last = is_symbolic_dim(last) ? last : is_symbolic_dim(s[size_t(i)]) ? s[size_t(i)] : last * s[size_t(i)];
    } else {
      m.shape.push_back(s[size_t(i)]);
      if (r) m.axes.push_back(m.shape.rank() - 1);
    }
    prev_reduced = r;
  }
  return m;
}

// A reduction over the innermost dims and dims further out with kept dims between them (batch-norm
// statistics: NCHW over N, H and W) runs in two generics: the innermost run of reduced dims first
// (a row reduction over contiguous rows, parallel over the rows), then the rest on its small result.
// As one generic the vector lanes ran across the strided kept dim (gathers) on one thread.
// FLUXION_TWO_STAGE_REDUCE=0 keeps the single generic: the A/B of docs/jit.md (not in the cache key).
bool two_stage_reductions() {
  static const bool on = toggle_setting("FLUXION_TWO_STAGE_REDUCE", true);
  return on;
}

template <Kind K>
std::vector<Value> reduce_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  MLIRContext* ctx = c.b.getContext();
  const DType d = in[0].aval.dtype;
  const IntList& axes = e.params.get_ints("axes");
  if (axes.empty())  // nothing reduced: a copy (kept out of the accumulate-into-output form)
    return {elementwise(c, out[0], in, [](OpBuilder&, Location, ValueRange v) { return v[0]; })};
  Value x = as_tensor(c, in[0]);
  Value r;
  const Shape& shape = in[0].aval.shape;
  const Merged m = merge_dims(shape, axes);
  const int mrank = m.shape.rank();
  // A full reduction keeps its dims: it has its own fused form, and the GPU pipeline maps it as it is.
  const bool inner_run = !m.axes.empty() && m.axes.back() == mrank - 1 && int(m.axes.size()) < mrank;
  int64_t inner_dims = 0;  // reduced dims at the end of the operand, merged into its last dim
  while (inner_dims < shape.rank() && std::find(axes.begin(), axes.end(), shape.rank() - 1 - inner_dims) != axes.end())
    ++inner_dims;
  const bool split = two_stage_reductions() && m.axes.size() >= 2;
  // Reduced on the merged dims only where the innermost dims are reduced together (a reduction
  // over several innermost dims ran 20x slower than over their merged row): the reshape keeps the
  // reduction's producer from fusing into it. A split one keeps the operand's dims (below).
  // (Not over symbolic dims: merging multiplies sizes that a polymorphic program knows only at run time.)
  if (!has_no_elements(in[0].aval) && !is_symbolic(shape) && inner_run && (inner_dims >= 2 || split)) {
    if (split) {
      // The first stage on the operand's own dims, so that an elementwise producer fuses into it
      // (a reshape between them blocks fusion); fx-fuse-elementwise merges its innermost reduced
      // dims into one row after fusion.
      IntList inner;
      for (int64_t i = shape.rank() - inner_dims; i < shape.rank(); ++i) inner.push_back(i);
      Value rows = reduce_generic<K>(c, x, shape, d, inner);
      std::vector<int64_t> row_dims = m.shape.dims(), outer_dims = shape.dims();
      row_dims.pop_back();
      outer_dims.resize(size_t(shape.rank() - inner_dims));
      Type acc_elem = cast<ShapedType>(rows.getType()).getElementType();
      const DType acc_d = acc_elem == storage_type(ctx, d) ? d : DType::float32;
      rows = reshape_to(c, rows, Shape(outer_dims), AbstractArray{Shape(row_dims), acc_d, false});
      r = reduce_generic<K>(c, rows, Shape(row_dims), d, IntList(m.axes.begin(), m.axes.end() - 1));
    } else {
      Value xm = reshape_to(c, x, shape, AbstractArray{m.shape, d, false});
      r = reduce_generic<K>(c, xm, m.shape, d, m.axes);
    }
    Type acc_elem = cast<ShapedType>(r.getType()).getElementType();
    r = reshape_to(c, r, Shape(cast<ShapedType>(r.getType()).getShape().vec()),
                   AbstractArray{out[0].shape, acc_elem == storage_type(ctx, d) ? d : DType::float32, false});
  } else {
    r = reduce_generic<K>(c, x, shape, d, axes);
  }
  if (compute_type(ctx, d) == storage_type(ctx, d)) return {r};
  Operand acc{r, AbstractArray{out[0].shape, DType::float32, false}, false};
  return {elementwise(c, out[0], std::span<const Operand>(&acc, 1),
                      [d](OpBuilder& nb, Location nl, ValueRange v) { return from_compute(nb, nl, v[0], d); })};
}

// argmax/argmin over one axis: (best value, best index) carried together. NaN beats everything and
// the first NaN stays; ties keep the first index (the reference's `beats`).
template <bool IsMax>
std::vector<Value> argminmax_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  OpBuilder& b = c.b;
  MLIRContext* ctx = b.getContext();
  const DType d = in[0].aval.dtype;
  const IntList& axes = e.params.get_ints("axes");
  const int64_t axis = axes.at(0);
  const int rank = in[0].aval.ndim();
  Type val_elem = compute_type(ctx, d);
  Value best0 = empty_of(c, out[0].shape, val_elem);
  Value fill = is_complex(d) ? constant(b, c.loc, d, 0) : identity(b, c.loc, IsMax ? Kind::max : Kind::min, d);
  best0 = b.create<linalg::FillOp>(c.loc, ValueRange{fill}, ValueRange{best0}).getResult(0);
  Value idx0 = empty_of(c, out[0].shape, b.getI64Type());
  idx0 = b.create<linalg::FillOp>(c.loc, ValueRange{Value(b.create<arith::ConstantOp>(c.loc, b.getI64IntegerAttr(0)))},
                                  ValueRange{idx0})
             .getResult(0);
  AffineMap kept = kept_map(ctx, rank, axes);
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(unsigned(rank)), kept, kept};
  auto g = b.create<linalg::GenericOp>(
      c.loc, TypeRange{RankedTensorType::get(mlir_dims(out[0].shape), val_elem), RankedTensorType::get(mlir_dims(out[0].shape), b.getI64Type())},
      ValueRange{as_tensor(c, in[0])}, ValueRange{best0, idx0}, maps, iterators(rank, axes),
      [&](OpBuilder& nb, Location nl, ValueRange args) {
        Value v = to_compute(nb, nl, args[0], d), best = args[1], bi = args[2];
        Value i = nb.create<arith::IndexCastOp>(nl, nb.getI64Type(), nb.create<linalg::IndexOp>(nl, uint64_t(axis)));
        Value beats;
        if (is_complex(d)) {
          beats = complex_beats(nb, nl, v, best, IsMax);
        } else if (is_float(d)) {
          Value best_ok = nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::ORD, best, best);
          Value v_nan = nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::UNO, v, v);
          Value better = nb.create<arith::CmpFOp>(nl, IsMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT, v, best);
          beats = nb.create<arith::AndIOp>(nl, best_ok, nb.create<arith::OrIOp>(nl, v_nan, better));
        } else {
          auto pred = is_signed_int(d) ? (IsMax ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt)
                                       : (IsMax ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::ult);
          beats = nb.create<arith::CmpIOp>(nl, pred, v, best);
        }
        // The first element always starts the run (the fill value is only a placeholder).
        Value first = nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::eq, i,
                                               nb.create<arith::ConstantOp>(nl, nb.getI64IntegerAttr(0)));
        beats = nb.create<arith::OrIOp>(nl, beats, first);
        nb.create<linalg::YieldOp>(nl, ValueRange{Value(nb.create<arith::SelectOp>(nl, beats, v, best)),
                                                  Value(nb.create<arith::SelectOp>(nl, beats, i, bi))});
      });
  Operand idx{g.getResult(1), AbstractArray{out[0].shape, DType::int64, false}, false};
  const DType to = out[0].dtype;
  return {elementwise(c, out[0], std::span<const Operand>(&idx, 1),
                      [to](OpBuilder& nb, Location nl, ValueRange v) { return convert_scalar(nb, nl, v[0], DType::int64, to); })};
}


// cumsum, cumprod, cummax, cummin [axis reverse]: x seen as [outer, len, inner]; for each
// (outer, inner) line a scalar scf.for along the axis carries the running value and the result
// tensor. Sums and products accumulate as the reference's do (f32 in f64, f16/bf16 in f32,
// integers wrapping in their own width) and each output element rounds from it; max/min run in
// the compute type from the identity (-inf for max: NaN propagates through arith.maximumf). When
// the axis is not the innermost and the inner extent has a divisor of at least 4 lanes (f32, f64,
// int32, int64), `inner` lines run side by side as vectors: the same operations in the same order
// per line, so the same bits.
Value scan_vectorized(LowerCtx& c, Kind k, Value x3, const AbstractArray& shape3, DType d, DType acc_d, bool reverse,
                      int64_t w) {
  OpBuilder& b = c.b;
  Location l = c.loc;
  const int64_t outer = shape3.shape[0], len = shape3.shape[1], inner = shape3.shape[2];
  MLIRContext* ctx = b.getContext();
  auto vt = VectorType::get({w}, storage_type(ctx, d)), at = VectorType::get({w}, compute_type(ctx, acc_d));
  auto cidx = [&](int64_t v) -> Value { return b.create<arith::ConstantIndexOp>(l, v); };
  Value zero = cidx(0), one = cidx(1), last = cidx(len - 1);
  Value pad = b.create<arith::ConstantOp>(l, b.getZeroAttr(storage_type(ctx, d)));
  SmallVector<bool> in_bounds{true};
  auto loop_o = b.create<scf::ForOp>(l, zero, cidx(outer), one, ValueRange{empty(c, shape3)}, [&](OpBuilder& b1, Location l1, Value o, ValueRange r1) {
    auto loop_k = b1.create<scf::ForOp>(l1, zero, cidx(inner), cidx(w), r1, [&](OpBuilder& b2, Location l2, Value kk, ValueRange r2) {
      Value acc0 = b2.create<vector::BroadcastOp>(l2, at, identity(b2, l2, k, acc_d));
      auto loop_j = b2.create<scf::ForOp>(l2, zero, cidx(len), one, ValueRange{acc0, r2[0]}, [&](OpBuilder& b3, Location l3, Value j, ValueRange r3) {
        Value idx = reverse ? Value(b3.create<arith::SubIOp>(l3, last, j)) : j;
        Value v = b3.create<vector::TransferReadOp>(l3, vt, x3, ValueRange{o, idx, kk}, pad, in_bounds);
        if (acc_d != d) v = b3.create<arith::ExtFOp>(l3, at, v);
        Value acc = combine(b3, l3, k, acc_d, v, r3[0]);
        Value y = acc_d != d ? Value(b3.create<arith::TruncFOp>(l3, vt, acc)) : acc;
        Value r = b3.create<vector::TransferWriteOp>(l3, y, r3[1], ValueRange{o, idx, kk}, in_bounds).getResult();
        b3.create<scf::YieldOp>(l3, ValueRange{acc, r});
      });
      b2.create<scf::YieldOp>(l2, loop_j.getResult(1));
    });
    b1.create<scf::YieldOp>(l1, loop_k.getResult(0));
  });
  return loop_o.getResult(0);
}

/// The type a scan accumulates in: the reference's for sums and products, the compute type for
/// max/min (exact in any type).
DType scan_accumulator(Kind k, DType d) {
  if (k == Kind::max || k == Kind::min) return d == DType::float16 || d == DType::bfloat16 ? DType::float32 : d;
  if (d == DType::float32) return DType::float64;
  if (d == DType::complex64) return DType::complex128;
  return is_float(d) && d != DType::float64 ? DType::float32 : d;
}

template <Kind K>
std::vector<Value> scan_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  OpBuilder& b = c.b;
  const AbstractArray& x = in[0].aval;
  if (has_no_elements(x)) return {empty(c, out[0])};
  const int64_t axis = e.params.get_int("axis");
  const bool reverse = e.params.get_bool("reverse");
  // [outer, len, inner] as dims: products of the operand's dims, symbolic ones included (a
  // polymorphic program's extents are then computed from its size arguments).
  auto product = [&](int64_t from, int64_t to) {
    int64_t p = 1;
    for (int64_t k = from; k < to; ++k) p = mul_dims(p, x.shape[size_t(k)]);
    return p;
  };
  const int64_t outer = product(0, axis), len = x.shape[size_t(axis)], inner = product(axis + 1, x.ndim());
  const DType d = x.dtype, acc_d = scan_accumulator(K, d);
  const AbstractArray shape3{Shape({outer, len, inner}), d, false};
  Value x3 = reshape_to(c, as_tensor(c, in[0]), x.shape, shape3);
  const bool dynamic = is_symbolic(shape3.shape);
  if (!dynamic && !lowering_for_gpu(c) && (d == DType::float32 || d == DType::float64 || d == DType::int32 || d == DType::int64)) {
    // lanes: f32 sums and products run in f64 (32 x f64 = 4 zmm)
    int64_t w = std::min<int64_t>(inner, d == DType::float32 ? 32 : 16);
    while (w > 1 && inner % w != 0) --w;
    if (w >= 4) return {reshape_to(c, scan_vectorized(c, K, x3, shape3, d, acc_d, reverse, w), shape3.shape, out[0])};
  }
  Location l = c.loc;
  Value zero = b.create<arith::ConstantIndexOp>(l, 0), one = b.create<arith::ConstantIndexOp>(l, 1);
  Value n_outer = dim_value(c, outer), n_inner = dim_value(c, inner), n_len = dim_value(c, len);
  Value last = b.create<arith::SubIOp>(l, n_len, one);
  // One line (o, k) along the axis, in the reference's order, written into `into` at where(at).
  auto scan_line = [&](OpBuilder& b2, Location l2, Value o, Value k, Value into,
                       const std::function<SmallVector<Value>(Value)>& where) {
    Value acc0 = identity(b2, l2, K, acc_d);
    auto loop_j = b2.create<scf::ForOp>(l2, zero, n_len, one, ValueRange{acc0, into}, [&](OpBuilder& b3, Location l3, Value j, ValueRange r3) {
      Value at = reverse ? Value(b3.create<arith::SubIOp>(l3, last, j)) : j;
      Value v = to_compute(b3, l3, b3.create<tensor::ExtractOp>(l3, x3, ValueRange{o, at, k}), d);
      v = convert_scalar(b3, l3, v, d, acc_d);
      Value acc = combine(b3, l3, K, acc_d, v, r3[0]);
      Value y = from_compute(b3, l3, convert_scalar(b3, l3, acc, acc_d, d), d);
      Value r = b3.create<tensor::InsertOp>(l3, y, r3[1], where(at));
      b3.create<scf::YieldOp>(l3, ValueRange{acc, r});
    });
    return loop_j.getResult(1);
  };
  if (lowering_for_gpu(c) && !dynamic) {  // a thread per line (gpu_lines.h)
    Value y3 = lines_in_parallel(c, empty(c, shape3), [&](OpBuilder& b2, Location l2, Value o, Value k, Value line) {
      return scan_line(b2, l2, o, k, line, [](Value at) { return SmallVector<Value>{at}; });
    });
    return {reshape_to(c, y3, shape3.shape, out[0])};
  }
  auto loop_o = b.create<scf::ForOp>(l, zero, n_outer, one, ValueRange{empty(c, shape3)}, [&](OpBuilder& b1, Location l1, Value o, ValueRange r1) {
    auto loop_k = b1.create<scf::ForOp>(l1, zero, n_inner, one, r1, [&](OpBuilder& b2, Location l2, Value k, ValueRange r2) {
      Value line = scan_line(b2, l2, o, k, r2[0], [&](Value at) { return SmallVector<Value>{o, at, k}; });
      b2.create<scf::YieldOp>(l2, line);
    });
    b1.create<scf::YieldOp>(l1, loop_k.getResult(0));
  });
  return {reshape_to(c, loop_o.getResult(0), shape3.shape, out[0])};
}

}  // namespace

void add_reduce_lowerings(LowerTable& t) {
  t[size_t(Prim::cumsum)] = &scan_rule<Kind::sum>;
  t[size_t(Prim::cumprod)] = &scan_rule<Kind::prod>;
  t[size_t(Prim::cummax)] = &scan_rule<Kind::max>;
  t[size_t(Prim::cummin)] = &scan_rule<Kind::min>;
  t[size_t(Prim::reduce_sum)] = &reduce_rule<Kind::sum>;
  t[size_t(Prim::reduce_prod)] = &reduce_rule<Kind::prod>;
  t[size_t(Prim::reduce_max)] = &reduce_rule<Kind::max>;
  t[size_t(Prim::reduce_min)] = &reduce_rule<Kind::min>;
  t[size_t(Prim::reduce_and)] = &reduce_rule<Kind::and_>;
  t[size_t(Prim::reduce_or)] = &reduce_rule<Kind::or_>;
  t[size_t(Prim::argmax)] = &argminmax_rule<true>;
  t[size_t(Prim::argmin)] = &argminmax_rule<false>;
}

}  // namespace fluxion::lowering
