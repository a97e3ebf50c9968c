// Comparisons (bool results), select and clamp.
#include "api/creation.h"
#include "api/elementwise.h"
#include "api/operands.h"
#include "prims/elementwise.h"

namespace fluxion {
namespace {
using namespace elementwise;

#define FLUXION_COMPARE(Name, Expr) \
  struct Name {                     \
    template <class C>              \
    static bool f(C x, C y) {       \
      return Expr;                  \
    }                               \
  };
FLUXION_COMPARE(Eq, x == y)
FLUXION_COMPARE(Ne, x != y)
FLUXION_COMPARE(Lt, x < y)
FLUXION_COMPARE(Le, x <= y)
FLUXION_COMPARE(Gt, x > y)
FLUXION_COMPARE(Ge, x >= y)
#undef FLUXION_COMPARE

std::vector<AbstractArray> compare_rule(std::span<const AbstractArray> in, const Params&) {
  if (in.size() != 2) rule_error(ErrorKind::Type, "expects 2 operands, got " + std::to_string(in.size()));
  Shape s = nary_shape(in);
  same_dtype(in);
  return {AbstractArray{std::move(s), DType::bool_, false}};
}

template <class Op>
void compare_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  dispatch_dtype(in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    using C = compute_t<T>;
    map2<T, bool>(in[0], in[1], out[0], [](C x, C y) { return Op::f(x, y); });
  });
}

// select(pred, on_true, on_false): pred is bool; the cases share a dtype; rank-0 operands broadcast.
std::vector<AbstractArray> select_rule(std::span<const AbstractArray> in, const Params&) {
  if (in.size() != 3) rule_error(ErrorKind::Type, "expects 3 operands (pred, on_true, on_false)");
  if (in[0].dtype != DType::bool_)
    rule_error(ErrorKind::Type, "the predicate must be bool, got " + std::string(dtype_name(in[0].dtype)));
  Shape s = nary_shape(in);
  DType d = same_dtype(in.subspan(1));
  return {AbstractArray{std::move(s), d, in[1].weak_type && in[2].weak_type}};
}

void select_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  dispatch_dtype(in[1].dtype(), [&](auto z) {
    using T = decltype(z);
    map3<bool, T, T, T>(in[0], in[1], in[2], out[0], [](bool p, T a, T b) { return p ? a : b; });
  });
}

// clamp(lo, x, hi) = min(max(x, lo), hi), with lax's operand order.
std::vector<AbstractArray> clamp_rule(std::span<const AbstractArray> in, const Params&) {
  if (in.size() != 3) rule_error(ErrorKind::Type, "expects 3 operands (min, x, max)");
  Shape s = nary_shape(in);
  DType d = same_dtype(in);
  if (is_bool(d)) rule_error(ErrorKind::Type, "expects a numeric dtype, got bool");
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

template <class Op, Prim p>
void set_compare(RuleTable& t) {
  t[size_t(p)].shape = &compare_rule;
  t[size_t(p)].kernel = &compare_kernel<Op>;
  t[size_t(p)].zero_derivative = true;  // bool results
  t[size_t(p)].batch = &batch_elementwise<p>;
}

// select picks tangents the way it picks values; it is linear in both cases.
std::vector<Array> select_jvp(std::span<const Array> x, std::span<const Array> t, std::span<const Array> y,
                              const Params&, SourceLoc loc) {
  Array a = is_zero(t[1]) ? zeros_like(y[0], loc) : lift(t[1], y[0]);
  Array b = is_zero(t[2]) ? zeros_like(y[0], loc) : lift(t[2], y[0]);
  return {bind1(Prim::select, {x[0], a, b}, {}, loc)};
}
std::vector<Array> select_transpose(std::span<const Array> ct, std::span<const LinearArg> a, const Params&,
                                    SourceLoc loc) {
  if (a[0].linear) throw TypeError("TypeError: transpose of select: the predicate cannot be linear");
  const Array& p = a[0].value;
  Array z = zeros_like(ct[0], loc);
  Array on_true = a[1].linear ? unbroadcast(bind1(Prim::select, {p, ct[0], z}, {}, loc), a[1].aval) : Array();
  Array on_false = a[2].linear ? unbroadcast(bind1(Prim::select, {p, z, ct[0]}, {}, loc), a[2].aval) : Array();
  return {Array(), on_true, on_false};
}
// clamp(lo, x, hi): the tangent of whichever operand is selected.
std::vector<Array> clamp_jvp(std::span<const Array> x, std::span<const Array> t, std::span<const Array> y,
                             const Params&, SourceLoc loc) {
  const Array &lo = x[0], &v = x[1], &hi = x[2];
  auto pick = [&](const Array& tan, const Array& mask) {
    return is_zero(tan) ? tan : lift(tan, y[0]) * astype(mask, y[0].dtype(), loc);
  };
  Array r = pick(t[1], logical_and(v >= lo, v <= hi, loc));
  r = add_tangents(r, pick(t[0], v < lo), loc);
  r = add_tangents(r, pick(t[2], v > hi), loc);
  return {r};
}
}  // namespace

void register_compare_prims(RuleTable& t) {
  set_compare<Eq, Prim::eq>(t);
  set_compare<Ne, Prim::ne>(t);
  set_compare<Lt, Prim::lt>(t);
  set_compare<Le, Prim::le>(t);
  set_compare<Gt, Prim::gt>(t);
  set_compare<Ge, Prim::ge>(t);
  t[size_t(Prim::select)] = {.shape = &select_rule, .kernel = &select_kernel, .jvp = &select_jvp, .transpose = &select_transpose};
  t[size_t(Prim::clamp)] = {.shape = &clamp_rule, .kernel = &clamp_kernel, .jvp = &clamp_jvp};
  t[size_t(Prim::select)].batch = &batch_elementwise<Prim::select>;
  t[size_t(Prim::clamp)].batch = &batch_elementwise<Prim::clamp>;
}

}  // namespace fluxion
