// Comparisons (bool results), select and clamp, one block per primitive (the pattern of
// prims/unary.cpp).
#include "lax/lax.h"
#include "prims/elementwise.h"

namespace fluxion {
namespace {
using namespace elementwise;
using namespace lax;
using Arrays = std::span<const Array>;

// ---- eq ne lt le gt ge: bool results, so a zero derivative ------------------------------------------

// eq and ne take complex operands; the ordering comparisons are not defined on them (TypeError).
template <class Op>
std::vector<AbstractArray> compare_shape(std::span<const AbstractArray> in, const Params&) {
  if (in.size() != 2) rule_error(ErrorKind::Type, "expects 2 operands, got " + std::to_string(in.size()));
  Shape s = nary_shape(in);
  const DType d = same_dtype(in);
  if (!Op::complex_ok && is_complex(d))
    rule_error(ErrorKind::Type, "complex numbers are not ordered, got " + std::string(dtype_name(d)) +
                                    " (compare real(x) or abs(x))");
  return {AbstractArray{std::move(s), DType::bool_, false}};
}

template <class Op>
void compare_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  dispatch_dtype_complex(in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    using C = compute_t<T>;
    if constexpr (Op::complex_ok || !is_complex_type<T>)
      map2<T, bool>(in[0], in[1], out[0], [](C x, C y) { return Op::f(x, y); });
  });
}

template <class Op, Prim P>
PrimitiveRules comparison() {
  return PrimitiveRules{
      .prim = P,
      .shape = &compare_shape<Op>,
      .kernel = &compare_kernel<Op>,
      .zero_derivative = true,
      .batch = &batch_elementwise<P>,
      .shard = &shard_elementwise,
      .gpu = GpuLowering::generic,
      .reads = Reads::elementwise,
  };
}

#define FLUXION_COMPARE(name, Complex, Expr) \
  struct name##_op {                  \
    static constexpr bool complex_ok = Complex; \
    template <class C>                \
    static bool f(C x, C y) {         \
      return Expr;                    \
    }                                 \
  };                                  \
  const Registration name##_registration = comparison<name##_op, Prim::name>();
FLUXION_COMPARE(eq, true, x == y)
FLUXION_COMPARE(ne, true, x != y)
FLUXION_COMPARE(lt, false, x < y)
FLUXION_COMPARE(le, false, x <= y)
FLUXION_COMPARE(gt, false, x > y)
FLUXION_COMPARE(ge, false, x >= y)
#undef FLUXION_COMPARE

// ---- select(pred, on_true, on_false): pred is bool; the cases share a dtype; rank-0 operands -------
// broadcast. It picks tangents the way it picks values, and is linear in both cases.
std::vector<AbstractArray> select_shape(std::span<const AbstractArray> in, const Params&) {
  if (in.size() != 3) rule_error(ErrorKind::Type, "expects 3 operands (pred, on_true, on_false)");
  if (in[0].dtype != DType::bool_)
    rule_error(ErrorKind::Type, "the predicate must be bool, got " + std::string(dtype_name(in[0].dtype)));
  Shape s = nary_shape(in);
  DType d = same_dtype(in.subspan(1));
  return {AbstractArray{std::move(s), d, in[1].weak_type && in[2].weak_type}};
}

void select_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  dispatch_dtype_complex(in[1].dtype(), [&](auto z) {
    using T = decltype(z);
    map3<bool, T, T, T>(in[0], in[1], in[2], out[0], [](bool p, T a, T b) { return p ? a : b; });
  });
}

std::vector<Array> select_jvp(Arrays x, Arrays t, Arrays y, const Params&, SourceLoc) {
  Array a = is_zero(t[1]) ? zeros_like(y[0]) : lift(t[1], y[0]);
  Array b = is_zero(t[2]) ? zeros_like(y[0]) : lift(t[2], y[0]);
  return {select(x[0], a, b)};
}
std::vector<Array> select_transpose(Arrays ct, std::span<const LinearArg> a, const Params&, SourceLoc) {
  if (a[0].linear) throw TypeError("TypeError: transpose of select: the predicate cannot be linear");
  const Array& p = a[0].value;
  Array z = zeros_like(ct[0]);
  Array on_true = a[1].linear ? unbroadcast(select(p, ct[0], z), a[1].aval) : Array();
  Array on_false = a[2].linear ? unbroadcast(select(p, z, ct[0]), a[2].aval) : Array();
  return {Array(), on_true, on_false};
}

const Registration select_registration = PrimitiveRules{
    .prim = Prim::select,
    .shape = &select_shape,
    .kernel = &select_kernel,
    .jvp = &select_jvp,
    .transpose = &select_transpose,
    .linear = {.operands = 0b110},
    .batch = &batch_elementwise<Prim::select>,
    .shard = &shard_elementwise,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};

// ---- clamp(lo, x, hi) = min(max(x, lo), hi), with lax's operand order ----------------------------------
std::vector<AbstractArray> clamp_shape(std::span<const AbstractArray> in, const Params&) {
  if (in.size() != 3) rule_error(ErrorKind::Type, "expects 3 operands (min, x, max)");
  Shape s = nary_shape(in);
  DType d = same_dtype(in);
  if (is_bool(d) || is_complex(d))
    rule_error(ErrorKind::Type, "expects a real numeric dtype, got " + std::string(dtype_name(d)));
  if (in[0].shape.rank() != 0 && !(in[0].shape == in[1].shape))
    rule_error(ErrorKind::Shape, "min must be a scalar or have the operand's shape");
  return {AbstractArray{std::move(s), d, in[1].weak_type}};
}

void clamp_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  dispatch_dtype(in[1].dtype(), [&](auto z) {
    using T = decltype(z);
    using C = compute_t<T>;
    map3<T, T, T, T>(in[0], in[1], in[2], out[0], [](T lo, T x, T hi) {
      C v = static_cast<C>(x), l = static_cast<C>(lo), h = static_cast<C>(hi);
      if (v != v) return x;  // NaN passes through
      return static_cast<T>(v < l ? l : v > h ? h : v);
    });
  });
}

// The tangent of whichever operand is selected.
std::vector<Array> clamp_jvp(Arrays x, Arrays t, Arrays y, const Params&, SourceLoc loc) {
  const Array &lo = x[0], &v = x[1], &hi = x[2];
  auto pick = [&](const Array& tan, const Array& mask) {
    return is_zero(tan) ? tan : lift(tan, y[0]) * convert(mask, y[0].dtype());
  };
  Array r = pick(t[1], bitwise_and(ge(v, lo), le(v, hi)));
  r = add_tangents(r, pick(t[0], lt(v, lo)), loc);
  r = add_tangents(r, pick(t[2], gt(v, hi)), loc);
  return {r};
}

const Registration clamp_registration = PrimitiveRules{
    .prim = Prim::clamp,
    .shape = &clamp_shape,
    .kernel = &clamp_kernel,
    .jvp = &clamp_jvp,
    .batch = &batch_elementwise<Prim::clamp>,
    .shard = &shard_elementwise,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};

}  // namespace
}  // namespace fluxion
