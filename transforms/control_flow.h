// Control flow under trace (jax.lax.cond/switch/while_loop/fori_loop/scan):
//
//   auto r = fx::cond(pred, [&] { return x * 2.f; }, [&] { return -x; });       // branches may capture tracers
//   auto u = fx::switch_(idx, [&] { return x; }, [&] { return x * x; }, [&] { return -x; });  // idx clamped
//   auto s = fx::while_loop(cond_fn, body_fn, init);                            // carry: any tree
//   auto s2 = fx::while_loop(cond_fn, body_fn, init, fx::max_steps(1000));      // bounded: reverse-mode differentiable
//   auto t = fx::fori_loop(0, 100, [](const fx::Array& i, fx::Array acc) { return acc + i; }, acc0);
//   auto [carry, ys] = fx::scan([](fx::Array c, fx::Array x) { return std::pair{c + x, c * x}; }, c0, xs);
//
// Each callable is traced once into a program; values it captures become explicit operands of the
// primitive (closure conversion), so users never thread them by hand. The branches of a cond must
// return the same tree of types, a loop body must return its carry's types: otherwise TypeError
// naming the leaf and both types. On concrete values, cond/switch_/while_loop/fori_loop/scan run at
// once (interpreting the traced programs); inside a transformation they are recorded as one eqn.
#pragma once
#include <cstdint>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "api/creation.h"
#include "api/operands.h"
#include "transforms/make_ir.h"

namespace fluxion {

/// The bound of a bounded while loop.
struct MaxSteps {
  int64_t n;
};
inline MaxSteps max_steps(int64_t n) { return MaxSteps{n}; }

namespace detail {

/// A traced callable, closed: its captured values are leading invars, listed in `consts`.
struct ClosedProgram {
  Program program;
  std::vector<Array> consts;
};
template <class F, class... Args>
auto trace_closed(const F& f, const Args&... args) {
  auto [program, out] = trace_to_program(f, args...);
  ClosedProgram c;
  c.program = hoist_consts(std::move(program), c.consts);
  return std::pair{std::move(c), std::move(out)};
}
inline ProgramRef share_program(Program p) { return std::make_shared<const Program>(std::move(p)); }

/// Checks that two lists of output types agree, leaf by leaf (TypeError naming `what`).
void check_same_types(const char* api, const std::string& what_a, const std::vector<AbstractArray>& a,
                      const std::string& what_b, const std::vector<AbstractArray>& b, SourceLoc loc);
/// Builds and binds cond from closed branches (each may capture different values).
std::vector<Array> bind_cond(const Array& index, std::vector<ClosedProgram> branches, SourceLoc loc);
/// The bool/int predicate as an int32 branch index.
Array branch_index_of(const ArrayLike& pred, const char* api, SourceLoc loc);
std::vector<Array> bind_while(ClosedProgram cond, ClosedProgram body, std::span<const Array> init, SourceLoc loc);
std::vector<Array> bind_scan(ClosedProgram body, size_t num_carry, std::span<const Array> init, std::span<const Array> xs,
                             int64_t length, bool reverse, SourceLoc loc);
void check_loop_carry(const char* api, const std::vector<AbstractArray>& in, const std::vector<AbstractArray>& out,
                      SourceLoc loc);
void check_predicate(const char* api, const Program& cond, SourceLoc loc);
/// ValueError naming the api, `what` (e.g. "init") and the leaf when a leaf is an empty handle.
void check_handles(const char* api, const char* what, std::span<const Array> leaves, SourceLoc loc);
/// The scan's length from the leading axes of xs (checked: valid handles, equal lengths) or `length`.
int64_t scan_length(std::span<const Array> xs, std::optional<int64_t> length, SourceLoc loc);
}  // namespace detail

/// Runs one of the branches: branches[clamp(index, 0, n-1)](). Branches take no arguments (capture
/// what they need) and return the same tree of types.
namespace detail {
template <class... Fs>
auto switch_impl(const Array& idx, SourceLoc loc, const Fs&... branches) {
  // Each branch is traced once; the first one's output gives the tree structure of the result.
  auto first = detail::trace_closed(std::get<0>(std::tie(branches...)));
  std::vector<detail::ClosedProgram> closed;
  closed.push_back(std::move(first.first));
  size_t k = 0;
  ((k++ == 0 ? void() : closed.push_back(detail::trace_closed(branches).first)), ...);
  std::vector<Array> outs = detail::bind_cond(idx, std::move(closed), loc);
  const Array* it = outs.data();
  return tree::rebuild(first.second, it);
}
}  // namespace detail

template <class... Fs>
auto switch_(const ArrayLike& index, const Fs&... branches) {
  static_assert(sizeof...(Fs) >= 1, "switch_ needs at least one branch");
  return detail::switch_impl(detail::branch_index_of(index, "switch_", index.loc()), index.loc(), branches...);
}

/// true_fn() if pred else false_fn(); pred is a bool (or integer) scalar.
template <class T, class F>
auto cond(const ArrayLike& pred, const T& true_fn, const F& false_fn) {
  return detail::switch_impl(detail::branch_index_of(pred, "cond", pred.loc()), pred.loc(), false_fn, true_fn);
}

/// while cond_fn(carry): carry = body_fn(carry). With max_steps, at most that many steps run, and
/// the loop is reverse-mode differentiable (it is recorded as a bounded scan).
template <class C, class B, class T>
T while_loop(const C& cond_fn, const B& body_fn, const T& init, SourceLoc loc = std::source_location::current()) {
  auto [cond, pred] = detail::trace_closed(cond_fn, init);
  detail::check_predicate("while_loop", cond.program, loc);
  auto [body, out] = detail::trace_closed(body_fn, init);
  std::vector<Array> carry = tree::leaves(init);
  std::vector<AbstractArray> in_types;
  for (const Array& a : carry) in_types.push_back(a.aval());
  detail::check_loop_carry("while_loop", in_types, body.program.out_avals(), loc);
  std::vector<Array> r = detail::bind_while(std::move(cond), std::move(body), carry, loc);
  const Array* it = r.data();
  return tree::rebuild(init, it);
}

/// The bounded form: at most max.n steps, recorded as a scan whose carry also holds whether the loop
/// is still running (finished steps pass the carry through), so reverse mode works.
template <class C, class B, class T>
T while_loop(const C& cond_fn, const B& body_fn, const T& init, MaxSteps max,
             SourceLoc loc = std::source_location::current());

/// scan(f, init, xs): for each leading slice x of xs, (carry, y) = f(carry, x); returns
/// {final carry, ys stacked along a new leading axis}. xs is any tree (all leaves of one length);
/// `length` is required when xs has no leaves.
template <class F, class C, class X>
auto scan(const F& f, const C& init, const X& xs, std::optional<int64_t> length = std::nullopt, bool reverse = false,
          SourceLoc loc = std::source_location::current()) {
  std::vector<Array> x_leaves = tree::leaves(xs);
  const int64_t n = detail::scan_length(x_leaves, length, loc);
  std::vector<AbstractArray> slice_types;
  for (const Array& x : x_leaves) {
    AbstractArray a = x.aval();
    a.shape = Shape(a.shape.begin() + 1, a.shape.end());
    slice_types.push_back(a);
  }
  std::vector<Array> carry = tree::leaves(init);
  detail::check_handles("scan", "init", carry, loc);
  std::vector<AbstractArray> avals;
  for (const Array& c : carry) avals.push_back(c.aval());
  avals.insert(avals.end(), slice_types.begin(), slice_types.end());
  auto [program, out] = detail::trace_with_avals(f, avals, init, xs);
  using Out = std::decay_t<decltype(out)>;
  static_assert(tree::detail::is_tuple<Out>::value, "the scan body must return std::pair{carry, y}");
  detail::ClosedProgram body;
  body.program = hoist_consts(std::move(program), body.consts);
  std::vector<AbstractArray> carry_in(avals.begin(), avals.begin() + long(carry.size()));
  std::vector<AbstractArray> body_out = body.program.out_avals();
  body_out.resize(std::min(body_out.size(), carry.size()));
  detail::check_loop_carry("scan", carry_in, body_out, loc);
  std::vector<Array> r = detail::bind_scan(std::move(body), carry.size(), carry, x_leaves, n, reverse, loc);
  const Array* it = r.data();
  return tree::rebuild(out, it);  // carry leaves then ys leaves: the pair's structure
}

template <class C, class B, class T>
T while_loop(const C& cond_fn, const B& body_fn, const T& init, MaxSteps max, SourceLoc loc) {
  if (max.n < 0)
    throw ValueError("ValueError: while_loop at " + loc.str() + ": max_steps must be >= 0, got " + std::to_string(max.n));
  auto step = [&](const std::pair<T, Array>& c, const std::tuple<>&) {
    Array go = logical_and(c.second, cond_fn(c.first), loc);
    T next = cond(go, [&] { return body_fn(c.first); }, [&] { return c.first; });
    return std::pair{std::pair{next, go}, std::tuple<>{}};
  };
  auto [carry, ys] = scan(step, std::pair{init, scalar(true, loc)}, std::tuple<>{}, max.n, false, loc);
  return carry.first;
}

/// for i in [lower, upper): val = body(i, val). Static bounds give a scan (reverse-mode
/// differentiable); Array bounds give a while loop.
template <class B, class T>
T fori_loop(int64_t lower, int64_t upper, const B& body, const T& init, SourceLoc loc = std::source_location::current()) {
  auto step = [&](const std::pair<Array, T>& c, const std::tuple<>&) {
    return std::pair{std::pair{c.first + 1, body(c.first, c.second)}, std::tuple<>{}};
  };
  auto [carry, ys] = scan(step, std::pair{scalar(int32_t(lower), loc), init}, std::tuple<>{},
                          std::max<int64_t>(upper - lower, 0), false, loc);
  return carry.second;
}
template <class B, class T>
T fori_loop(const ArrayLike& lower, const ArrayLike& upper, const B& body, const T& init,
            SourceLoc loc = std::source_location::current()) {
  Array lo = astype(lower, int32, loc), hi = astype(upper, int32, loc);
  auto result = while_loop([](const std::tuple<Array, Array, T>& c) { return std::get<0>(c) < std::get<1>(c); },
                           [&](const std::tuple<Array, Array, T>& c) {
                             return std::tuple<Array, Array, T>{std::get<0>(c) + 1, std::get<1>(c),
                                                                body(std::get<0>(c), std::get<2>(c))};
                           },
                           std::tuple<Array, Array, T>{lo, hi, init}, loc);
  return std::get<2>(result);
}

}  // namespace fluxion
