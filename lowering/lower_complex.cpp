// Lowering of complex64/complex128 (prims/complex.cpp and the elementwise primitives that take
// complex operands): complex.* ops inside the same one-generic-per-eqn form as the real rules, so
// chains of them fuse into one loop nest.
//
// MLIR 19's complex dialect has add, sub, mul, div, neg, exp, log, sqrt, rsqrt, sin, cos, tan,
// tanh, pow, abs, conj, re, im, create, eq, neq; convert-complex-to-standard expands them into
// arith/math on the parts (Smith's division, scaled modulus) and the math ops then take the libm
// path of real code. It has no asin, acos, atan, sinh, cosh, asinh, acosh or atanh: those call the
// reference kernel (std::asin of std::complex, glibc's casin) through fluxion_rt_call_prim, one
// library call per eqn, so their results are the eager ones exactly.
#include "lowering/lower_complex.h"

#include <mlir/Dialect/Complex/IR/Complex.h>

#include "ir/error.h"
#include "lowering/library_arrays.h"

namespace fluxion::lowering {

using namespace mlir;

Value complex_constant(OpBuilder& b, Location l, DType d, double re, double im) {
  auto t = cast<ComplexType>(storage_type(b.getContext(), d));
  Type part = t.getElementType();
  return b.create<complex::ConstantOp>(l, t, b.getArrayAttr({b.getFloatAttr(part, re), b.getFloatAttr(part, im)}));
}

Value add_scalars(OpBuilder& b, Location l, Value x, Value y, DType d) {
  if (is_complex(d)) return b.create<complex::AddOp>(l, x, y);
  if (is_float(d)) return b.create<arith::AddFOp>(l, x, y);
  return b.create<arith::AddIOp>(l, x, y);
}

// (a + ib)(c + id) = (ac - bd) + i(ad + bc), as XLA multiplies. complex.mul would add C99 Annex G's
// recovery of infinities from NaN results (what __mulsc3 does for std::complex): six times slower
// in a fused loop, and different only when an operand is infinite.
Value complex_mul(OpBuilder& b, Location l, Value x, Value y) {
  Value a = b.create<complex::ReOp>(l, x), bi = b.create<complex::ImOp>(l, x);
  Value c = b.create<complex::ReOp>(l, y), d = b.create<complex::ImOp>(l, y);
  Value re = b.create<arith::SubFOp>(l, b.create<arith::MulFOp>(l, a, c), b.create<arith::MulFOp>(l, bi, d));
  Value im = b.create<arith::AddFOp>(l, b.create<arith::MulFOp>(l, a, d), b.create<arith::MulFOp>(l, bi, c));
  return b.create<complex::CreateOp>(l, x.getType(), re, im);
}

Value mul_scalars(OpBuilder& b, Location l, Value x, Value y, DType d) {
  if (is_complex(d)) return complex_mul(b, l, x, y);
  if (is_float(d)) return b.create<arith::MulFOp>(l, x, y);
  return b.create<arith::MulIOp>(l, x, y);
}

Value convert_complex_scalar(OpBuilder& b, Location l, Value x, DType from, DType to) {
  if (!is_complex(from)) {  // real -> complex: the part converted as a real, imaginary part 0
    const DType part = real_dtype_of(to);
    Value re = convert_scalar(b, l, x, from, part);
    Value zero = b.create<arith::ConstantOp>(l, b.getFloatAttr(re.getType(), 0.0));
    return b.create<complex::CreateOp>(l, storage_type(b.getContext(), to), re, zero);
  }
  const DType from_part = real_dtype_of(from);
  Value re = b.create<complex::ReOp>(l, x);
  if (!is_complex(to)) return convert_scalar(b, l, re, from_part, to);  // the reference keeps Re z (bool too)
  Value im = b.create<complex::ImOp>(l, x);
  const DType to_part = real_dtype_of(to);
  return b.create<complex::CreateOp>(l, storage_type(b.getContext(), to), convert_scalar(b, l, re, from_part, to_part),
                                     convert_scalar(b, l, im, from_part, to_part));
}

Value complex_beats(OpBuilder& b, Location l, Value v, Value best, bool is_max) {
  Value vr = b.create<complex::ReOp>(l, v), vi = b.create<complex::ImOp>(l, v);
  Value br = b.create<complex::ReOp>(l, best), bi = b.create<complex::ImOp>(l, best);
  auto cmp = [&](arith::CmpFPredicate p, Value x, Value y) -> Value { return b.create<arith::CmpFOp>(l, p, x, y); };
  Value v_nan = b.create<arith::OrIOp>(l, cmp(arith::CmpFPredicate::UNO, vr, vr), cmp(arith::CmpFPredicate::UNO, vi, vi));
  Value best_ok = b.create<arith::AndIOp>(l, cmp(arith::CmpFPredicate::ORD, br, br), cmp(arith::CmpFPredicate::ORD, bi, bi));
  const auto order = is_max ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT;
  Value better = b.create<arith::OrIOp>(
      l, cmp(order, vr, br), b.create<arith::AndIOp>(l, cmp(arith::CmpFPredicate::OEQ, vr, br), cmp(order, vi, bi)));
  return b.create<arith::AndIOp>(l, best_ok, b.create<arith::OrIOp>(l, v_nan, better));
}

namespace {

// The reference kernel of e.prim on the whole operand (fluxion_rt_call_prim, kernels/library_calls.h:
// prim, #inputs, #outputs, #params, then the arrays); for primitives without params.
std::vector<Value> call_reference(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  if (out[0].size() == 0) return {empty(c, out[0])};
  std::vector<LibraryArg> layout{{int64_t(e.prim)}, {int64_t(in.size())}, {int64_t(out.size())}, {0}};
  return call_on_arrays(c, "fluxion_rt_call_prim", std::move(layout), in, out);
}

// z^n by square-and-multiply in the reference's order; 1 / z^|n| for negative n.
Value integer_pow(OpBuilder& b, Location l, Value z, DType d, int64_t y) {
  uint64_t n = uint64_t(y < 0 ? -y : y);
  Value acc = complex_constant(b, l, d, 1.0, 0.0), base = z;
  while (n) {
    if (n & 1u) acc = complex_mul(b, l, acc, base);
    n >>= 1;
    if (n) base = complex_mul(b, l, base, base);
  }
  if (y < 0) return b.create<complex::DivOp>(l, complex_constant(b, l, d, 1.0, 0.0), acc);
  return acc;
}

// One element of e.prim on complex operands `x` (of dtype d).
Value complex_op(OpBuilder& b, Location l, const Eqn& e, ValueRange x, DType d) {
  switch (e.prim) {
    case Prim::neg: return b.create<complex::NegOp>(l, x[0]);
    case Prim::exp: return b.create<complex::ExpOp>(l, x[0]);
    case Prim::log: return b.create<complex::LogOp>(l, x[0]);
    case Prim::sqrt: return b.create<complex::SqrtOp>(l, x[0]);
    case Prim::rsqrt: return b.create<complex::RsqrtOp>(l, x[0]);
    case Prim::sin: return b.create<complex::SinOp>(l, x[0]);
    case Prim::cos: return b.create<complex::CosOp>(l, x[0]);
    case Prim::tan: return b.create<complex::TanOp>(l, x[0]);
    case Prim::tanh: return b.create<complex::TanhOp>(l, x[0]);
    case Prim::abs: return b.create<complex::AbsOp>(l, x[0]);
    case Prim::integer_pow: return integer_pow(b, l, x[0], d, e.params.get_int("y"));
    case Prim::stop_gradient: return x[0];
    case Prim::add: case Prim::add_any: return b.create<complex::AddOp>(l, x[0], x[1]);
    case Prim::sub: return b.create<complex::SubOp>(l, x[0], x[1]);
    case Prim::mul: return complex_mul(b, l, x[0], x[1]);
    case Prim::div: return b.create<complex::DivOp>(l, x[0], x[1]);
    case Prim::pow: return b.create<complex::PowOp>(l, x[0], x[1]);
    case Prim::eq: return bool_to_storage(b, l, b.create<complex::EqualOp>(l, x[0], x[1]));
    case Prim::ne: return bool_to_storage(b, l, b.create<complex::NotEqualOp>(l, x[0], x[1]));
    default:  // the shape rules admit no other complex operands
      throw CompileError("CompileError: jit: " + std::string(prim_name(e.prim)) + " has no complex lowering");
  }
}

// The primitives without a complex.* op: their eqns call the reference kernel.
bool calls_reference(Prim p) {
  for (Prim q : {Prim::asin, Prim::acos, Prim::atan, Prim::sinh, Prim::cosh, Prim::asinh, Prim::acosh, Prim::atanh})
    if (p == q) return true;
  return false;
}

// ---- real, imag, conj, complex --------------------------------------------------------------------
template <class Op>
std::vector<Value> part_rule(LowerCtx& c, const Eqn&, std::span<const Operand> in, std::span<const AbstractArray> out) {
  return {elementwise(c, out[0], in, [](OpBuilder& b, Location l, ValueRange x) -> Value { return b.create<Op>(l, x[0]); })};
}

std::vector<Value> complex_rule(LowerCtx& c, const Eqn&, std::span<const Operand> in, std::span<const AbstractArray> out) {
  Type t = storage_type(c.b.getContext(), out[0].dtype);
  return {elementwise(c, out[0], in, [t](OpBuilder& b, Location l, ValueRange x) -> Value {
    return b.create<complex::CreateOp>(l, t, x[0], x[1]);
  })};
}

}  // namespace

std::vector<Value> complex_elementwise(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  if (calls_reference(e.prim)) return call_reference(c, e, in, out);
  const DType d = in[0].aval.dtype;
  return {elementwise(c, out[0], in, [&](OpBuilder& b, Location l, ValueRange x) { return complex_op(b, l, e, x, d); })};
}

void add_complex_lowerings(LowerTable& t) {
  t[size_t(Prim::real)] = &part_rule<complex::ReOp>;
  t[size_t(Prim::imag)] = &part_rule<complex::ImOp>;
  t[size_t(Prim::conj)] = &part_rule<complex::ConjOp>;
  t[size_t(Prim::complex)] = &complex_rule;
}

}  // namespace fluxion::lowering
