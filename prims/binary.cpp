// Elementwise binary primitives, one block per primitive (the pattern of prims/unary.cpp): operands
// of one dtype and equal shapes, a rank-0 operand broadcasting inside the primitive; api/ promotes
// and broadcasts before it binds.
//
// Derivatives: JVP rules get (a, b), their tangents (ta, tb; empty = zero) and the output y. Since
// a rank-0 operand broadcasts inside the primitive, its tangent is lifted to y's shape and its
// cotangent summed back (lift, unbroadcast: prims/elementwise.h).
#include <cmath>
#include <type_traits>

#include "lax/lax.h"
#include "prims/elementwise.h"

namespace fluxion {
namespace {
using namespace elementwise;
using namespace lax;
using Arrays = std::span<const Array>;
using Args = std::span<const LinearArg>;

// ---- the family's shared rules --------------------------------------------------------------------

template <class Op>
std::vector<AbstractArray> binary_shape(std::span<const AbstractArray> in, const Params&) {
  if (in.size() != 2) rule_error(ErrorKind::Type, "expects 2 operands, got " + std::to_string(in.size()));
  Shape s = nary_shape(in);
  DType d = same_dtype(in);
  check_dtype(Op::accepts, d);
  return {AbstractArray{std::move(s), d, all_weak(in)}};
}

template <class Op>
void binary_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  dispatch_dtype_complex(in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    if constexpr (admits<T>(Op::accepts)) {
      using C = compute_t<T>;
      map2<T, T>(in[0], in[1], out[0], [](C x, C y) { return Op::f(x, y); });
    }
  });
}

// The sum of two operands' tangent contributions, lifted to y's shape (zeros stay symbolic).
Array sum_tangents(const Array& a, const Array& b, const Array& y) { return add_tangents(lift(a, y), lift(b, y), {}); }
Array scale(const Array& t, const Array& by) { return is_zero(t) ? t : t * by; }

#define FLUXION_BINARY_OP(Name, Acc, Expr)            \
  struct Name {                                       \
    static constexpr Accepts accepts = Accepts::Acc;  \
    template <class C>                                \
    static C f(C x, C y) {                            \
      return Expr;                                    \
    }                                                 \
  };

// ---- add (and add_any, the same on tangents): linear in both operands --------------------------
FLUXION_BINARY_OP(add_op, Number, wrapping_add(x, y))
std::vector<Array> add_jvp(Arrays, Arrays t, Arrays y, const Params&, SourceLoc) { return {sum_tangents(t[0], t[1], y[0])}; }
std::vector<Array> add_transpose(Arrays ct, Args a, const Params&, SourceLoc) {
  return {a[0].linear ? unbroadcast(ct[0], a[0].aval) : Array(), a[1].linear ? unbroadcast(ct[0], a[1].aval) : Array()};
}
const Registration add_registration = PrimitiveRules{
    .prim = Prim::add,
    .shape = &binary_shape<add_op>,
    .kernel = &binary_kernel<add_op>,
    .jvp = &add_jvp,
    .transpose = &add_transpose,
    .linear = kLinear,
    .batch = &batch_elementwise<Prim::add>,
    .shard = &shard_linear_elementwise<0b11>,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};
const Registration add_any_registration = PrimitiveRules{
    .prim = Prim::add_any,
    .shape = &binary_shape<add_op>,
    .kernel = &binary_kernel<add_op>,
    .jvp = &add_jvp,
    .transpose = &add_transpose,
    .linear = kLinear,
    .batch = &batch_elementwise<Prim::add_any>,
    .shard = &shard_linear_elementwise<0b11>,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};

// ---- sub: linear in both operands ------------------------------------------------------------------
FLUXION_BINARY_OP(sub_op, Number, wrapping_sub(x, y))
std::vector<Array> sub_jvp(Arrays, Arrays t, Arrays y, const Params&, SourceLoc) {
  return {sum_tangents(t[0], is_zero(t[1]) ? t[1] : -t[1], y[0])};
}
std::vector<Array> sub_transpose(Arrays ct, Args a, const Params&, SourceLoc) {
  return {a[0].linear ? unbroadcast(ct[0], a[0].aval) : Array(), a[1].linear ? unbroadcast(-ct[0], a[1].aval) : Array()};
}
const Registration sub_registration = PrimitiveRules{
    .prim = Prim::sub,
    .shape = &binary_shape<sub_op>,
    .kernel = &binary_kernel<sub_op>,
    .jvp = &sub_jvp,
    .transpose = &sub_transpose,
    .linear = kLinear,
    .batch = &batch_elementwise<Prim::sub>,
    .shard = &shard_linear_elementwise<0b11>,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};

// ---- mul: linear in one operand at a time (the other is a known value) ------------------------------
FLUXION_BINARY_OP(mul_op, Number, wrapping_mul(x, y))
std::vector<Array> mul_jvp(Arrays x, Arrays t, Arrays y, const Params&, SourceLoc) {
  return {sum_tangents(scale(t[0], x[1]), scale(t[1], x[0]), y[0])};
}
std::vector<Array> mul_transpose(Arrays ct, Args a, const Params&, SourceLoc) {
  if (a[0].linear && a[1].linear)
    throw TypeError("TypeError: transpose of mul: both operands are linear (the program is not linear)");
  if (a[0].linear) return {unbroadcast(ct[0] * a[1].value, a[0].aval), Array()};
  return {Array(), unbroadcast(a[0].value * ct[0], a[1].aval)};
}
const Registration mul_registration = PrimitiveRules{
    .prim = Prim::mul,
    .shape = &binary_shape<mul_op>,
    .kernel = &binary_kernel<mul_op>,
    .jvp = &mul_jvp,
    .transpose = &mul_transpose,
    .linear = {.operands = 0b11, .one_at_a_time = true},
    .batch = &batch_elementwise<Prim::mul>,
    .shard = &shard_linear_elementwise<0b11, true>,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};

// ---- div: linear in the numerator --------------------------------------------------------------------
// Integer division truncates toward zero (C semantics, as lax.div). Division by zero must not trap
// the process: it gives -1 (all bits set), as XLA defines it.
struct div_op {
  static constexpr Accepts accepts = Accepts::Number;
  template <class C>
  static C f(C x, C y) {
    if constexpr (std::is_integral_v<C>) {
      if (y == C(0)) return C(-1);  // XLA's definition: x / 0 == -1 for integers (all bits set)
      if constexpr (std::is_signed_v<C>)  // avoids the INT_MIN / -1 trap: INT_MIN, as XLA defines it
        if (y == C(-1)) return C(std::make_unsigned_t<C>(0) - std::make_unsigned_t<C>(x));
      return C(x / y);
    } else {
      return x / y;
    }
  }
};
// d(a/b) = ta/b - tb*y/b
std::vector<Array> div_jvp(Arrays x, Arrays t, Arrays y, const Params&, SourceLoc) {
  Array da = is_zero(t[0]) ? t[0] : t[0] / x[1];
  Array db = is_zero(t[1]) ? t[1] : -(t[1] * y[0] / x[1]);
  return {sum_tangents(da, db, y[0])};
}
std::vector<Array> div_transpose(Arrays ct, Args a, const Params&, SourceLoc) {
  if (a[1].linear) throw TypeError("TypeError: transpose of div: the denominator is linear (the program is not linear)");
  return {unbroadcast(ct[0] / a[1].value, a[0].aval), Array()};
}
const Registration div_registration = PrimitiveRules{
    .prim = Prim::div,
    .shape = &binary_shape<div_op>,
    .kernel = &binary_kernel<div_op>,
    .jvp = &div_jvp,
    .transpose = &div_transpose,
    .linear = {.operands = 0b01},
    .batch = &batch_elementwise<Prim::div>,
    .shard = &shard_linear_elementwise<0b01, true>,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};

// ---- rem: the remainder with the sign of the dividend (C fmod, lax.rem) ------------------------------
// x % 0 == x for integers (XLA).
struct rem_op {
  static constexpr Accepts accepts = Accepts::Numeric;
  template <class C>
  static C f(C x, C y) {
    if constexpr (std::is_integral_v<C>) {
      if (y == C(0)) return x;
      if constexpr (std::is_signed_v<C>)
        if (y == C(-1)) return C(0);
      return C(x % y);
    } else {
      return std::fmod(x, y);
    }
  }
};
// rem(a, b) = a - b * trunc(a / b): d = ta - tb * trunc(a / b)
std::vector<Array> rem_jvp(Arrays x, Arrays t, Arrays y, const Params&, SourceLoc) {
  Array db = is_zero(t[1]) ? t[1] : -(t[1] * (sign(x[0] / x[1]) * floor(abs(x[0] / x[1]))));
  return {sum_tangents(t[0], db, y[0])};
}
const Registration rem_registration = PrimitiveRules{
    .prim = Prim::rem,
    .shape = &binary_shape<rem_op>,
    .kernel = &binary_kernel<rem_op>,
    .jvp = &rem_jvp,
    .batch = &batch_elementwise<Prim::rem>,
    .shard = &shard_elementwise,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};

// ---- pow -----------------------------------------------------------------------------------------------
FLUXION_BINARY_OP(pow_op, Inexact, std::pow(x, y))
// d(a^b) = ta * b * a^(b-1) + tb * log(a) * y, with log(0) read as 0 (the tb term vanishes there).
std::vector<Array> pow_jvp(Arrays x, Arrays t, Arrays y, const Params&, SourceLoc) {
  Array da = is_zero(t[0]) ? t[0] : t[0] * x[1] * pow(x[0], x[1] - 1);
  Array db = is_zero(t[1]) ? t[1] : t[1] * log(select(eq(x[0], scalar_like(x[0], 0)), scalar_like(x[0], 1), x[0])) * y[0];
  return {sum_tangents(da, db, y[0])};
}
const Registration pow_registration = PrimitiveRules{
    .prim = Prim::pow,
    .shape = &binary_shape<pow_op>,
    .kernel = &binary_kernel<pow_op>,
    .jvp = &pow_jvp,
    .batch = &batch_elementwise<Prim::pow>,
    .shard = &shard_elementwise,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};

// ---- max, min: NaN-propagating, as lax.max -------------------------------------------------------------
FLUXION_BINARY_OP(max_op, Any, (x > y || x != x) ? x : y)
FLUXION_BINARY_OP(min_op, Any, (x < y || x != x) ? x : y)
// They pick one operand; ties split the tangent evenly, as JAX does. The weights are built in the
// operands' dtype (1 where the operand wins, 1/2 on ties, 0 where it loses).
Array share(const Array& wins, const Array& ties, DType d) {
  Array one = literal_array(Literal::of_double(1.0, d)), half = literal_array(Literal::of_double(0.5, d)),
        zero = literal_array(Literal::of_double(0.0, d));
  return select(wins, one, select(ties, half, zero));
}
std::vector<Array> max_jvp(Arrays x, Arrays t, Arrays y, const Params&, SourceLoc) {
  Array ties = eq(x[0], x[1]);
  Array da = is_zero(t[0]) ? t[0] : t[0] * share(gt(x[0], x[1]), ties, x[0].dtype());
  Array db = is_zero(t[1]) ? t[1] : t[1] * share(gt(x[1], x[0]), ties, x[1].dtype());
  return {sum_tangents(da, db, y[0])};
}
std::vector<Array> min_jvp(Arrays x, Arrays t, Arrays y, const Params&, SourceLoc) {
  Array ties = eq(x[0], x[1]);
  Array da = is_zero(t[0]) ? t[0] : t[0] * share(lt(x[0], x[1]), ties, x[0].dtype());
  Array db = is_zero(t[1]) ? t[1] : t[1] * share(lt(x[1], x[0]), ties, x[1].dtype());
  return {sum_tangents(da, db, y[0])};
}
const Registration max_registration = PrimitiveRules{
    .prim = Prim::max,
    .shape = &binary_shape<max_op>,
    .kernel = &binary_kernel<max_op>,
    .jvp = &max_jvp,
    .batch = &batch_elementwise<Prim::max>,
    .shard = &shard_elementwise,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};
const Registration min_registration = PrimitiveRules{
    .prim = Prim::min,
    .shape = &binary_shape<min_op>,
    .kernel = &binary_kernel<min_op>,
    .jvp = &min_jvp,
    .batch = &batch_elementwise<Prim::min>,
    .shard = &shard_elementwise,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};

// ---- atan2 -----------------------------------------------------------------------------------------------
FLUXION_BINARY_OP(atan2_op, Float, std::atan2(x, y))
// d atan2(a, b) = (ta * b - tb * a) / (a^2 + b^2)
std::vector<Array> atan2_jvp(Arrays x, Arrays t, Arrays y, const Params&, SourceLoc) {
  Array d = x[0] * x[0] + x[1] * x[1];
  Array da = is_zero(t[0]) ? t[0] : t[0] * x[1] / d;
  Array db = is_zero(t[1]) ? t[1] : -(t[1] * x[0] / d);
  return {sum_tangents(da, db, y[0])};
}
const Registration atan2_registration = PrimitiveRules{
    .prim = Prim::atan2,
    .shape = &binary_shape<atan2_op>,
    .kernel = &binary_kernel<atan2_op>,
    .jvp = &atan2_jvp,
    .batch = &batch_elementwise<Prim::atan2>,
    .shard = &shard_elementwise,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};

// ---- and, or, xor: logical for bool, bitwise for integers (piecewise constant) ---------------------------
FLUXION_BINARY_OP(bitwise_and_op, BoolOrInt, C(x & y))
FLUXION_BINARY_OP(bitwise_or_op, BoolOrInt, C(x | y))
FLUXION_BINARY_OP(bitwise_xor_op, BoolOrInt, C(x ^ y))
const Registration and_registration = PrimitiveRules{
    .prim = Prim::and_,
    .shape = &binary_shape<bitwise_and_op>,
    .kernel = &binary_kernel<bitwise_and_op>,
    .zero_derivative = true,
    .batch = &batch_elementwise<Prim::and_>,
    .shard = &shard_elementwise,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};
const Registration or_registration = PrimitiveRules{
    .prim = Prim::or_,
    .shape = &binary_shape<bitwise_or_op>,
    .kernel = &binary_kernel<bitwise_or_op>,
    .zero_derivative = true,
    .batch = &batch_elementwise<Prim::or_>,
    .shard = &shard_elementwise,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};
const Registration xor_registration = PrimitiveRules{
    .prim = Prim::xor_,
    .shape = &binary_shape<bitwise_xor_op>,
    .kernel = &binary_kernel<bitwise_xor_op>,
    .zero_derivative = true,
    .batch = &batch_elementwise<Prim::xor_>,
    .shard = &shard_elementwise,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};
#undef FLUXION_BINARY_OP

}  // namespace
}  // namespace fluxion
