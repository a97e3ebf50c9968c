// Forward-mode differentiation as a program rewrite.
//
// jvp_program(p, which) builds the program (primals..., tangents of the `which` inputs...) ->
// (outputs..., output tangents...) by interpreting p eqn by eqn: each eqn's primal is re-bound and
// its JVP rule emits the tangent computation with ordinary ops. A tangent is an Array, or an empty
// Array for a symbolic zero, which is never materialised: an eqn all of whose input tangents are
// zero emits no tangent code at all, and integer/bool values never carry a tangent.
#pragma once
#include <span>
#include <vector>

#include "ir/array.h"
#include "ir/program.h"

namespace fluxion {

/// A tangent value: an Array, or a symbolic zero (an empty Array).
inline bool is_zero(const Array& t) { return !t.valid(); }

/// The JVP rule of a primitive. `primals` are the eqn's inputs, `tangents` their tangents (at least
/// one nonzero), `outs` the primal outputs (already bound). Returns one tangent per output (empty
/// for zero). Rules are written with the public op API, so they read like the math.
using JvpRule = std::vector<Array> (*)(std::span<const Array> primals, std::span<const Array> tangents,
                                       std::span<const Array> outs, const Params& params, SourceLoc loc);

/// A primitive's entry in the JVP table. transforms/ owns the table; prims/ fills it, one block per
/// primitive (prims/registry.h).
struct JvpRules {
  JvpRule rule = nullptr;
  /// The primitive is piecewise constant (comparisons, floor, sign, argmax, ...): its derivative is
  /// an explicit zero, and it needs no rule.
  bool zero_derivative = false;
  /// The rule also computes the primal outputs: jvp_eval does not bind the eqn first, passes `outs`
  /// empty, and the rule returns the outputs followed by their tangents. For primitives whose
  /// derivative needs values the primal computation produces on the way (scan stores per-step
  /// residuals), so that the primal work is not done twice.
  bool computes_primal = false;
};
const JvpRules& jvp_rules(Prim p);
void register_jvp_rules(Prim p, const JvpRules& rules);

/// Whether values of this dtype carry tangents (floats and complex; ints and bools have a float0-like
/// zero).
inline bool has_tangent_space(DType d) { return is_inexact(d); }

/// The JVP of p. `nonzero[i]` says whether invar i has a tangent input. The result takes the primals,
/// then one tangent per nonzero invar, and returns the outputs, then one tangent per output (zeros
/// materialised as zeros of the output's type). `out_nonzero`, if given, receives which output
/// tangents are structurally nonzero.
/// `num_tangent_outputs` (default: all) limits the tangent outputs to the first outputs of p.
Program jvp_program(const Program& p, const std::vector<bool>& nonzero, std::vector<bool>* out_nonzero = nullptr,
                    size_t num_tangent_outputs = size_t(-1));

/// Interprets p on primals and tangents in the current context (eager or inside a trace): the
/// building block of jvp_program and of user-level fx::jvp.
void jvp_eval(const Program& p, std::span<const Array> primals, std::span<const Array> tangents,
              std::vector<Array>& outs, std::vector<Array>& out_tangents);

/// Adds two tangents, keeping symbolic zeros symbolic (add_any).
Array add_tangents(const Array& a, const Array& b, SourceLoc loc);

/// Materialises a symbolic zero tangent for a value of type `aval`.
Array zeros_for(const AbstractArray& aval, SourceLoc loc);

// ---- helpers for writing JVP rules ------------------------------------------------------------
/// The JVP of a primitive linear in all its operands: the primitive itself over the tangents (zero
/// tangents materialised).
std::vector<Array> linear_jvp(Prim p, std::span<const Array> primals, std::span<const Array> tangents,
                              const Params& params, SourceLoc loc);
/// linear_jvp as the JVP rule of P.
template <Prim P>
std::vector<Array> linear_jvp(std::span<const Array> primals, std::span<const Array> tangents, std::span<const Array>,
                              const Params& params, SourceLoc loc) {
  return linear_jvp(P, primals, tangents, params, loc);
}

}  // namespace fluxion
