// make_ir, eval_shape and eval: the entry points of tracing. make_ir(f)(args...) traces f on
// abstract versions of its Array leaves and returns the Program; eval interprets one.
#pragma once
#include <span>
#include <tuple>
#include <vector>

#include "ir/tree.h"
#include "ir/profiler.h"
#include "ir/program.h"
#include "ir/trace.h"

namespace fluxion {

namespace detail {
/// Traces f on tracers shaped like the Array leaves of args; returns the program and the output
/// (a tree of tracers of the ended trace, useful only for its structure).
template <class F, class... Args>
auto trace_to_program(const F& f, const Args&... args) {
  profiler::Scope prof("trace", "trace");
  std::vector<Array> in;
  (tree::flatten_into(args, in), ...);
  TraceScope scope;
  std::vector<Array> tracers;
  tracers.reserve(in.size());
  for (const Array& a : in) tracers.push_back(scope.new_input(a.aval()));
  [[maybe_unused]] const Array* it = tracers.data();  // unused when f takes no arguments
  auto traced_args = std::tuple<Args...>{tree::rebuild(args, it)...};
  auto out = std::apply(f, traced_args);
  std::vector<Array> outs = tree::leaves(out);
  Program p = scope.finish(outs);
  return std::pair{std::move(p), std::move(out)};
}
/// trace_to_program with the inputs' types given explicitly (one per Array leaf of args, in order):
/// vmap traces the per-example function with each leaf's batch dimension removed.
template <class F, class... Args>
auto trace_with_avals(const F& f, const std::vector<AbstractArray>& avals, const Args&... args) {
  profiler::Scope prof("trace", "trace");
  TraceScope scope;
  std::vector<Array> tracers;
  tracers.reserve(avals.size());
  for (const AbstractArray& a : avals) tracers.push_back(scope.new_input(a));
  [[maybe_unused]] const Array* it = tracers.data();  // unused when f takes no arguments
  auto traced_args = std::tuple<Args...>{tree::rebuild(args, it)...};
  auto out = std::apply(f, traced_args);
  std::vector<Array> outs = tree::leaves(out);
  Program p = scope.finish(outs);
  return std::pair{std::move(p), std::move(out)};
}
}  // namespace detail

/// make_ir(f)(args...) is the Program that f computes (jax.make_jaxpr).
template <class F>
auto make_ir(F f) {
  return [f](const auto&... args) -> Program { return detail::trace_to_program(f, args...).first; };
}

/// eval_shape(f)(args...): the output types without computing anything -- an AbstractArray for an
/// Array result, the leaves' types in tree order for any other tree.
template <class F>
auto eval_shape(F f) {
  return [f](const auto&... args) {
    auto [p, out] = detail::trace_to_program(f, args...);
    if constexpr (std::is_same_v<std::decay_t<decltype(out)>, Array>)
      return p.out_avals().at(0);
    else
      return p.out_avals();
  };
}

/// Interprets a program on arguments with the reference kernels (the oracle of every backend).
inline std::vector<Array> eval(const Program& p, std::span<const Array> args) { return eval_program(p, args); }
inline std::vector<Array> eval(const Program& p, std::initializer_list<Array> args) {
  return eval_program(p, std::span<const Array>(args.begin(), args.size()));
}

}  // namespace fluxion
