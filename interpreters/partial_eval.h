// Partial evaluation: splits a program into the part computable from the known inputs and the
// part that needs the unknown ones. linearize = jvp_program + partial_eval with the tangents
// unknown: the known part is the primal computation (it also produces the residuals), the
// unknown part is the linear tangent program.
#pragma once
#include <vector>

#include "ir/program.h"

namespace fluxion {

struct PartialEval {
  /// (known invars...) -> (known outputs..., residuals...)
  Program known;
  /// (residuals..., unknown invars...) -> (unknown outputs...)
  Program unknown;
  /// For each output of the original program: produced by `unknown` (true) or by `known` (false).
  std::vector<bool> out_unknown;
  size_t num_residuals = 0;
};

/// `unknown_in[i]`: invar i is unknown. `instantiate[i]`: output i must come out of the unknown
/// program even if it is computable from known inputs (it then travels as a residual).
PartialEval partial_eval(Program p, const std::vector<bool>& unknown_in, const std::vector<bool>& instantiate);

}  // namespace fluxion
