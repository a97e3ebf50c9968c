// Elementwise unary primitives, one block per primitive.
//
// This file is the model for a family: every primitive is one block -- its math, its derivative,
// its facts -- ending in the `Registration` that hands the record to the tables
// (prims/registry.h). Nothing else in prims/ lists a primitive.
//
// A unary block is an op struct: the dtypes it accepts, `f` (the value of one element, which the
// reference kernel maps over the operand in compute_t<T>), `jvp` (the tangent of the output y from
// the operand x and its tangent t, written with lax/ ops), and optionally `check` (the params'
// validation) and `to_bool`. The family's shape rule, kernel loop, JVP adapter and batching rule
// are shared; `unary<Op, P>()` assembles the usual record, and a block with more to say (neg, which
// is linear; polygamma, whose compiled code calls the kernel) writes its record out in full.
#include <cmath>
#include <limits>

#include "lax/lax.h"
#include "prims/elementwise.h"

namespace fluxion {
namespace {
using namespace elementwise;
using namespace lax;
using A = const Array&;

// ---- the family's shared rules --------------------------------------------------------------------

template <class Op>
constexpr bool returns_bool() {
  if constexpr (requires { Op::to_bool; }) return Op::to_bool;
  else return false;
}
template <class Op>
constexpr bool has_jvp = requires(A a, const Params& p) { Op::jvp(a, a, a, p); };

// An op with `to_real` maps a complex operand to its real dtype (abs: c64 -> f32).
template <class Op>
constexpr bool returns_real() {
  if constexpr (requires { Op::to_real; }) return Op::to_real;
  else return false;
}

template <class Op>
std::vector<AbstractArray> unary_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand, got " + std::to_string(in.size()));
  check_dtype(Op::accepts, in[0].dtype);
  if constexpr (requires { Op::check(in[0].dtype, params); }) Op::check(in[0].dtype, params);
  AbstractArray out = in[0];
  if constexpr (returns_bool<Op>()) {
    out.dtype = DType::bool_;
    out.weak_type = false;
  }
  if constexpr (returns_real<Op>()) out.dtype = real_dtype_of(out.dtype);
  return {out};
}

template <class Op>
void unary_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  dispatch_dtype_complex(in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    if constexpr (admits<T>(Op::accepts)) {
      using Out = std::conditional_t<returns_bool<Op>(), bool,
                                     std::conditional_t<returns_real<Op>(), real_part_t<T>, T>>;
      map1<T, Out>(in[0], out[0], [&](compute_t<T> x) { return Op::f(x, params); });
    }
  });
}

template <class Op>
std::vector<Array> unary_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                             std::span<const Array> outs, const Params& params, SourceLoc) {
  return {Op::jvp(primals[0], tangents[0], outs[0], params)};
}

template <class Op>
constexpr JvpRule jvp_of() {
  if constexpr (has_jvp<Op>) return &unary_jvp<Op>;
  else return nullptr;
}

/// The record of a unary primitive with the family's rules; an op without `jvp` is piecewise
/// constant (its derivative is zero).
template <class Op, Prim P>
PrimitiveRules unary(GpuLowering gpu = GpuLowering::generic) {
  return PrimitiveRules{
      .prim = P,
      .shape = &unary_shape<Op>,
      .kernel = &unary_kernel<Op>,
      .jvp = jvp_of<Op>(),
      .zero_derivative = !has_jvp<Op>,
      .batch = &batch_elementwise<P>,
      .shard = &shard_elementwise,
      .gpu = gpu,
      .reads = Reads::elementwise,
  };
}

// One line per primitive: its name, the dtypes it accepts, the value of one element x (of the
// compute type C), and the output's tangent from x, its tangent t and the output y.
#define FLUXION_UNARY_VALUE(name, Acc, Expr)         \
  struct name##_value {                              \
    static constexpr Accepts accepts = Accepts::Acc; \
    template <class C>                               \
    static C f(C x, const Params&) {                 \
      return Expr;                                   \
    }                                                \
  };
#define FLUXION_UNARY_GPU(name, Acc, Expr, Jvp, Gpu)         \
  FLUXION_UNARY_VALUE(name, Acc, Expr)                       \
  struct name##_op : name##_value {                          \
    static Array jvp(A x, A t, A y, const Params&) {         \
      (void)x, (void)t, (void)y;                             \
      return Jvp;                                            \
    }                                                        \
  };                                                         \
  const Registration name##_registration = unary<name##_op, Prim::name>(Gpu);
#define FLUXION_UNARY(name, Acc, Expr, Jvp) FLUXION_UNARY_GPU(name, Acc, Expr, Jvp, GpuLowering::generic)
// The same for piecewise-constant primitives, whose derivative is zero.
#define FLUXION_UNARY_PIECEWISE_CONSTANT(name, Acc, Expr) \
  FLUXION_UNARY_VALUE(name, Acc, Expr)                    \
  const Registration name##_registration = unary<name##_value, Prim::name>();

// ---- the blocks -----------------------------------------------------------------------------------

FLUXION_UNARY(exp, Inexact, std::exp(x), t * y)
FLUXION_UNARY(exp2, Float, std::exp2(x), t * y * 0.6931471805599453)
FLUXION_UNARY(log, Inexact, std::log(x), t / x)
FLUXION_UNARY(log1p, Float, std::log1p(x), t / (x + 1))
FLUXION_UNARY(expm1, Float, std::expm1(x), t * (y + 1))
FLUXION_UNARY(tanh, Inexact, std::tanh(x), t * (1 - y * y))
FLUXION_UNARY(logistic, Float, C(1) / (C(1) + std::exp(-x)), t * y * (1 - y))
FLUXION_UNARY(sin, Inexact, std::sin(x), t * cos(x))
FLUXION_UNARY(cos, Inexact, std::cos(x), -t * sin(x))
FLUXION_UNARY(tan, Inexact, std::tan(x), t * (1 + y * y))
FLUXION_UNARY(asin, Inexact, std::asin(x), t * rsqrt(1 - x * x))
FLUXION_UNARY(acos, Inexact, std::acos(x), -t * rsqrt(1 - x * x))
FLUXION_UNARY(atan, Inexact, std::atan(x), t / (1 + x * x))
FLUXION_UNARY(sinh, Inexact, std::sinh(x), t * cosh(x))
FLUXION_UNARY(cosh, Inexact, std::cosh(x), t * sinh(x))
FLUXION_UNARY(asinh, Inexact, std::asinh(x), t * rsqrt(x * x + 1))
FLUXION_UNARY(acosh, Inexact, std::acosh(x), t * rsqrt((x - 1) * (x + 1)))
FLUXION_UNARY(atanh, Inexact, std::atanh(x), t / (1 - x * x))
FLUXION_UNARY(sqrt, Inexact, std::sqrt(x), t / (y * 2))
FLUXION_UNARY(rsqrt, Inexact, C(1) / std::sqrt(x), t * y / x * -0.5)
FLUXION_UNARY(cbrt, Float, std::cbrt(x), t * integer_pow(y, -2) * (1.0 / 3))
FLUXION_UNARY(erf, Float, std::erf(x), t * exp(-x * x) * 1.1283791670955126)
// lgamma: libdevice has it, but the GPU pipeline has not been checked with it yet.
FLUXION_UNARY_GPU(lgamma, Float, std::lgamma(x), t * polygamma(0, x), GpuLowering::none)
FLUXION_UNARY_PIECEWISE_CONSTANT(sign, Numeric, (x > C(0) ? C(1) : x < C(0) ? C(-1) : x))
FLUXION_UNARY_PIECEWISE_CONSTANT(floor, Float, std::floor(x))
FLUXION_UNARY_PIECEWISE_CONSTANT(ceil, Float, std::ceil(x))
FLUXION_UNARY_PIECEWISE_CONSTANT(stop_gradient, All, x)
#undef FLUXION_UNARY
#undef FLUXION_UNARY_GPU
#undef FLUXION_UNARY_PIECEWISE_CONSTANT
#undef FLUXION_UNARY_VALUE

// round[rounding_method]: 0 rounds half away from zero (lax.round's default), 1 half to even.
struct round_op {
  static constexpr Accepts accepts = Accepts::Float;
  static void check(DType, const Params& params) {
    const int64_t m = params.get_int("rounding_method");
    if (m != 0 && m != 1) rule_error(ErrorKind::Value, "rounding_method must be 0 (away from zero) or 1 (to even)");
  }
  template <class C>
  static C f(C x, const Params& params) {
    return params.get_int("rounding_method") == 0 ? std::round(x) : std::nearbyint(x);
  }
};
const Registration round_registration = unary<round_op, Prim::round>();

struct is_finite_op {
  static constexpr Accepts accepts = Accepts::Float;
  static constexpr bool to_bool = true;
  template <class C>
  static bool f(C x, const Params&) { return std::isfinite(x); }
};
const Registration is_finite_registration = unary<is_finite_op, Prim::is_finite>();

// abs: |x|; of a complex x the modulus, a real result (c64 -> f32). d|z| = Re(conj(z) dz) / |z|,
// 0 at z = 0 (JAX's rule).
struct abs_op {
  static constexpr Accepts accepts = Accepts::Number;
  static constexpr bool to_real = true;
  template <class C>
  static auto f(C x, const Params&) {
    if constexpr (std::is_unsigned_v<C>) return x;
    else if constexpr (is_complex_type<C>) return std::abs(x);
    else if constexpr (std::is_integral_v<C>) return x < C(0) ? wrapping_neg(x) : x;  // |INT_MIN| is INT_MIN, as in XLA
    else return std::fabs(x);  // |-0.0| is +0.0
  }
  static Array jvp(A x, A t, A y, const Params&) {
    if (!is_complex(x.dtype())) return t * sign(x);
    Array nonzero = select(eq(y, scalar_like(y, 0)), scalar_like(y, 1), y);
    return real(conj(x) * t) / nonzero;
  }
};
const Registration abs_registration = unary<abs_op, Prim::abs>();

// not: logical for bool, bitwise for integers.
struct not_op {
  static constexpr Accepts accepts = Accepts::BoolOrInt;
  template <class C>
  static C f(C x, const Params&) {
    if constexpr (std::is_same_v<C, bool>) return !x;
    else return C(~x);
  }
};
const Registration not_registration = unary<not_op, Prim::not_>();

// integer_pow[y=n] x: x^n by repeated squaring (exact for integers); d/dx x^n = n x^(n-1).
struct integer_pow_op {
  static constexpr Accepts accepts = Accepts::Number;
  static void check(DType d, const Params& params) {
    if (params.get_int("y") < 0 && !is_inexact(d)) rule_error(ErrorKind::Type, "negative exponents need a floating dtype");
  }
  template <class C>
  static C f(C x, const Params& params) {
    const int64_t y = params.get_int("y");
    const bool invert = y < 0;
    uint64_t e = invert ? 0 - uint64_t(y) : uint64_t(y);
    C acc = C(1), base = x;
    while (e) {  // integers wrap, as XLA's EmitIntegerPow
      if (e & 1u) acc = wrapping_mul(acc, base);
      e >>= 1;
      if (e) base = wrapping_mul(base, base);
    }
    if constexpr (std::is_floating_point_v<C> || is_complex_type<C>) return invert ? C(1) / acc : acc;
    else return acc;
  }
  static Array jvp(A x, A t, A, const Params& params) {
    const int64_t n = params.get_int("y");
    if (n == 0) return zeros_like(t);
    if (n == 1) return t;
    return t * (n == 2 ? x * double(n) : integer_pow(x, n - 1) * double(n));
  }
};
const Registration integer_pow_registration = unary<integer_pow_op, Prim::integer_pow>();

// neg is linear: its transpose negates the cotangent. (The record written out in full.)
struct neg_op {
  static constexpr Accepts accepts = Accepts::Number;
  template <class C>
  static C f(C x, const Params&) { return wrapping_neg(x); }
  static Array jvp(A, A t, A, const Params&) { return -t; }
};
std::vector<Array> neg_transpose(std::span<const Array> cts, std::span<const LinearArg>, const Params&, SourceLoc) {
  return {-cts[0]};
}
const Registration neg_registration = PrimitiveRules{
    .prim = Prim::neg,
    .shape = &unary_shape<neg_op>,
    .kernel = &unary_kernel<neg_op>,
    .jvp = &unary_jvp<neg_op>,
    .transpose = &neg_transpose,
    .linear = kLinear,
    .batch = &batch_elementwise<Prim::neg>,
    .shard = &shard_linear_elementwise<0b1>,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
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
struct polygamma_op {
  static constexpr Accepts accepts = Accepts::Float;
  static void check(DType, const Params& params) {
    if (params.get_int("m") < 0) rule_error(ErrorKind::Value, "the order m must be >= 0");
  }
  template <class C>
  static C f(C x, const Params& params) { return C(polygamma_value(params.get_int("m"), double(x))); }
  static Array jvp(A x, A t, A, const Params& params) { return t * polygamma(params.get_int("m") + 1, x); }
};
// Compiled code calls this kernel (the series gains nothing from generated code), passing m.
constexpr KernelParam kPolygammaParams[] = {{"m"}};
const Registration polygamma_registration = PrimitiveRules{
    .prim = Prim::polygamma,
    .shape = &unary_shape<polygamma_op>,
    .kernel = &unary_kernel<polygamma_op>,
    .kernel_params = kPolygammaParams,
    .jvp = &unary_jvp<polygamma_op>,
    .batch = &batch_elementwise<Prim::polygamma>,
    .shard = &shard_elementwise,
    .reads = Reads::elementwise,
};

}  // namespace
}  // namespace fluxion
