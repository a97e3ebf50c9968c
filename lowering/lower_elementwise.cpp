// Lowering of the elementwise families (prims/unary.cpp, binary.cpp, compare.cpp, convert.cpp):
// each eqn becomes one linalg.generic whose body mirrors the reference kernel's scalar function,
// so that fusion can merge chains of them into a single loop nest.
//
// Transcendentals stay math.* ops: in f32, exp, log, tanh, erf and logistic become vectorizable
// polynomial approximations, and sin, cos, log1p, expm1, exp2, tan, the inverse and hyperbolic
// functions, cbrt, pow and atan2 call glibc's vector libm; in f64 all of them call libmvec's f64 variants
// (lowering/accurate_math.cpp). lgamma calls libm, the function the reference kernel calls.
#include "lowering/lower.h"
#include "lowering/lower_complex.h"

#include <algorithm>

namespace fluxion::lowering {

using namespace mlir;

namespace {

using ComputeFn = std::function<Value(LowerCtx&, OpBuilder&, Location, ValueRange /*compute values*/)>;

// The generic shape of every rule here: operands converted to their compute types, `f`, and the
// result converted to the output's storage type.
std::vector<Value> lower_map(LowerCtx& c, std::span<const Operand> in, const AbstractArray& out, const ComputeFn& f) {
  return {elementwise(c, out, in, [&](OpBuilder& b, Location l, ValueRange args) {
    SmallVector<Value> xs;
    for (size_t i = 0; i < args.size(); ++i) xs.push_back(to_compute(b, l, args[i], in[i].aval.dtype));
    return from_compute(b, l, f(c, b, l, xs), out.dtype);
  })};
}

Value libm(LowerCtx& c, OpBuilder& b, Location l, const std::string& name, ValueRange args) {
  Type t = args[0].getType();
  std::string sym = t.isF32() ? name + "f" : name;
  SmallVector<Type> arg_types(args.size(), t);
  func::FuncOp f = c.external(sym, arg_types, TypeRange{t});
  return b.create<func::CallOp>(l, f, args).getResult(0);
}

// A math op for f32 and f64 (fx-accurate-math and fx-math-approx decide how it is computed), libm
// for anything else.
template <class MathOp, class... Xs>
Value approx_or_libm(LowerCtx& c, OpBuilder& b, Location l, const char* name, Value x, Xs... more) {
  if (x.getType().isF32() || x.getType().isF64()) return b.create<MathOp>(l, x, more...);
  return libm(c, b, l, name, {x, more...});
}

// ---- unary ----------------------------------------------------------------------------------------
using UnaryFn = Value (*)(LowerCtx&, OpBuilder&, Location, Value, DType, const Params&);

template <UnaryFn F>
std::vector<Value> unary(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  const DType d = in[0].aval.dtype;
  if (is_complex(d)) return complex_elementwise(c, e, in, out);
  return lower_map(c, in, out[0], [&](LowerCtx& cc, OpBuilder& b, Location l, ValueRange x) {
    return F(cc, b, l, x[0], d, e.params);
  });
}

// A libm name as a template argument, so that a math primitive's lowering is one table row.
template <size_t N>
struct LibmName {
  char s[N];
  constexpr LibmName(const char (&name)[N]) { std::copy_n(name, N, s); }
};

// f32 and f64: a math op, which fx-accurate-math turns into a call of glibc's vector libm (or of
// libm); other types (never reached: f16/bf16 compute in f32): libm.
template <class Op, LibmName fn>
Value math_unary(LowerCtx& c, OpBuilder& b, Location l, Value x, DType, const Params&) {
  return approx_or_libm<Op>(c, b, l, fn.s, x);
}
Value lgamma_(LowerCtx& c, OpBuilder& b, Location l, Value x, DType, const Params&) { return libm(c, b, l, "lgamma", {x}); }

// 1 / (1 + exp(-x)), as the reference.
Value logistic_(LowerCtx& c, OpBuilder& b, Location l, Value x, DType d, const Params& p) {
  Value one = constant(b, l, d, 1.0);
  Value ex = math_unary<math::ExpOp, "exp">(c, b, l, b.create<arith::NegFOp>(l, x), d, p);
  return b.create<arith::DivFOp>(l, one, b.create<arith::AddFOp>(l, one, ex));
}
Value sqrt_(LowerCtx&, OpBuilder& b, Location l, Value x, DType, const Params&) { return b.create<math::SqrtOp>(l, x); }
Value rsqrt_(LowerCtx&, OpBuilder& b, Location l, Value x, DType d, const Params&) {
  return b.create<arith::DivFOp>(l, constant(b, l, d, 1.0), b.create<math::SqrtOp>(l, x));
}
Value floor_(LowerCtx&, OpBuilder& b, Location l, Value x, DType, const Params&) { return b.create<math::FloorOp>(l, x); }
Value ceil_(LowerCtx&, OpBuilder& b, Location l, Value x, DType, const Params&) { return b.create<math::CeilOp>(l, x); }
Value round_(LowerCtx&, OpBuilder& b, Location l, Value x, DType, const Params& p) {
  if (p.get_int("rounding_method") == 0) return b.create<math::RoundOp>(l, x);  // half away from zero
  return b.create<math::RoundEvenOp>(l, x);
}
Value is_finite_(LowerCtx&, OpBuilder& b, Location l, Value x, DType d, const Params&) {
  Value inf = constant(b, l, d, std::numeric_limits<double>::infinity());
  return bool_to_storage(b, l, b.create<arith::CmpFOp>(l, arith::CmpFPredicate::OLT, b.create<math::AbsFOp>(l, x), inf));
}
Value neg_(LowerCtx&, OpBuilder& b, Location l, Value x, DType d, const Params&) {
  if (is_float(d)) return b.create<arith::NegFOp>(l, x);
  return b.create<arith::SubIOp>(l, constant(b, l, d, 0), x);
}
Value sign_(LowerCtx&, OpBuilder& b, Location l, Value x, DType d, const Params&) {
  Value zero = constant(b, l, d, 0), one = constant(b, l, d, 1);
  if (is_float(d)) {
    Value pos = b.create<arith::CmpFOp>(l, arith::CmpFPredicate::OGT, x, zero);
    Value neg = b.create<arith::CmpFOp>(l, arith::CmpFPredicate::OLT, x, zero);
    return b.create<arith::SelectOp>(l, pos, one, b.create<arith::SelectOp>(l, neg, constant(b, l, d, -1), x));
  }
  if (is_unsigned_int(d)) {
    Value pos = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::ugt, x, zero);
    return b.create<arith::SelectOp>(l, pos, one, x);
  }
  Value pos = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::sgt, x, zero);
  Value neg = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, x, zero);
  return b.create<arith::SelectOp>(l, pos, one, b.create<arith::SelectOp>(l, neg, constant(b, l, d, -1), x));
}
Value abs_(LowerCtx&, OpBuilder& b, Location l, Value x, DType d, const Params&) {
  if (is_float(d)) return b.create<math::AbsFOp>(l, x);
  if (is_unsigned_int(d)) return x;
  return b.create<math::AbsIOp>(l, x);
}
Value not_(LowerCtx&, OpBuilder& b, Location l, Value x, DType d, const Params&) {
  return b.create<arith::XOrIOp>(l, x, constant(b, l, d, d == DType::bool_ ? 1 : -1));
}
Value identity_(LowerCtx&, OpBuilder&, Location, Value x, DType, const Params&) { return x; }
// Square-and-multiply, unrolled at compile time, in the order the reference multiplies.
Value integer_pow_(LowerCtx&, OpBuilder& b, Location l, Value x, DType d, const Params& p) {
  const int64_t y = p.get_int("y");
  uint64_t n = uint64_t(y < 0 ? -y : y);
  auto mul = [&](Value a, Value c) -> Value {
    if (is_float(d)) return b.create<arith::MulFOp>(l, a, c);
    return b.create<arith::MulIOp>(l, a, c);
  };
  Value acc = constant(b, l, d, 1), base = x;
  while (n) {
    if (n & 1u) acc = mul(acc, base);
    n >>= 1;
    if (n) base = mul(base, base);
  }
  if (y < 0) return b.create<arith::DivFOp>(l, constant(b, l, d, 1), acc);
  return acc;
}

// ---- binary ---------------------------------------------------------------------------------------
using BinaryFn = Value (*)(LowerCtx&, OpBuilder&, Location, Value, Value, DType);

template <BinaryFn F>
std::vector<Value> binary(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  const DType d = in[0].aval.dtype;
  if (is_complex(d)) return complex_elementwise(c, e, in, out);
  return lower_map(c, in, out[0], [&](LowerCtx& cc, OpBuilder& b, Location l, ValueRange x) {
    return F(cc, b, l, x[0], x[1], d);
  });
}

Value add_(LowerCtx&, OpBuilder& b, Location l, Value x, Value y, DType d) { return add_scalars(b, l, x, y, d); }
Value sub_(LowerCtx&, OpBuilder& b, Location l, Value x, Value y, DType d) {
  if (is_float(d)) return b.create<arith::SubFOp>(l, x, y);
  return b.create<arith::SubIOp>(l, x, y);
}
Value mul_(LowerCtx&, OpBuilder& b, Location l, Value x, Value y, DType d) { return mul_scalars(b, l, x, y, d); }
// Integer division and remainder never trap: x/0 = -1 and x%0 = x (XLA), and x/-1 = -x, x%-1 = 0
// (which avoids INT_MIN / -1). The divisor is made safe first so the hardware op cannot fault.
struct SafeDivisor {
  Value is_zero, is_minus_one, divisor;
};
SafeDivisor safe_divisor(OpBuilder& b, Location l, Value y, DType d) {
  Value zero = constant(b, l, d, 0), one = constant(b, l, d, 1);
  SafeDivisor s;
  s.is_zero = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, y, zero);
  Value unsafe = s.is_zero;
  if (is_signed_int(d)) {
    s.is_minus_one = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, y, constant(b, l, d, -1));
    unsafe = b.create<arith::OrIOp>(l, unsafe, s.is_minus_one);
  }
  s.divisor = b.create<arith::SelectOp>(l, unsafe, one, y);
  return s;
}
Value div_(LowerCtx&, OpBuilder& b, Location l, Value x, Value y, DType d) {
  if (is_float(d)) return b.create<arith::DivFOp>(l, x, y);
  SafeDivisor s = safe_divisor(b, l, y, d);
  Value q = is_signed_int(d) ? Value(b.create<arith::DivSIOp>(l, x, s.divisor)) : Value(b.create<arith::DivUIOp>(l, x, s.divisor));
  if (is_signed_int(d)) q = b.create<arith::SelectOp>(l, s.is_minus_one, b.create<arith::SubIOp>(l, constant(b, l, d, 0), x), q);
  return b.create<arith::SelectOp>(l, s.is_zero, constant(b, l, d, -1), q);
}
Value rem_(LowerCtx& c, OpBuilder& b, Location l, Value x, Value y, DType d) {
  if (is_float(d)) return libm(c, b, l, "fmod", {x, y});
  SafeDivisor s = safe_divisor(b, l, y, d);
  Value r = is_signed_int(d) ? Value(b.create<arith::RemSIOp>(l, x, s.divisor)) : Value(b.create<arith::RemUIOp>(l, x, s.divisor));
  if (is_signed_int(d)) r = b.create<arith::SelectOp>(l, s.is_minus_one, constant(b, l, d, 0), r);
  return b.create<arith::SelectOp>(l, s.is_zero, x, r);
}
Value pow_(LowerCtx& c, OpBuilder& b, Location l, Value x, Value y, DType) {
  return approx_or_libm<math::PowFOp>(c, b, l, "pow", x, y);
}
Value atan2_(LowerCtx& c, OpBuilder& b, Location l, Value x, Value y, DType) {
  return approx_or_libm<math::Atan2Op>(c, b, l, "atan2", x, y);
}

// x OP y for the comparison OP (lt, le, gt, ge, eq, ne) with the dtype's signedness; i1 result.
enum class Cmp { eq, ne, lt, le, gt, ge };
Value compare(OpBuilder& b, Location l, Cmp op, Value x, Value y, DType d) {
  if (is_float(d)) {
    static const arith::CmpFPredicate f[] = {arith::CmpFPredicate::OEQ, arith::CmpFPredicate::UNE,
                                             arith::CmpFPredicate::OLT, arith::CmpFPredicate::OLE,
                                             arith::CmpFPredicate::OGT, arith::CmpFPredicate::OGE};
    return b.create<arith::CmpFOp>(l, f[int(op)], x, y);
  }
  static const arith::CmpIPredicate s[] = {arith::CmpIPredicate::eq,  arith::CmpIPredicate::ne,
                                           arith::CmpIPredicate::slt, arith::CmpIPredicate::sle,
                                           arith::CmpIPredicate::sgt, arith::CmpIPredicate::sge};
  static const arith::CmpIPredicate u[] = {arith::CmpIPredicate::eq,  arith::CmpIPredicate::ne,
                                           arith::CmpIPredicate::ult, arith::CmpIPredicate::ule,
                                           arith::CmpIPredicate::ugt, arith::CmpIPredicate::uge};
  return b.create<arith::CmpIOp>(l, is_signed_int(d) ? s[int(op)] : u[int(op)], x, y);
}
Value is_nan(OpBuilder& b, Location l, Value x, DType d) {
  if (!is_float(d)) return b.create<arith::ConstantOp>(l, b.getBoolAttr(false));
  return b.create<arith::CmpFOp>(l, arith::CmpFPredicate::UNO, x, x);
}
// lax.max/min propagate NaN: (x > y || x != x) ? x : y.
template <Cmp C>
Value extremum_(LowerCtx&, OpBuilder& b, Location l, Value x, Value y, DType d) {
  Value pick_x = b.create<arith::OrIOp>(l, compare(b, l, C, x, y, d), is_nan(b, l, x, d));
  return b.create<arith::SelectOp>(l, pick_x, x, y);
}
Value and_(LowerCtx&, OpBuilder& b, Location l, Value x, Value y, DType) { return b.create<arith::AndIOp>(l, x, y); }
Value or_(LowerCtx&, OpBuilder& b, Location l, Value x, Value y, DType) { return b.create<arith::OrIOp>(l, x, y); }
Value xor_(LowerCtx&, OpBuilder& b, Location l, Value x, Value y, DType) { return b.create<arith::XOrIOp>(l, x, y); }
template <Cmp C>
Value compare_(LowerCtx&, OpBuilder& b, Location l, Value x, Value y, DType d) {
  return bool_to_storage(b, l, compare(b, l, C, x, y, d));
}

// ---- select, clamp, convert -----------------------------------------------------------------------
std::vector<Value> select_rule(LowerCtx& c, const Eqn&, std::span<const Operand> in, std::span<const AbstractArray> out) {
  return {elementwise(c, out[0], in, [](OpBuilder& b, Location l, ValueRange x) -> Value {
    return b.create<arith::SelectOp>(l, storage_to_bool(b, l, x[0]), x[1], x[2]);
  })};
}

// clamp(lo, x, hi): NaN passes through, else lo if x < lo, hi if x > hi.
std::vector<Value> clamp_rule(LowerCtx& c, const Eqn&, std::span<const Operand> in, std::span<const AbstractArray> out) {
  const DType d = in[1].aval.dtype;
  return lower_map(c, in, out[0], [d](LowerCtx&, OpBuilder& b, Location l, ValueRange x) -> Value {
    Value lo = x[0], v = x[1], hi = x[2];
    Value r = b.create<arith::SelectOp>(l, compare(b, l, Cmp::lt, v, lo, d), lo,
                                        b.create<arith::SelectOp>(l, compare(b, l, Cmp::gt, v, hi, d), hi, v));
    return b.create<arith::SelectOp>(l, is_nan(b, l, v, d), v, r);
  });
}

std::vector<Value> convert_rule(LowerCtx& c, const Eqn&, std::span<const Operand> in, std::span<const AbstractArray> out) {
  const DType from = in[0].aval.dtype, to = out[0].dtype;
  return lower_map(c, in, out[0], [from, to](LowerCtx&, OpBuilder& b, Location l, ValueRange x) {
    return convert_scalar(b, l, x[0], from, to);
  });
}

}  // namespace

void add_elementwise_lowerings(LowerTable& t) {
  auto set = [&](Prim p, LowerRule r) { t[size_t(p)] = r; };
  set(Prim::neg, &unary<neg_>);
  set(Prim::sign, &unary<sign_>);
  set(Prim::floor, &unary<floor_>);
  set(Prim::ceil, &unary<ceil_>);
  set(Prim::round, &unary<round_>);
  set(Prim::is_finite, &unary<is_finite_>);
  set(Prim::exp, &unary<math_unary<math::ExpOp, "exp">>);
  set(Prim::exp2, &unary<math_unary<math::Exp2Op, "exp2">>);
  set(Prim::log, &unary<math_unary<math::LogOp, "log">>);
  set(Prim::log1p, &unary<math_unary<math::Log1pOp, "log1p">>);
  set(Prim::expm1, &unary<math_unary<math::ExpM1Op, "expm1">>);
  set(Prim::tanh, &unary<math_unary<math::TanhOp, "tanh">>);
  set(Prim::logistic, &unary<logistic_>);
  set(Prim::sin, &unary<math_unary<math::SinOp, "sin">>);
  set(Prim::cos, &unary<math_unary<math::CosOp, "cos">>);
  set(Prim::tan, &unary<math_unary<math::TanOp, "tan">>);
  set(Prim::asin, &unary<math_unary<math::AsinOp, "asin">>);
  set(Prim::acos, &unary<math_unary<math::AcosOp, "acos">>);
  set(Prim::atan, &unary<math_unary<math::AtanOp, "atan">>);
  set(Prim::sinh, &unary<math_unary<math::SinhOp, "sinh">>);
  set(Prim::cosh, &unary<math_unary<math::CoshOp, "cosh">>);
  set(Prim::asinh, &unary<math_unary<math::AsinhOp, "asinh">>);
  set(Prim::acosh, &unary<math_unary<math::AcoshOp, "acosh">>);
  set(Prim::atanh, &unary<math_unary<math::AtanhOp, "atanh">>);
  set(Prim::sqrt, &unary<sqrt_>);
  set(Prim::rsqrt, &unary<rsqrt_>);
  set(Prim::cbrt, &unary<math_unary<math::CbrtOp, "cbrt">>);
  set(Prim::abs, &unary<abs_>);
  set(Prim::not_, &unary<not_>);
  set(Prim::erf, &unary<math_unary<math::ErfOp, "erf">>);
  set(Prim::lgamma, &unary<lgamma_>);
  set(Prim::integer_pow, &unary<integer_pow_>);
  set(Prim::stop_gradient, &unary<identity_>);

  set(Prim::add, &binary<add_>);
  set(Prim::add_any, &binary<add_>);
  set(Prim::sub, &binary<sub_>);
  set(Prim::mul, &binary<mul_>);
  set(Prim::div, &binary<div_>);
  set(Prim::rem, &binary<rem_>);
  set(Prim::pow, &binary<pow_>);
  set(Prim::max, &binary<extremum_<Cmp::gt>>);
  set(Prim::min, &binary<extremum_<Cmp::lt>>);
  set(Prim::atan2, &binary<atan2_>);
  set(Prim::and_, &binary<and_>);
  set(Prim::or_, &binary<or_>);
  set(Prim::xor_, &binary<xor_>);

  set(Prim::eq, &binary<compare_<Cmp::eq>>);
  set(Prim::ne, &binary<compare_<Cmp::ne>>);
  set(Prim::lt, &binary<compare_<Cmp::lt>>);
  set(Prim::le, &binary<compare_<Cmp::le>>);
  set(Prim::gt, &binary<compare_<Cmp::gt>>);
  set(Prim::ge, &binary<compare_<Cmp::ge>>);
  set(Prim::select, &select_rule);
  set(Prim::clamp, &clamp_rule);
  set(Prim::convert_element_type, &convert_rule);
}

}  // namespace fluxion::lowering
