#include "lowering/gpu_windows.h"

#include <functional>
#include <limits>
#include <utility>

#include "ir/error.h"
#include "lowering/lower_complex.h"
#include "prims/conv_geometry.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

// Index arithmetic inside a linalg body.
struct Ix {
  OpBuilder& b;
  Location l;
  Value c(int64_t v) { return b.create<arith::ConstantIndexOp>(l, v); }
  Value loop(unsigned d) { return b.create<linalg::IndexOp>(l, uint64_t(d)); }
  Value add(Value x, Value y) { return b.create<arith::AddIOp>(l, x, y); }
  Value mul(Value x, int64_t k) { return k == 1 ? x : Value(b.create<arith::MulIOp>(l, x, c(k))); }
  Value div(Value x, int64_t k) { return k == 1 ? x : Value(b.create<arith::DivSIOp>(l, x, c(k))); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) { return b.create<arith::CmpIOp>(l, p, x, y); }
  Value both(Value x, Value y) { return b.create<arith::AndIOp>(l, x, y); }
  Value yes() { return b.create<arith::ConstantOp>(l, b.getBoolAttr(true)); }
};

// Where loop position `o` with window offset `w` reads a dim of `size` elements dilated by `dil`
// and padded by `lo` in front: q = o * stride + w * wdil - lo is element q / dil when q >= 0, dil
// divides q and q / dil < size. `index` is clamped into the dim either way (the read is then
// discarded), so that no thread reads outside the buffer.
struct Tap {
  Value index, valid;
};
Tap tap(Ix& x, Value o, Value w, int64_t stride, int64_t wdil, int64_t lo, int64_t dil, int64_t size) {
  using P = arith::CmpIPredicate;
  Value q = x.add(x.add(x.mul(o, stride), x.mul(w, wdil)), x.c(-lo));
  Value valid = x.cmp(P::sge, q, x.c(0));
  Value nonneg = x.b.create<arith::MaxSIOp>(x.l, q, x.c(0));
  if (dil != 1) valid = x.both(valid, x.cmp(P::eq, x.b.create<arith::RemSIOp>(x.l, nonneg, x.c(dil)), x.c(0)));
  Value i = x.div(nonneg, dil);
  valid = x.both(valid, x.cmp(P::slt, i, x.c(size)));
  return {x.b.create<arith::MinSIOp>(x.l, i, x.c(std::max<int64_t>(size - 1, 0))), valid};
}

using Body = std::function<SmallVector<Value>(OpBuilder&, Location, ValueRange)>;

// One linalg.generic of `loops` loops, the first `parallel` of them the outputs' dims (identity
// maps), the rest reductions; `ins` are read through `in_maps`. `window`, when given, is the
// extent of the reduction loops that no input reads (linalg takes every loop's extent from an
// operand): a tensor.empty of that shape goes in as the last input, which the body never sees.
SmallVector<Value> window_generic(LowerCtx& c, unsigned loops, unsigned parallel, ValueRange ins,
                                  ArrayRef<AffineMap> in_maps, ValueRange inits, const Body& body,
                                  const Shape* window = nullptr) {
  MLIRContext* ctx = c.b.getContext();
  SmallVector<Value> inputs(ins.begin(), ins.end());
  SmallVector<AffineMap> maps(in_maps.begin(), in_maps.end());
  if (window) {
    SmallVector<AffineExpr> w;
    for (unsigned d = parallel; d < loops; ++d) w.push_back(getAffineDimExpr(d, ctx));
    inputs.push_back(empty_of(c, *window, c.b.getI8Type()));
    maps.push_back(AffineMap::get(loops, 0, w, ctx));
  }
  SmallVector<AffineExpr> kept;
  for (unsigned d = 0; d < parallel; ++d) kept.push_back(getAffineDimExpr(d, ctx));
  for (size_t i = 0; i < inits.size(); ++i) maps.push_back(AffineMap::get(loops, 0, kept, ctx));
  SmallVector<utils::IteratorType> iters(loops, utils::IteratorType::reduction);
  for (unsigned d = 0; d < parallel; ++d) iters[d] = utils::IteratorType::parallel;
  SmallVector<Type> types;
  for (Value v : inits) types.push_back(v.getType());
  auto g = c.b.create<linalg::GenericOp>(c.loc, types, inputs, inits, maps, iters,
                                         [&](OpBuilder& b, Location l, ValueRange args) {
                                           SmallVector<Value> seen(args.begin(), args.end());
                                           if (window) seen.erase(seen.begin() + long(ins.size()));
                                           b.create<linalg::YieldOp>(l, body(b, l, seen));
                                         });
  return SmallVector<Value>(g.getResults().begin(), g.getResults().end());
}

Value zero_of(OpBuilder& b, Location l, DType d) { return from_compute(b, l, constant(b, l, d, 0), d); }

// `t` (dtype `from`) as dtype `to`, elementwise (an accumulator back to the result's dtype).
Value converted(LowerCtx& c, Value t, const Shape& s, DType from, DType to) {
  if (from == to) return t;
  const Operand o{t, AbstractArray{s, from, false}};
  return elementwise(c, AbstractArray{s, to, false}, std::span<const Operand>(&o, 1),
                     [&](OpBuilder& b, Location l, ValueRange a) {
                       Value v = to_compute(b, l, a[0], from);
                       DType at = from;
                       // A double sum reaches a 16-bit float through float, as the reference's
                       // T(float(acc)) does (and no f64 -> f16 instruction is asked for).
                       if (from == DType::float64 && (to == DType::float16 || to == DType::bfloat16)) {
                         v = convert_scalar(b, l, v, from, DType::float32);
                         at = DType::float32;
                       }
                       return from_compute(b, l, convert_scalar(b, l, v, at, to), to);
                     });
}

// ---- conv_general_dilated -----------------------------------------------------------------------
// Loops: the output's dims in its own order, then the input features of the group, then the
// window (the reference's order: feature, then kernel offset). Floats accumulate in float (double
// with a float64 operand or result), integers in the result's width (wrapping, as the reference's
// uint64 does once truncated).
std::vector<Value> conv(LowerCtx& c, const Eqn& e, std::span<const Operand> in, const AbstractArray& out) {
  const conv::ConvParams p = conv::conv_params(e.params);
  const conv::ConvGeometry g = conv::conv_geometry(in[0].aval.shape, in[1].aval.shape, p);
  const DType xd = in[0].aval.dtype, od = out.dtype;
  const DType acc_d = !is_float(od) || is_complex(od) ? od
                      : xd == DType::float64 || od == DType::float64 ? DType::float64
                                                                     : DType::float32;
  MLIRContext* ctx = c.b.getContext();
  const unsigned nsp = unsigned(g.nsp), rank = nsp + 2, loops = rank + 1 + nsp;
  auto at = [&](int64_t i) { return size_t(i); };
  SmallVector<AffineExpr> rhs_exprs(rank);
  rhs_exprs[at(p.rhs_spec[0])] = getAffineDimExpr(unsigned(p.out_spec[1]), ctx);
  rhs_exprs[at(p.rhs_spec[1])] = getAffineDimExpr(rank, ctx);
  for (unsigned s = 0; s < nsp; ++s) rhs_exprs[at(p.rhs_spec[2 + s])] = getAffineDimExpr(rank + 1 + s, ctx);
  const AffineMap rhs_map = AffineMap::get(loops, 0, rhs_exprs, ctx);
  Value x = as_tensor(c, in[0]);
  const AbstractArray acc{out.shape, acc_d, false};
  Value init = filled(c, acc, zero_of(c.b, c.loc, acc_d));
  const int64_t per_group = g.o / g.groups, per_batch_group = g.o / g.batch_groups;
  auto r = window_generic(c, loops, rank, ValueRange{as_tensor(c, in[1])}, {rhs_map}, ValueRange{init},
                          [&](OpBuilder& b, Location l, ValueRange args) -> SmallVector<Value> {
    Ix ix{b, l};
    Value of = ix.loop(unsigned(p.out_spec[1]));
    SmallVector<Value> where(rank);
    where[at(p.lhs_spec[0])] = ix.add(ix.mul(ix.div(of, per_batch_group), g.out_n), ix.loop(unsigned(p.out_spec[0])));
    where[at(p.lhs_spec[1])] = ix.add(ix.mul(ix.div(of, per_group), g.ci), ix.loop(rank));
    Value valid = ix.yes();
    for (unsigned s = 0; s < nsp; ++s) {
      const Tap t = tap(ix, ix.loop(unsigned(p.out_spec[2 + s])), ix.loop(rank + 1 + s), g.stride[s], g.rhs_dil[s],
                        g.pad_lo[s], g.lhs_dil[s], g.in_sp[s]);
      where[at(p.lhs_spec[2 + s])] = t.index;
      valid = ix.both(valid, t.valid);
    }
    Value v = convert_scalar(b, l, to_compute(b, l, b.create<tensor::ExtractOp>(l, x, where), xd), xd, acc_d);
    Value w = convert_scalar(b, l, to_compute(b, l, args[0], xd), xd, acc_d);
    Value sum = add_scalars(b, l, args[1], mul_scalars(b, l, v, w, acc_d), acc_d);
    return {b.create<arith::SelectOp>(l, valid, sum, args[1])};
  });
  return {converted(c, r[0], out.shape, acc_d, od)};
}

// ---- the reduce_window family -------------------------------------------------------------------

struct Window {
  IntList dims, strides, padding, base_dilation, window_dilation;
  explicit Window(const Params& p)
      : dims(p.get_ints("window_dimensions")), strides(p.get_ints("window_strides")), padding(p.get_ints("padding")),
        base_dilation(p.get_ints("base_dilation")), window_dilation(p.get_ints("window_dilation")) {}
};

// Loops: the windows (the output's dims), then the window's offsets. `where` gets the operand
// element each reads and whether it is one (not padding or a dilation hole).
Value window_read(Ix& ix, const Window& w, const Shape& x, SmallVector<Value>& where) {
  const unsigned rank = unsigned(x.size());
  Value valid = ix.yes();
  where.clear();
  for (unsigned d = 0; d < rank; ++d) {
    const Tap t = tap(ix, ix.loop(d), ix.loop(rank + d), w.strides[d], w.window_dilation[d], w.padding[2 * d],
                      w.base_dilation[d], x[d]);
    where.push_back(t.index);
    valid = ix.both(valid, t.valid);
  }
  return valid;
}

// What one window offset adds to its output element: a value (compute type of the sum's dtype)
// and whether it counts.
using WindowTerm = std::function<std::pair<Value, Value>(OpBuilder&, Location, Ix&)>;

// Per output element of `out`, the sum over the window's offsets of the terms that count, in
// acc_d, as dtype d: reduce_window_sum and the max-pool gradient's gather.
Value window_masked_sum(LowerCtx& c, const Shape& out, const Shape& window, DType d, DType acc_d, const WindowTerm& term) {
  const unsigned rank = unsigned(out.size());
  Value init = filled(c, AbstractArray{out, acc_d, false}, zero_of(c.b, c.loc, acc_d));
  auto r = window_generic(c, 2 * rank, rank, {}, {}, ValueRange{init},
                          [&](OpBuilder& b, Location l, ValueRange args) -> SmallVector<Value> {
    Ix ix{b, l};
    auto [v, counts] = term(b, l, ix);
    return {b.create<arith::SelectOp>(l, counts, add_scalars(b, l, args[0], v, acc_d), args[0])};
  }, &window);
  return converted(c, r[0], out, acc_d, d);
}

// Sums in double for floats, in the operand's width for integers (the reference: uint64, wrapping).
Value window_sum(LowerCtx& c, const Window& w, const Operand& in, const AbstractArray& out) {
  const DType d = in.aval.dtype;
  const DType acc_d = is_float(d) && !is_complex(d) ? DType::float64 : d;
  Value x = as_tensor(c, in);
  return window_masked_sum(c, out.shape, Shape(w.dims), d, acc_d, [&](OpBuilder& b, Location l, Ix& ix) {
    SmallVector<Value> where;
    Value valid = window_read(ix, w, in.aval.shape, where);
    return std::pair{convert_scalar(b, l, to_compute(b, l, b.create<tensor::ExtractOp>(l, x, where), d), d, acc_d), valid};
  });
}

// The identity of max (or min) in d's storage type: what a window that reads nothing gives.
Value extremum_identity(OpBuilder& b, Location l, DType d, bool is_max) {
  if (is_float(d)) {
    const double inf = std::numeric_limits<double>::infinity();
    return from_compute(b, l, constant(b, l, d, is_max ? -inf : inf), d);
  }
  const unsigned bits = storage_type(b.getContext(), d).getIntOrFloatBitWidth();
  const APInt v = is_signed_int(d) ? (is_max ? APInt::getSignedMinValue(bits) : APInt::getSignedMaxValue(bits))
                                   : (is_max ? APInt::getMinValue(bits) : APInt::getMaxValue(bits));
  return b.create<arith::ConstantOp>(l, b.getIntegerAttr(storage_type(b.getContext(), d), v));
}

// Whether candidate `v` replaces `best` (both compute values; best seen first): NaN wins and
// stays, else strictly better -- the reference's `better` (prims/reduce_window.cpp).
Value beats(OpBuilder& b, Location l, DType d, Value v, Value best, bool is_max) {
  if (is_float(d)) {
    using P = arith::CmpFPredicate;
    Value best_nan = b.create<arith::CmpFOp>(l, P::UNO, best, best);
    Value v_nan = b.create<arith::CmpFOp>(l, P::UNO, v, v);
    Value better = b.create<arith::CmpFOp>(l, is_max ? P::OGT : P::OLT, v, best);
    Value wins = b.create<arith::OrIOp>(l, v_nan, better);
    Value t = b.create<arith::ConstantOp>(l, b.getBoolAttr(true));
    return b.create<arith::AndIOp>(l, b.create<arith::XOrIOp>(l, best_nan, t), wins);
  }
  using P = arith::CmpIPredicate;
  const bool s = is_signed_int(d);
  return b.create<arith::CmpIOp>(l, is_max ? (s ? P::sgt : P::ugt) : (s ? P::slt : P::ult), v, best);
}

// What a selection carries besides the best value: the tangent there (select_and_gather_add), the
// operand's flat offset (select_and_scatter_add's first kernel), or nothing (reduce_window_max/min).
enum class Carry { nothing, tangent, offset };

// Per window of x: [found (bool storage), the first best element of x, the carried value].
SmallVector<Value> select_windows(LowerCtx& c, const Window& w, const Operand& x_in, const Operand* t_in,
                                  const Shape& out, bool is_max, Carry carry) {
  OpBuilder& b = c.b;
  const DType d = x_in.aval.dtype;
  const Shape& xs = x_in.aval.shape;
  const unsigned rank = unsigned(out.size());
  Value x = as_tensor(c, x_in), t = t_in ? as_tensor(c, *t_in) : Value();
  SmallVector<Value> inits{filled(c, AbstractArray{out, DType::bool_, false}, bool_to_storage(b, c.loc, b.create<arith::ConstantOp>(c.loc, b.getBoolAttr(false)))),
                           filled(c, AbstractArray{out, d, false}, extremum_identity(b, c.loc, d, is_max))};
  if (carry == Carry::tangent) inits.push_back(filled(c, AbstractArray{out, d, false}, zero_of(b, c.loc, d)));
  if (carry == Carry::offset)
    inits.push_back(filled(c, AbstractArray{out, DType::int64, false}, b.create<arith::ConstantOp>(c.loc, b.getI64IntegerAttr(-1))));
  const IntList strides = strides_of(xs);
  const Shape window(w.dims);
  return window_generic(c, 2 * rank, rank, {}, {}, inits, [&](OpBuilder& nb, Location l, ValueRange args) -> SmallVector<Value> {
    Ix ix{nb, l};
    SmallVector<Value> where;
    Value valid = window_read(ix, w, xs, where);
    Value v = nb.create<tensor::ExtractOp>(l, x, where);
    Value found = storage_to_bool(nb, l, args[0]);
    Value first = nb.create<arith::XOrIOp>(l, found, ix.yes());
    Value better = beats(nb, l, d, to_compute(nb, l, v, d), to_compute(nb, l, args[1], d), is_max);
    Value take = ix.both(valid, nb.create<arith::OrIOp>(l, first, better));
    SmallVector<Value> next{nb.create<arith::SelectOp>(l, take, bool_to_storage(nb, l, ix.yes()), args[0]),
                            nb.create<arith::SelectOp>(l, take, v, args[1])};
    if (carry == Carry::tangent) next.push_back(nb.create<arith::SelectOp>(l, take, nb.create<tensor::ExtractOp>(l, t, where), args[2]));
    if (carry == Carry::offset) {
      Value off = ix.c(0);
      for (unsigned k = 0; k < rank; ++k) off = ix.add(off, ix.mul(where[k], strides[k]));
      off = nb.create<arith::IndexCastOp>(l, nb.getI64Type(), off);
      next.push_back(nb.create<arith::SelectOp>(l, take, off, args[2]));
    }
    return next;
  }, &window);
}

// select_and_scatter_add s x: each operand element sums, in the windows' order, the sources of the
// windows whose selection (`chosen`: flat offsets, -1 for none) is that element. The window
// offsets run backwards, so that the windows holding an element come in the reference's order.
Value gather_selected(LowerCtx& c, const Window& w, const Operand& s_in, Value chosen, const AbstractArray& x) {
  const DType d = s_in.aval.dtype;
  const DType acc_d = d == DType::float64 ? DType::float64 : DType::float32;  // the reference's compute_t
  const Shape& windows = s_in.aval.shape;
  const unsigned rank = unsigned(x.ndim());
  const IntList strides = strides_of(x.shape);
  Value s = as_tensor(c, s_in);
  return window_masked_sum(c, x.shape, Shape(w.dims), d, acc_d, [&](OpBuilder& b, Location l, Ix& ix) {
    SmallVector<Value> at;
    Value valid = ix.yes(), self = ix.c(0);
    for (unsigned k = 0; k < rank; ++k) {
      Value back = b.create<arith::SubIOp>(l, ix.c(w.dims[k] - 1), ix.loop(rank + k));
      // The window o with o * stride + back * wdil - lo = p * base_dilation.
      const Tap t = tap(ix, ix.loop(k), back, w.base_dilation[k], -w.window_dilation[k], -w.padding[2 * k],
                        w.strides[k], windows[k]);
      at.push_back(t.index);
      valid = ix.both(valid, t.valid);
      self = ix.add(self, ix.mul(ix.loop(k), strides[k]));
    }
    Value sel = b.create<tensor::ExtractOp>(l, chosen, at);
    Value hit = ix.both(valid, b.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, sel,
                                                       b.create<arith::IndexCastOp>(l, b.getI64Type(), self)));
    return std::pair{convert_scalar(b, l, to_compute(b, l, b.create<tensor::ExtractOp>(l, s, at), d), d, acc_d), hit};
  });
}

}  // namespace

std::vector<Value> gpu_windowed(LowerCtx& c, const Eqn& e, std::span<const Operand> in,
                                std::span<const AbstractArray> out) {
  if (out[0].size() == 0) return {empty(c, out[0])};
  if (e.prim == Prim::conv_general_dilated) return conv(c, e, in, out[0]);
  const Window w(e.params);
  switch (e.prim) {
    case Prim::reduce_window_sum: return {window_sum(c, w, in[0], out[0])};
    case Prim::reduce_window_max:
    case Prim::reduce_window_min:
      return {select_windows(c, w, in[0], nullptr, out[0].shape, e.prim == Prim::reduce_window_max, Carry::nothing)[1]};
    case Prim::select_and_gather_add:  // t x
      return {select_windows(c, w, in[1], &in[0], out[0].shape, e.params.get_bool("select_max"), Carry::tangent)[2]};
    case Prim::select_and_scatter_add: {  // s x
      Value chosen = select_windows(c, w, in[1], nullptr, in[0].aval.shape, e.params.get_bool("select_max"), Carry::offset)[2];
      return {gather_selected(c, w, in[0], chosen, out[0])};
    }
    default: break;
  }
  throw CompileError("CompileError: " + std::string(prim_name(e.prim)) + " is not a windowed primitive (gpu_windowed)");
}

}  // namespace fluxion::lowering
