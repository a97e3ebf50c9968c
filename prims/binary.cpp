// Elementwise binary primitives: operands of one dtype and equal shapes (rank-0 operands
// broadcast); the API layer (api/) promotes and broadcasts before binding.
#include <cmath>

#include "prims/elementwise.h"

namespace fluxion {
namespace {
using namespace elementwise;

template <class T>
constexpr bool is_float_type = std::is_floating_point_v<T> || std::is_same_v<T, float16_t> ||
                               std::is_same_v<T, bfloat16_t>;

template <class T>
constexpr bool admits(Accepts a) {
  switch (a) {
    case Accepts::Float: return is_float_type<T>;
    case Accepts::Numeric: return !std::is_same_v<T, bool>;
    case Accepts::Integer: return std::is_integral_v<T> && !std::is_same_v<T, bool>;
    case Accepts::BoolOrInt: return std::is_integral_v<T>;
    case Accepts::Any: return true;
  }
  return false;
}

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

template <class Op>
void set(RuleTable& t, Prim p) {
  t[size_t(p)].shape = &shape_rule<Op>;
  t[size_t(p)].kernel = &kernel<Op>;
}
}  // namespace

void register_binary_prims(RuleTable& t) {
  set<Add>(t, Prim::add);
  set<Sub>(t, Prim::sub);
  set<Mul>(t, Prim::mul);
  set<Div>(t, Prim::div);
  set<Rem>(t, Prim::rem);
  set<Pow>(t, Prim::pow);
  set<Max>(t, Prim::max);
  set<Min>(t, Prim::min);
  set<Atan2>(t, Prim::atan2);
  set<And>(t, Prim::and_);
  set<Or>(t, Prim::or_);
  set<Xor>(t, Prim::xor_);
}

}  // namespace fluxion
