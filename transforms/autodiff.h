// The user API of differentiation (jax.grad and friends), over trees of Arrays:
//
//   fx::grad(f)(x)                      d f / d x, the same tree as x (f returns a float scalar)
//   fx::grad<0, 1>(f)(a, b)             a std::tuple of the gradients w.r.t. a and b
//   fx::value_and_grad(f)(x)            {f(x), grad}
//   fx::value_and_grad(f, fx::has_aux)  f returns {loss, aux}: gives {{loss, aux}, grad}
//   fx::jvp(f, std::tuple{x}, std::tuple{t})  {f(x), J t}
//   fx::vjp(f, x...)                    {f(x), f_vjp} with f_vjp(ct) = J^T ct
//   fx::linearize(f, x...)              {f(x), f_lin} with f_lin(t...) = J t
//   fx::jacfwd(f)(x), fx::jacrev(f)(x)  the Jacobian, over trees with argnums: transforms/jacobian.h
//
// Each call traces f into a Program, rewrites it (transforms/jvp, vjp) and evaluates the result:
// eagerly on concrete arguments, or -- when an outer transformation is tracing -- by recording
// it into the outer trace, which is why these compose to any depth (grad(grad(f)), jit(grad(f))).
#pragma once
#include <array>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

#include "ir/tree.h"
#include "ir/program.h"
#include "ir/trace.h"
#include "transforms/make_ir.h"

namespace fluxion {

/// Tag: the function returns {value, aux}; aux is carried through, not differentiated.
struct HasAux {};
inline constexpr HasAux has_aux{};
/// grad(f, fx::holomorphic): f maps complex arguments to a complex scalar and is holomorphic; the
/// gradient is f'(z) (jax.grad(holomorphic=True)). Without it grad wants a real-valued f, and of a
/// complex argument z = x + iy it returns df/dx - i df/dy (JAX's convention; docs/linalg.md).
struct Holomorphic {};
inline constexpr Holomorphic holomorphic{};

namespace detail {

/// Flattened arguments: all leaves, and where each argument's leaves start.
struct ArgLeaves {
  std::vector<Array> leaves;
  std::vector<size_t> start;  // start[i]: first leaf of argument i; start[n]: total
};
template <class... Args>
ArgLeaves flatten_args(const Args&... args) {
  ArgLeaves r;
  ((r.start.push_back(r.leaves.size()), tree::flatten_into(args, r.leaves)), ...);
  r.start.push_back(r.leaves.size());
  return r;
}

/// Runs the gradient program of p on `leaves`: returns p's outputs (output 0 left empty unless
/// `with_value`) and the gradients of output 0 (a float scalar) w.r.t. the leaves marked in `wrt`.
struct GradResult {
  std::vector<Array> outs;
  std::vector<Array> grads;
};
GradResult value_and_grad_flat(const Program& p, std::span<const Array> leaves, const std::vector<bool>& wrt,
                               bool with_value, SourceLoc loc);
/// Checks that output 0 is a real float scalar, or with `holomorphic` a complex one (TypeError
/// pointing to jacrev/vjp or fx::holomorphic otherwise).
void check_scalar_output(const char* api, const AbstractArray& out, SourceLoc loc, bool holomorphic = false);
/// Checks that every wrt leaf of argument `argnum` is floating or complex (complex with
/// `holomorphic`; TypeError otherwise).
void check_float_argument(const char* api, const std::vector<Array>& leaves, size_t begin, size_t end, int argnum,
                          SourceLoc loc, bool holomorphic = false);

template <class T>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<std::pair<A, B>> : std::true_type {};

template <int... argnums>
struct argnum_list {
  static constexpr std::array<int, sizeof...(argnums)> values{argnums...};
};

/// The gradient part of grad/value_and_grad, for arguments `argnums` (0 when empty).
template <bool WithValue, bool Aux, bool Holomorphic, int... argnums, class F, class... Args>
auto grad_impl(const F& f, SourceLoc loc, const Args&... args) {
  constexpr bool several = sizeof...(argnums) > 1;
  constexpr auto which = [] {
    if constexpr (sizeof...(argnums) == 0)
      return std::array<int, 1>{0};
    else
      return std::array<int, sizeof...(argnums)>{argnums...};
  }();
  ArgLeaves flat = flatten_args(args...);
  std::vector<bool> wrt(flat.leaves.size(), false);
  for (int a : which) {
    if (a < 0 || a >= int(sizeof...(Args)))
      throw ValueError("ValueError: grad at " + loc.str() + ": argnum " + std::to_string(a) + " is out of range for " +
                       std::to_string(sizeof...(Args)) + " arguments");
    check_float_argument("grad", flat.leaves, flat.start[size_t(a)], flat.start[size_t(a) + 1], a, loc, Holomorphic);
    for (size_t i = flat.start[size_t(a)]; i < flat.start[size_t(a) + 1]; ++i) wrt[i] = true;
  }
  auto [program, out] = trace_to_program(f, args...);
  using Out = std::decay_t<decltype(out)>;
  if constexpr (Aux) static_assert(is_pair<Out>::value, "with fx::has_aux the function must return a std::pair{loss, aux}");
  if constexpr (!Aux)
    static_assert(std::is_same_v<Out, Array>, "grad: the function must return one Array (a float scalar)");
  check_scalar_output("grad", program.out_avals().at(0), loc, Holomorphic);
  GradResult g = value_and_grad_flat(program, flat.leaves, wrt, WithValue, loc);

  // Rebuild each differentiated argument's tree from its gradient leaves (which come in leaf order).
  auto tuple_args = std::forward_as_tuple(args...);
  auto rebuild_arg = [&]<size_t I>(std::integral_constant<size_t, I>) {
    size_t offset = 0;
    for (size_t i = 0; i < flat.start[I]; ++i) offset += wrt[i];
    const Array* it = g.grads.data() + offset;
    return tree::rebuild(std::get<I>(tuple_args), it);
  };
  auto grads = [&] {
    if constexpr (several) {
      return std::tuple{rebuild_arg(std::integral_constant<size_t, size_t(argnums)>{})...};
    } else {
      constexpr size_t a = sizeof...(argnums) == 0 ? 0 : size_t(which[0]);
      return rebuild_arg(std::integral_constant<size_t, a>{});
    }
  }();
  if constexpr (Aux) {
    const Array* ot = g.outs.data();
    Out value = tree::rebuild(out, ot);
    if constexpr (WithValue)
      return std::pair{value, grads};
    else
      return std::pair{grads, value.second};
  } else if constexpr (WithValue) {
    return std::pair{g.outs.at(0), grads};
  } else {
    return grads;
  }
}

}  // namespace detail

/// The gradient of a function returning a float scalar, w.r.t. arguments `argnums` (default 0).
template <int... argnums, class F>
auto grad(F f, SourceLoc loc = std::source_location::current()) {
  return [f, loc](const auto&... args) { return detail::grad_impl<false, false, false, argnums...>(f, loc, args...); };
}
/// grad of a function returning {loss, aux}: gives {grad, aux}.
template <int... argnums, class F>
auto grad(F f, HasAux, SourceLoc loc = std::source_location::current()) {
  return [f, loc](const auto&... args) { return detail::grad_impl<false, true, false, argnums...>(f, loc, args...); };
}
template <int... argnums, class F>
auto value_and_grad(F f, SourceLoc loc = std::source_location::current()) {
  return [f, loc](const auto&... args) { return detail::grad_impl<true, false, false, argnums...>(f, loc, args...); };
}
/// grad and value_and_grad of a holomorphic function of complex arguments (see fx::holomorphic).
template <int... argnums, class F>
auto grad(F f, Holomorphic, SourceLoc loc = std::source_location::current()) {
  return [f, loc](const auto&... args) { return detail::grad_impl<false, false, true, argnums...>(f, loc, args...); };
}
template <int... argnums, class F>
auto value_and_grad(F f, Holomorphic, SourceLoc loc = std::source_location::current()) {
  return [f, loc](const auto&... args) { return detail::grad_impl<true, false, true, argnums...>(f, loc, args...); };
}
/// value_and_grad of a function returning {loss, aux}: gives {{loss, aux}, grad}.
template <int... argnums, class F>
auto value_and_grad(F f, HasAux, SourceLoc loc = std::source_location::current()) {
  return [f, loc](const auto&... args) { return detail::grad_impl<true, true, false, argnums...>(f, loc, args...); };
}

namespace detail {
/// Forward mode on flat leaves: outputs and output tangents (zeros materialised).
std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const Program& p, std::span<const Array> primals,
                                                           std::span<const Array> tangents);
/// Checks tangents against primals leaf by leaf (ShapeError/TypeError naming the argument).
void check_tangents(const char* api, const ArgLeaves& primals, const ArgLeaves& tangents, SourceLoc loc);

/// The pullback of fx::vjp: holds the residuals and the backward program.
class Pullback {
 public:
  Pullback(Program backward, std::vector<Array> residuals, std::vector<AbstractArray> out_avals,
           std::vector<AbstractArray> in_avals, std::vector<bool> wrt, SourceLoc loc);
  /// Cotangents for every input leaf (zeros for leaves that were not differentiated).
  std::vector<Array> operator()(std::span<const Array> cts) const;

 private:
  Program backward_;
  std::vector<Array> residuals_;
  std::vector<AbstractArray> out_avals_, in_avals_;
  std::vector<bool> wrt_;
  SourceLoc loc_;
};
Pullback make_pullback(const Program& p, std::span<const Array> leaves, std::vector<Array>& outs, SourceLoc loc);
/// The same for the leaves marked in `wrt` only (the others get zero cotangents).
Pullback make_pullback(const Program& p, std::span<const Array> leaves, const std::vector<bool>& wrt,
                       std::vector<Array>& outs, SourceLoc loc);

/// The linear map of fx::linearize.
class LinearMap {
 public:
  LinearMap(Program linear, std::vector<Array> residuals, std::vector<AbstractArray> in_avals, SourceLoc loc);
  std::vector<Array> operator()(std::span<const Array> tangents) const;

 private:
  Program linear_;
  std::vector<Array> residuals_;
  std::vector<AbstractArray> in_avals_;
  SourceLoc loc_;
};
LinearMap make_linear_map(const Program& p, std::span<const Array> leaves, std::vector<Array>& outs, SourceLoc loc);
}  // namespace detail

/// Forward mode: {f(primals...), J tangents}. primals and tangents are tuples of the arguments.
template <class F, class... P, class... T>
auto jvp(F f, const std::tuple<P...>& primals, const std::tuple<T...>& tangents,
         SourceLoc loc = std::source_location::current()) {
  static_assert(sizeof...(P) == sizeof...(T), "jvp: as many tangents as primals");
  detail::ArgLeaves pl = std::apply([](const auto&... a) { return detail::flatten_args(a...); }, primals);
  detail::ArgLeaves tl = std::apply([](const auto&... a) { return detail::flatten_args(a...); }, tangents);
  detail::check_tangents("jvp", pl, tl, loc);
  auto [program, out] = std::apply([&](const auto&... a) { return detail::trace_to_program(f, a...); }, primals);
  auto [outs, touts] = detail::jvp_flat(program, pl.leaves, tl.leaves);
  const Array* a = outs.data();
  const Array* b = touts.data();
  auto value = tree::rebuild(out, a);
  auto tangent = tree::rebuild(out, b);
  return std::pair{value, tangent};
}

/// Reverse mode: {f(args...), f_vjp}. f_vjp(ct) takes a cotangent shaped like the output and
/// returns the cotangent of the argument (one argument) or a std::tuple of them.
template <class F, class... Args>
auto vjp(F f, const Args&... args) {
  SourceLoc loc = std::source_location::current();
  detail::ArgLeaves flat = detail::flatten_args(args...);
  auto [program, out] = detail::trace_to_program(f, args...);
  std::vector<Array> outs;
  detail::Pullback pb = detail::make_pullback(program, flat.leaves, outs, loc);
  const Array* it = outs.data();
  auto value = tree::rebuild(out, it);
  auto like = std::tuple<Args...>(args...);
  auto f_vjp = [pb, like, value](const auto& ct) {
    std::vector<Array> cts = tree::leaves(ct);
    std::vector<Array> g = pb(cts);
    const Array* gi = g.data();
    auto rebuilt = std::apply([&](const auto&... a) { return std::tuple{tree::rebuild(a, gi)...}; }, like);
    if constexpr (sizeof...(Args) == 1)
      return std::get<0>(rebuilt);
    else
      return rebuilt;
  };
  return std::pair{value, f_vjp};
}

/// {f(args...), f_lin} where f_lin(tangents...) = J tangents (evaluated without re-linearizing).
template <class F, class... Args>
auto linearize(F f, const Args&... args) {
  SourceLoc loc = std::source_location::current();
  detail::ArgLeaves flat = detail::flatten_args(args...);
  auto [program, out] = detail::trace_to_program(f, args...);
  std::vector<Array> outs;
  detail::LinearMap lin = detail::make_linear_map(program, flat.leaves, outs, loc);
  const Array* it = outs.data();
  auto value = tree::rebuild(out, it);
  auto f_lin = [lin, value](const auto&... tangents) {
    detail::ArgLeaves t = detail::flatten_args(tangents...);
    std::vector<Array> r = lin(t.leaves);
    const Array* ri = r.data();
    return tree::rebuild(value, ri);
  };
  return std::pair{value, f_lin};
}

}  // namespace fluxion
