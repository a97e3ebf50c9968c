// Elementwise binary primitives: operands of one dtype and equal shapes (rank-0 operands
// broadcast); the API layer (api/) promotes and broadcasts before binding.
#include <cmath>

#include "api/creation.h"
#include "api/elementwise.h"
#include "api/operands.h"
#include "prims/elementwise.h"

namespace fluxion {
namespace {
using namespace elementwise;

#define FLUXION_BINARY(Name, Acc, Expr)                \
  struct Name {                                       \
    static constexpr Accepts accepts = Accepts::Acc;  \
    template <class C>                                \
    static C f(C x, C y) {                            \
      return Expr;                                    \
    }                                                 \
  };
FLUXION_BINARY(Add, Numeric, C(x + y))
FLUXION_BINARY(Sub, Numeric, C(x - y))
FLUXION_BINARY(Mul, Numeric, C(x * y))
FLUXION_BINARY(Atan2, Float, std::atan2(x, y))
FLUXION_BINARY(Max, Any, (x > y || x != x) ? x : y)  // NaN-propagating, as lax.max
FLUXION_BINARY(Min, Any, (x < y || x != x) ? x : y)
FLUXION_BINARY(Pow, Float, std::pow(x, y))
#undef FLUXION_BINARY

// Integer division truncates toward zero (C semantics, as lax.div). Division by zero must not trap
// the process: it gives -1 (all bits set), as XLA defines it.
struct Div {
  static constexpr Accepts accepts = Accepts::Numeric;
  template <class C>
  static C f(C x, C y) {
    if constexpr (std::is_integral_v<C>) {
      if (y == C(0)) return C(-1);  // XLA's definition: x / 0 == -1 for integers (all bits set)
      if constexpr (std::is_signed_v<C>)
        if (y == C(-1)) return C(-x);  // avoids the INT_MIN / -1 trap; wraps as XLA does
      return C(x / y);
    } else {
      return x / y;
    }
  }
};
// Remainder with the sign of the dividend (C fmod, lax.rem); x % 0 == x for integers (XLA).
struct Rem {
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
struct And {
  static constexpr Accepts accepts = Accepts::BoolOrInt;
  template <class C>
  static C f(C x, C y) { return C(x & y); }
};
struct Or {
  static constexpr Accepts accepts = Accepts::BoolOrInt;
  template <class C>
  static C f(C x, C y) { return C(x | y); }
};
struct Xor {
  static constexpr Accepts accepts = Accepts::BoolOrInt;
  template <class C>
  static C f(C x, C y) { return C(x ^ y); }
};

template <class Op>
std::vector<AbstractArray> shape_rule(std::span<const AbstractArray> in, const Params&) {
  if (in.size() != 2) rule_error(ErrorKind::Type, "expects 2 operands, got " + std::to_string(in.size()));
  Shape s = nary_shape(in);
  DType d = same_dtype(in);
  check_dtype(Op::accepts, d);
  return {AbstractArray{std::move(s), d, all_weak(in)}};
}

template <class Op>
void kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  dispatch_dtype(in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    if constexpr (admits<T>(Op::accepts)) {
      using C = compute_t<T>;
      map2<T, T>(in[0], in[1], out[0], [](C x, C y) { return Op::f(x, y); });
    }
  });
}

template <class Op, Prim p>
void set(RuleTable& t) {
  t[size_t(p)].shape = &shape_rule<Op>;
  t[size_t(p)].kernel = &kernel<Op>;
  t[size_t(p)].batch = &batch_elementwise<p>;
}

// ---- derivatives --------------------------------------------------------------------------------
// JVP rules get (a, b), tangents (ta, tb; empty = zero) and the output y. Rank-0 operands broadcast
// inside the primitive, so their tangents are lifted to y's shape and their cotangents summed back.
using Span = std::span<const Array>;
using Cts = std::span<const Array>;
using Args = std::span<const LinearArg>;

Array sum_tangents(const Array& a, const Array& b, const Array& y) { return add_tangents(lift(a, y), lift(b, y), {}); }
Array scale(const Array& t, const Array& by) { return is_zero(t) ? t : t * by; }

std::vector<Array> add_jvp(Span, Span t, Span y, const Params&, SourceLoc) { return {sum_tangents(t[0], t[1], y[0])}; }
std::vector<Array> sub_jvp(Span, Span t, Span y, const Params&, SourceLoc) {
  return {sum_tangents(t[0], is_zero(t[1]) ? t[1] : -t[1], y[0])};
}
std::vector<Array> mul_jvp(Span x, Span t, Span y, const Params&, SourceLoc) {
  return {sum_tangents(scale(t[0], x[1]), scale(t[1], x[0]), y[0])};
}
// d(a/b) = ta/b - tb*y/b
std::vector<Array> div_jvp(Span x, Span t, Span y, const Params&, SourceLoc) {
  Array da = is_zero(t[0]) ? t[0] : t[0] / x[1];
  Array db = is_zero(t[1]) ? t[1] : -(t[1] * y[0] / x[1]);
  return {sum_tangents(da, db, y[0])};
}
// rem(a, b) = a - b * trunc(a / b): d = ta - tb * trunc(a / b)
std::vector<Array> rem_jvp(Span x, Span t, Span y, const Params&, SourceLoc) {
  Array db = is_zero(t[1]) ? t[1] : -(t[1] * (sign(x[0] / x[1]) * floor(abs(x[0] / x[1]))));
  return {sum_tangents(t[0], db, y[0])};
}
// d(a^b) = ta * b * a^(b-1) + tb * log(a) * y, with log(0) read as 0 (the tb term vanishes there).
std::vector<Array> pow_jvp(Span x, Span t, Span y, const Params&, SourceLoc) {
  Array da = is_zero(t[0]) ? t[0] : t[0] * x[1] * pow(x[0], x[1] - 1);
  Array db = is_zero(t[1]) ? t[1] : t[1] * log(where(x[0] == 0, 1, x[0])) * y[0];
  return {sum_tangents(da, db, y[0])};
}
// max/min pick one operand; ties split the tangent evenly, as JAX does. The weights are built in
// the operands' dtype (1 where the operand wins, 1/2 on ties, 0 where it loses).
Array share(const Array& wins, const Array& ties, DType d) {
  Array one = literal_array(Literal::of_double(1.0, d)), half = literal_array(Literal::of_double(0.5, d)),
        zero = literal_array(Literal::of_double(0.0, d));
  return where(wins, one, where(ties, half, zero));
}
std::vector<Array> max_jvp(Span x, Span t, Span y, const Params&, SourceLoc) {
  Array ties = x[0] == x[1];
  Array da = is_zero(t[0]) ? t[0] : t[0] * share(x[0] > x[1], ties, x[0].dtype());
  Array db = is_zero(t[1]) ? t[1] : t[1] * share(x[1] > x[0], ties, x[1].dtype());
  return {sum_tangents(da, db, y[0])};
}
std::vector<Array> min_jvp(Span x, Span t, Span y, const Params&, SourceLoc) {
  Array ties = x[0] == x[1];
  Array da = is_zero(t[0]) ? t[0] : t[0] * share(x[0] < x[1], ties, x[0].dtype());
  Array db = is_zero(t[1]) ? t[1] : t[1] * share(x[1] < x[0], ties, x[1].dtype());
  return {sum_tangents(da, db, y[0])};
}
// d atan2(a, b) = (ta * b - tb * a) / (a^2 + b^2)
std::vector<Array> atan2_jvp(Span x, Span t, Span y, const Params&, SourceLoc) {
  Array d = x[0] * x[0] + x[1] * x[1];
  Array da = is_zero(t[0]) ? t[0] : t[0] * x[1] / d;
  Array db = is_zero(t[1]) ? t[1] : -(t[1] * x[0] / d);
  return {sum_tangents(da, db, y[0])};
}

std::vector<Array> add_transpose(Cts ct, Args a, const Params&, SourceLoc) {
  return {a[0].linear ? unbroadcast(ct[0], a[0].aval) : Array(), a[1].linear ? unbroadcast(ct[0], a[1].aval) : Array()};
}
std::vector<Array> sub_transpose(Cts ct, Args a, const Params&, SourceLoc) {
  return {a[0].linear ? unbroadcast(ct[0], a[0].aval) : Array(), a[1].linear ? unbroadcast(-ct[0], a[1].aval) : Array()};
}
// mul is linear in one operand at a time (the other is a known value).
std::vector<Array> mul_transpose(Cts ct, Args a, const Params&, SourceLoc) {
  if (a[0].linear && a[1].linear)
    throw TypeError("TypeError: transpose of mul: both operands are linear (the program is not linear)");
  if (a[0].linear) return {unbroadcast(ct[0] * a[1].value, a[0].aval), Array()};
  return {Array(), unbroadcast(a[0].value * ct[0], a[1].aval)};
}
// div is linear in the numerator.
std::vector<Array> div_transpose(Cts ct, Args a, const Params&, SourceLoc) {
  if (a[1].linear) throw TypeError("TypeError: transpose of div: the denominator is linear (the program is not linear)");
  return {unbroadcast(ct[0] / a[1].value, a[0].aval), Array()};
}
}  // namespace

void register_binary_prims(RuleTable& t) {
  set<Add, Prim::add>(t);
  set<Add, Prim::add_any>(t);
  for (Prim p : {Prim::add, Prim::add_any}) {
    t[size_t(p)].jvp = &add_jvp;
    t[size_t(p)].transpose = &add_transpose;
  }
  t[size_t(Prim::sub)].jvp = &sub_jvp;
  t[size_t(Prim::sub)].transpose = &sub_transpose;
  t[size_t(Prim::mul)].jvp = &mul_jvp;
  t[size_t(Prim::mul)].transpose = &mul_transpose;
  t[size_t(Prim::div)].jvp = &div_jvp;
  t[size_t(Prim::div)].transpose = &div_transpose;
  t[size_t(Prim::rem)].jvp = &rem_jvp;
  t[size_t(Prim::pow)].jvp = &pow_jvp;
  t[size_t(Prim::max)].jvp = &max_jvp;
  t[size_t(Prim::min)].jvp = &min_jvp;
  t[size_t(Prim::atan2)].jvp = &atan2_jvp;
  for (Prim p : {Prim::and_, Prim::or_, Prim::xor_}) t[size_t(p)].zero_derivative = true;
  set<Sub, Prim::sub>(t);
  set<Mul, Prim::mul>(t);
  set<Div, Prim::div>(t);
  set<Rem, Prim::rem>(t);
  set<Pow, Prim::pow>(t);
  set<Max, Prim::max>(t);
  set<Min, Prim::min>(t);
  set<Atan2, Prim::atan2>(t);
  set<And, Prim::and_>(t);
  set<Or, Prim::or_>(t);
  set<Xor, Prim::xor_>(t);
}

}  // namespace fluxion
