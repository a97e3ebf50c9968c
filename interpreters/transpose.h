// Transposition of linear programs: the reverse half of reverse-mode AD.
//
// transpose_program(p, linear) takes a program that is linear in the invars marked `linear` (the
// others are known values: residuals) and returns the program
//     (non-linear invars..., cotangents of p's outputs...) -> (cotangents of the linear invars...)
// It evaluates p's non-linear eqns forward, then walks the linear eqns backwards, calling each
// primitive's transpose rule and accumulating cotangents with add_any. Zero cotangents stay
// symbolic and are never materialised inside the walk.
#pragma once
#include <span>
#include <vector>

#include "ir/array.h"
#include "ir/program.h"

namespace fluxion {

/// One input of a linear eqn as its transpose rule sees it: a known value, or a linear input of
/// which only the type is known.
struct LinearArg {
  Array value;         // set iff !linear
  AbstractArray aval;  // always set
  bool linear = false;
};

/// The transpose rule of a linear primitive. `cts` holds one cotangent per eqn output (empty Array
/// for zero; at least one nonzero). Returns one cotangent per input: for linear inputs the
/// cotangent (empty for zero), for the others an empty Array.
using TransposeRule = std::vector<Array> (*)(std::span<const Array> cts, std::span<const LinearArg> args,
                                             const Params& params, SourceLoc loc);

/// The transpose rule of p, or nullptr for a primitive that is linear in nothing (the table is
/// transforms/'s; prims/ fills it, one block per primitive: prims/registry.h).
TransposeRule transpose_rule(Prim p);
void register_transpose_rule(Prim p, TransposeRule rule);

/// See the file comment. The result's outvars are one cotangent per linear invar, in order
/// (zeros materialised).
Program transpose_program(const Program& p, const std::vector<bool>& linear);

/// Interprets the transposition in the current context: `known` holds values for the non-linear
/// invars (in order), `cts` the output cotangents (empty = zero). Returns cotangents of the linear
/// invars (empty = zero).
std::vector<Array> transpose_eval(const Program& p, const std::vector<bool>& linear, std::span<const Array> known,
                                  std::span<const Array> cts);

}  // namespace fluxion
