// Elementwise unary primitives: dtype rule and reference kernel for each, one row per primitive.
#include <cmath>
#include <limits>

#include "api/creation.h"
#include "api/elementwise.h"
#include "prims/elementwise.h"
#include "transforms/jvp.h"

namespace fluxion {
namespace {
using namespace elementwise;

// One struct per primitive: what it accepts, whether it returns bool, its math (f, on one element)
// and its derivative (jvp: the tangent of the output, from operand x, tangent t, output y; written
// with the public op API). kZero marks piecewise-constant primitives, whose derivative is zero.
using A = const Array&;
inline constexpr bool kZero = true, kSmooth = false;
#define FLUXION_UNARY(Name, Acc, Expr, Zero, Jvp)                \
  struct Name {                                                  \
    static constexpr Accepts accepts = Accepts::Acc;             \
    static constexpr bool to_bool = false;                       \
    static constexpr bool zero_derivative = Zero;                \
    template <class C>                                           \
    static C f(C x, const Params& params) {                      \
      (void)params;                                              \
      return Expr;                                               \
    }                                                            \
    static Array jvp(A x, A t, A y, const Params& params) {      \
      (void)x, (void)t, (void)y, (void)params;                   \
      return Jvp;                                                \
    }                                                            \
  };
FLUXION_UNARY(Neg, Numeric, C(-x), kSmooth, -t)
FLUXION_UNARY(Sign, Numeric, (x > C(0) ? C(1) : x < C(0) ? C(-1) : x), kZero, Array())
FLUXION_UNARY(Floor, Float, std::floor(x), kZero, Array())
FLUXION_UNARY(Ceil, Float, std::ceil(x), kZero, Array())
FLUXION_UNARY(Round, Float, (params.get_int("rounding_method") == 0 ? std::round(x) : std::nearbyint(x)), kZero, Array())
FLUXION_UNARY(Exp, Float, std::exp(x), kSmooth, t * y)
FLUXION_UNARY(Exp2, Float, std::exp2(x), kSmooth, t * y * 0.6931471805599453)
FLUXION_UNARY(Log, Float, std::log(x), kSmooth, t / x)
FLUXION_UNARY(Log1p, Float, std::log1p(x), kSmooth, t / (x + 1))
FLUXION_UNARY(Expm1, Float, std::expm1(x), kSmooth, t * (y + 1))
FLUXION_UNARY(Tanh, Float, std::tanh(x), kSmooth, t * (1 - y * y))
FLUXION_UNARY(Logistic, Float, C(1) / (C(1) + std::exp(-x)), kSmooth, t * y * (1 - y))
FLUXION_UNARY(Sin, Float, std::sin(x), kSmooth, t * cos(x))
FLUXION_UNARY(Cos, Float, std::cos(x), kSmooth, -t * sin(x))
FLUXION_UNARY(Tan, Float, std::tan(x), kSmooth, t * (1 + y * y))
FLUXION_UNARY(Asin, Float, std::asin(x), kSmooth, t * rsqrt(1 - x * x))
FLUXION_UNARY(Acos, Float, std::acos(x), kSmooth, -t * rsqrt(1 - x * x))
FLUXION_UNARY(Atan, Float, std::atan(x), kSmooth, t / (1 + x * x))
FLUXION_UNARY(Sinh, Float, std::sinh(x), kSmooth, t * cosh(x))
FLUXION_UNARY(Cosh, Float, std::cosh(x), kSmooth, t * sinh(x))
FLUXION_UNARY(Asinh, Float, std::asinh(x), kSmooth, t * rsqrt(x * x + 1))
FLUXION_UNARY(Acosh, Float, std::acosh(x), kSmooth, t * rsqrt((x - 1) * (x + 1)))
FLUXION_UNARY(Atanh, Float, std::atanh(x), kSmooth, t / (1 - x * x))
FLUXION_UNARY(Sqrt, Float, std::sqrt(x), kSmooth, t / (y * 2))
FLUXION_UNARY(Rsqrt, Float, C(1) / std::sqrt(x), kSmooth, t * y / x * -0.5)
FLUXION_UNARY(Cbrt, Float, std::cbrt(x), kSmooth, t * integer_pow(y, -2) * (1.0 / 3))
FLUXION_UNARY(Erf, Float, std::erf(x), kSmooth, t * exp(-x * x) * 1.1283791670955126)
FLUXION_UNARY(Lgamma, Float, std::lgamma(x), kSmooth, t * digamma(x))
FLUXION_UNARY(StopGradient, Any, x, kZero, Array())
#undef FLUXION_UNARY

struct Abs {
  static constexpr Accepts accepts = Accepts::Numeric;
  static constexpr bool to_bool = false;
  static constexpr bool zero_derivative = false;
  template <class C>
  static C f(C x, const Params&) {
    if constexpr (std::is_unsigned_v<C>) return x;
    else return x < C(0) ? C(-x) : x;
  }
  static Array jvp(A x, A t, A, const Params&) { return t * sign(x); }
};
struct Not {
  static constexpr Accepts accepts = Accepts::BoolOrInt;
  static constexpr bool to_bool = false;
  static constexpr bool zero_derivative = true;
  template <class C>
  static C f(C x, const Params&) {
    if constexpr (std::is_same_v<C, bool>) return !x;
    else return C(~x);
  }
  static Array jvp(A, A, A, const Params&) { return Array(); }
};
struct IsFinite {
  static constexpr Accepts accepts = Accepts::Float;
  static constexpr bool to_bool = true;
  static constexpr bool zero_derivative = true;
  template <class C>
  static bool f(C x, const Params&) { return std::isfinite(x); }
  static Array jvp(A, A, A, const Params&) { return Array(); }
};
struct IntegerPow {
  static constexpr Accepts accepts = Accepts::Numeric;
  static constexpr bool to_bool = false;
  static constexpr bool zero_derivative = false;
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
  // d/dx x^n = n x^(n-1)
  static Array jvp(A x, A t, A, const Params& params) {
    int64_t n = params.get_int("y");
    if (n == 0) return zeros_like(t);
    if (n == 1) return t;
    return t * (n == 2 ? x * double(n) : integer_pow(x, n - 1) * double(n));
  }
};
// polygamma[m] x: the m-th derivative of digamma (m = 0 is digamma itself), the derivative of lgamma
// and of itself. Computed in double: recurrence up to x >= 15 + m, then the asymptotic series.
double polygamma_value(int64_t m, double x) {
  constexpr double kPi = 3.141592653589793;
  if (std::isnan(x)) return x;
  if (m == 0) {
    if (x <= 0 && x == std::floor(x)) return std::numeric_limits<double>::quiet_NaN();
    if (x < 0) return polygamma_value(0, 1 - x) - kPi / std::tan(kPi * x);  // reflection
    double r = 0;
    while (x < 15) r -= 1 / x++;
    double x2 = 1 / (x * x);
    return r + std::log(x) - 0.5 / x -
           x2 * (1.0 / 12 - x2 * (1.0 / 120 - x2 * (1.0 / 252 - x2 * (1.0 / 240 - x2 * (1.0 / 132)))));
  }
  if (x <= 0) return std::numeric_limits<double>::quiet_NaN();
  const double sign = (m % 2) ? 1.0 : -1.0;  // (-1)^(m+1)
  const double mfact = std::tgamma(double(m) + 1);
  double r = 0;
  while (x < 15 + double(m)) {
    r += sign * mfact / std::pow(x, double(m + 1));
    x += 1;
  }
  static const double kB2k[] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6};
  double s = std::tgamma(double(m)) / std::pow(x, double(m)) + mfact / (2 * std::pow(x, double(m + 1)));
  for (int k = 1; k <= 7; ++k)
    s += kB2k[k - 1] * std::tgamma(double(2 * k + m)) / (std::tgamma(double(2 * k + 1)) * std::pow(x, double(2 * k + m)));
  return r + sign * s;
}

struct PolyGamma {
  static constexpr Accepts accepts = Accepts::Float;
  static constexpr bool to_bool = false;
  static constexpr bool zero_derivative = false;
  template <class C>
  static C f(C x, const Params& params) { return C(polygamma_value(params.get_int("m"), double(x))); }
  static Array jvp(A x, A t, A, const Params& params) { return t * polygamma(params.get_int("m") + 1, x); }
};

template <class Op>
std::vector<AbstractArray> shape_rule(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand, got " + std::to_string(in.size()));
  check_dtype(Op::accepts, in[0].dtype);
  if constexpr (std::is_same_v<Op, IntegerPow>) {
    if (params.get_int("y") < 0 && !is_float(in[0].dtype))
      rule_error(ErrorKind::Type, "negative exponents need a floating dtype");
  }
  if constexpr (std::is_same_v<Op, PolyGamma>) {
    if (params.get_int("m") < 0) rule_error(ErrorKind::Value, "the order m must be >= 0");
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
std::vector<Array> jvp_rule(std::span<const Array> primals, std::span<const Array> tangents, std::span<const Array> outs,
                            const Params& params, SourceLoc) {
  return {Op::jvp(primals[0], tangents[0], outs[0], params)};
}

// neg is linear: its transpose negates the cotangent.
std::vector<Array> neg_transpose(std::span<const Array> cts, std::span<const LinearArg>, const Params&, SourceLoc) {
  return {-cts[0]};
}

template <class Op, Prim p>
void set(RuleTable& t) {
  PrimitiveRules& r = t[size_t(p)];
  r.shape = &shape_rule<Op>;
  r.kernel = &kernel<Op>;
  r.zero_derivative = Op::zero_derivative;
  if (!Op::zero_derivative) r.jvp = &jvp_rule<Op>;
  r.batch = &batch_elementwise<p>;
}
}  // namespace

void register_unary_prims(RuleTable& t) {
  set<Neg, Prim::neg>(t);
  t[size_t(Prim::neg)].transpose = &neg_transpose;
  set<Sign, Prim::sign>(t);
  set<Floor, Prim::floor>(t);
  set<Ceil, Prim::ceil>(t);
  set<Round, Prim::round>(t);
  set<IsFinite, Prim::is_finite>(t);
  set<Exp, Prim::exp>(t);
  set<Exp2, Prim::exp2>(t);
  set<Log, Prim::log>(t);
  set<Log1p, Prim::log1p>(t);
  set<Expm1, Prim::expm1>(t);
  set<Tanh, Prim::tanh>(t);
  set<Logistic, Prim::logistic>(t);
  set<Sin, Prim::sin>(t);
  set<Cos, Prim::cos>(t);
  set<Tan, Prim::tan>(t);
  set<Asin, Prim::asin>(t);
  set<Acos, Prim::acos>(t);
  set<Atan, Prim::atan>(t);
  set<Sinh, Prim::sinh>(t);
  set<Cosh, Prim::cosh>(t);
  set<Asinh, Prim::asinh>(t);
  set<Acosh, Prim::acosh>(t);
  set<Atanh, Prim::atanh>(t);
  set<Sqrt, Prim::sqrt>(t);
  set<Rsqrt, Prim::rsqrt>(t);
  set<Cbrt, Prim::cbrt>(t);
  set<Abs, Prim::abs>(t);
  set<Not, Prim::not_>(t);
  set<Erf, Prim::erf>(t);
  set<Lgamma, Prim::lgamma>(t);
  set<IntegerPow, Prim::integer_pow>(t);
  set<StopGradient, Prim::stop_gradient>(t);
  set<PolyGamma, Prim::polygamma>(t);
}

}  // namespace fluxion
