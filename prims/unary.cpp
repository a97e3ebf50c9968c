// Elementwise unary primitives: dtype rule and reference kernel for each, one row per primitive.
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

// One struct per primitive: what it accepts, whether it returns bool, and its math.
#define FLUXION_UNARY(Name, Acc, Expr)                         \
  struct Name {                                               \
    static constexpr Accepts accepts = Accepts::Acc;          \
    static constexpr bool to_bool = false;                    \
    template <class C>                                        \
    static C f(C x, const Params& params) {                   \
      (void)params;                                           \
      return Expr;                                            \
    }                                                         \
  };
FLUXION_UNARY(Neg, Numeric, C(-x))
FLUXION_UNARY(Sign, Numeric, (x > C(0) ? C(1) : x < C(0) ? C(-1) : x))
FLUXION_UNARY(Floor, Float, std::floor(x))
FLUXION_UNARY(Ceil, Float, std::ceil(x))
FLUXION_UNARY(Round, Float, (params.get_int("rounding_method") == 0 ? std::round(x) : std::nearbyint(x)))
FLUXION_UNARY(Exp, Float, std::exp(x))
FLUXION_UNARY(Exp2, Float, std::exp2(x))
FLUXION_UNARY(Log, Float, std::log(x))
FLUXION_UNARY(Log1p, Float, std::log1p(x))
FLUXION_UNARY(Expm1, Float, std::expm1(x))
FLUXION_UNARY(Tanh, Float, std::tanh(x))
FLUXION_UNARY(Logistic, Float, C(1) / (C(1) + std::exp(-x)))
FLUXION_UNARY(Sin, Float, std::sin(x))
FLUXION_UNARY(Cos, Float, std::cos(x))
FLUXION_UNARY(Tan, Float, std::tan(x))
FLUXION_UNARY(Asin, Float, std::asin(x))
FLUXION_UNARY(Acos, Float, std::acos(x))
FLUXION_UNARY(Atan, Float, std::atan(x))
FLUXION_UNARY(Sinh, Float, std::sinh(x))
FLUXION_UNARY(Cosh, Float, std::cosh(x))
FLUXION_UNARY(Asinh, Float, std::asinh(x))
FLUXION_UNARY(Acosh, Float, std::acosh(x))
FLUXION_UNARY(Atanh, Float, std::atanh(x))
FLUXION_UNARY(Sqrt, Float, std::sqrt(x))
FLUXION_UNARY(Rsqrt, Float, C(1) / std::sqrt(x))
FLUXION_UNARY(Cbrt, Float, std::cbrt(x))
FLUXION_UNARY(Erf, Float, std::erf(x))
FLUXION_UNARY(Lgamma, Float, std::lgamma(x))
FLUXION_UNARY(StopGradient, Any, x)
#undef FLUXION_UNARY

struct Abs {
  static constexpr Accepts accepts = Accepts::Numeric;
  static constexpr bool to_bool = false;
  template <class C>
  static C f(C x, const Params&) {
    if constexpr (std::is_unsigned_v<C>) return x;
    else return x < C(0) ? C(-x) : x;
  }
};
struct Not {
  static constexpr Accepts accepts = Accepts::BoolOrInt;
  static constexpr bool to_bool = false;
  template <class C>
  static C f(C x, const Params&) {
    if constexpr (std::is_same_v<C, bool>) return !x;
    else return C(~x);
  }
};
struct IsFinite {
  static constexpr Accepts accepts = Accepts::Float;
  static constexpr bool to_bool = true;
  template <class C>
  static bool f(C x, const Params&) { return std::isfinite(x); }
};
struct IntegerPow {
  static constexpr Accepts accepts = Accepts::Numeric;
  static constexpr bool to_bool = false;
  template <class C>
  static C f(C x, const Params& params) {
    int64_t y = params.get_int("y");
    bool invert = y < 0;
    uint64_t e = uint64_t(invert ? -y : y);
    C acc = C(1), base = x;
    while (e) {
      if (e & 1u) acc = C(acc * base);
      base = C(base * base);
      e >>= 1;
    }
    if constexpr (std::is_floating_point_v<C>) return invert ? C(1) / acc : acc;
    else return acc;
  }
};

template <class Op>
std::vector<AbstractArray> shape_rule(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand, got " + std::to_string(in.size()));
  check_dtype(Op::accepts, in[0].dtype);
  if constexpr (std::is_same_v<Op, IntegerPow>) {
    if (params.get_int("y") < 0 && !is_float(in[0].dtype))
      rule_error(ErrorKind::Type, "negative exponents need a floating dtype");
  }
  if constexpr (std::is_same_v<Op, Round>) {
    int64_t m = params.get_int("rounding_method");
    if (m != 0 && m != 1) rule_error(ErrorKind::Value, "rounding_method must be 0 (away from zero) or 1 (to even)");
  }
  AbstractArray out = in[0];
  if (Op::to_bool) {
    out.dtype = DType::bool_;
    out.weak_type = false;
  }
  return {out};
}

template <class Op>
void kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  dispatch_dtype(in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    if constexpr (admits<T>(Op::accepts)) {
      using Out = std::conditional_t<Op::to_bool, bool, T>;
      map1<T, Out>(in[0], out[0], [&](compute_t<T> x) { return Op::f(x, params); });
    }
  });
}

template <class Op>
void set(RuleTable& t, Prim p) {
  t[size_t(p)].shape = &shape_rule<Op>;
  t[size_t(p)].kernel = &kernel<Op>;
}
}  // namespace

void register_unary_prims(RuleTable& t) {
  set<Neg>(t, Prim::neg);
  set<Sign>(t, Prim::sign);
  set<Floor>(t, Prim::floor);
  set<Ceil>(t, Prim::ceil);
  set<Round>(t, Prim::round);
  set<IsFinite>(t, Prim::is_finite);
  set<Exp>(t, Prim::exp);
  set<Exp2>(t, Prim::exp2);
  set<Log>(t, Prim::log);
  set<Log1p>(t, Prim::log1p);
  set<Expm1>(t, Prim::expm1);
  set<Tanh>(t, Prim::tanh);
  set<Logistic>(t, Prim::logistic);
  set<Sin>(t, Prim::sin);
  set<Cos>(t, Prim::cos);
  set<Tan>(t, Prim::tan);
  set<Asin>(t, Prim::asin);
  set<Acos>(t, Prim::acos);
  set<Atan>(t, Prim::atan);
  set<Sinh>(t, Prim::sinh);
  set<Cosh>(t, Prim::cosh);
  set<Asinh>(t, Prim::asinh);
  set<Acosh>(t, Prim::acosh);
  set<Atanh>(t, Prim::atanh);
  set<Sqrt>(t, Prim::sqrt);
  set<Rsqrt>(t, Prim::rsqrt);
  set<Cbrt>(t, Prim::cbrt);
  set<Abs>(t, Prim::abs);
  set<Not>(t, Prim::not_);
  set<Erf>(t, Prim::erf);
  set<Lgamma>(t, Prim::lgamma);
  set<IntegerPow>(t, Prim::integer_pow);
  set<StopGradient>(t, Prim::stop_gradient);
}

}  // namespace fluxion
