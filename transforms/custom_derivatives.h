// User-defined derivatives and rematerialization:
//
//   auto f = fx::custom_jvp(f_impl, jvp_rule);
//       jvp_rule(std::tuple{x...} primals, std::tuple{t...} tangents) -> std::pair{out, out_tangent}
//   auto g = fx::custom_vjp(fwd, bwd);
//       fwd(x...) -> std::pair{out, residuals}     (residuals: any tree)
//       bwd(residuals, out_cotangent) -> the cotangent of x (one argument) or a std::tuple of them
//   auto h = fx::checkpoint(f);
//       the same function; reverse mode recomputes f's intermediates from its inputs instead of
//       saving them (only the inputs are kept as residuals).
//
// Each call traces the user's functions into programs (closed over captured values, which become
// explicit operands) and binds one primitive holding them (prims/custom.cpp), so these compose with
// every other transformation. Differentiating a custom_jvp/custom_vjp function with respect to a
// value it captures (rather than an argument) is a TypeError, as in JAX.
#pragma once
#include <memory>
#include <tuple>
#include <utility>

#include "transforms/autodiff.h"
#include "transforms/make_ir.h"

namespace fluxion {

namespace detail {
/// Binds `p` over `operands` and rebuilds the output tree `like`.
template <class Out>
Out bind_tree(Prim p, const std::vector<Array>& operands, const Params& params, const Out& like, SourceLoc loc) {
  std::vector<Array> outs = bind(p, operands, params, loc);
  const Array* it = outs.data();
  return tree::rebuild(like, it);
}
inline ProgramRef share(Program p) { return std::make_shared<const Program>(std::move(p)); }
}  // namespace detail

template <class F, class J>
auto custom_jvp(F f, J jvp_rule, SourceLoc loc = std::source_location::current()) {
  return [f, jvp_rule, loc](const auto&... args) {
    auto primal_args = std::tuple{args...};
    auto [call, out] = detail::trace_to_program(f, args...);
    auto rule = [&](const decltype(primal_args)& p, const decltype(primal_args)& t) {
      auto [y, ty] = jvp_rule(p, t);
      return std::vector<Array>{tree::leaves(std::pair{y, ty})};
    };
    auto [jvp, jout] = detail::trace_to_program(rule, primal_args, primal_args);
    if (jvp.outvars.size() != 2 * call.outvars.size())
      throw TypeError("TypeError: custom_jvp at " + loc.str() +
                      ": the JVP rule must return {output, output tangent} with the structure of the function's output");
    std::vector<Array> consts, jvp_consts;
    Program call_closed = hoist_consts(std::move(call), consts);
    Program jvp_closed = hoist_consts(std::move(jvp), jvp_consts);
    std::vector<Array> operands = consts;
    operands.insert(operands.end(), jvp_consts.begin(), jvp_consts.end());
    for (const Array& a : detail::flatten_args(args...).leaves) operands.push_back(a);
    Params params{{"call", detail::share(std::move(call_closed))},
                  {"jvp", detail::share(std::move(jvp_closed))},
                  {"num_consts", int64_t(consts.size())},
                  {"num_jvp_consts", int64_t(jvp_consts.size())}};
    return detail::bind_tree(Prim::custom_jvp_call, operands, params, out, loc);
  };
}

template <class Fwd, class Bwd>
auto custom_vjp(Fwd fwd, Bwd bwd, SourceLoc loc = std::source_location::current()) {
  return [fwd, bwd, loc](const auto&... args) {
    auto [fwd_program, fwd_out] = detail::trace_to_program(fwd, args...);
    const auto& out_like = fwd_out.first;
    const auto& res_like = fwd_out.second;
    using OutT = std::decay_t<decltype(out_like)>;
    const size_t num_outs = tree::leaves(out_like).size();
    auto backward = [&](const std::decay_t<decltype(res_like)>& res, const OutT& ct) {
      return tree::leaves(bwd(res, ct));
    };
    auto [bwd_program, bwd_out] = detail::trace_to_program(backward, res_like, out_like);
    const size_t num_args = detail::flatten_args(args...).leaves.size();
    if (bwd_program.outvars.size() != num_args)
      throw TypeError("TypeError: custom_vjp at " + loc.str() + ": bwd returns " +
                      std::to_string(bwd_program.outvars.size()) + " cotangent leaves for " + std::to_string(num_args) +
                      " argument leaves");
    std::vector<Array> consts, bwd_consts;
    Program fwd_closed = hoist_consts(std::move(fwd_program), consts);
    Program bwd_closed = hoist_consts(std::move(bwd_program), bwd_consts);
    std::vector<Array> operands = consts;
    operands.insert(operands.end(), bwd_consts.begin(), bwd_consts.end());
    for (const Array& a : detail::flatten_args(args...).leaves) operands.push_back(a);
    Params params{{"fwd", detail::share(std::move(fwd_closed))},
                  {"bwd", detail::share(std::move(bwd_closed))},
                  {"num_outs", int64_t(num_outs)},
                  {"num_consts", int64_t(consts.size())},
                  {"num_bwd_consts", int64_t(bwd_consts.size())}};
    return detail::bind_tree(Prim::custom_vjp_call, operands, params, out_like, loc);
  };
}

template <class F>
auto checkpoint(F f, SourceLoc loc = std::source_location::current()) {
  return [f, loc](const auto&... args) {
    auto [program, out] = detail::trace_to_program(f, args...);
    std::vector<Array> consts;
    Program closed = hoist_consts(std::move(program), consts);
    std::vector<Array> operands = consts;
    for (const Array& a : detail::flatten_args(args...).leaves) operands.push_back(a);
    Params params{{"program", detail::share(std::move(closed))}, {"num_consts", int64_t(consts.size())}};
    return detail::bind_tree(Prim::checkpoint, operands, params, out, loc);
  };
}

}  // namespace fluxion
