// Reverse mode as a composition of program rewrites:
//   jvp_program -> partial_eval (tangents unknown) -> transpose_program of the linear part.
// The results are two programs, simplified: the forward pass that also saves residuals, and the
// backward pass from residuals and output cotangents to input cotangents.
#pragma once
#include <vector>

#include "ir/program.h"

namespace fluxion {

struct VjpPrograms {
  /// (invars of p...) -> (outputs of p..., residuals...)
  Program forward;
  /// (residuals..., cotangents of the first `num_diff_outputs` outputs...) -> (cotangents of the
  /// invars marked in `wrt`, in order)
  Program backward;
  size_t num_outputs = 0;
  size_t num_residuals = 0;
};

/// `wrt[i]`: differentiate with respect to invar i. Only the first `num_diff_outputs` outputs
/// receive cotangents (the rest -- e.g. auxiliary outputs -- are carried through the forward pass).
VjpPrograms vjp_programs(const Program& p, const std::vector<bool>& wrt, size_t num_diff_outputs);

/// The whole gradient as one simplified program: (invars of p...) -> (the outputs of p marked in
/// `keep_outputs`..., gradients of output 0 -- a float scalar -- w.r.t. the `wrt` invars...).
/// Forward and backward passes live in one program, so the seed cotangent 1 is a literal that
/// folds away, unused primal work is removed, and cse works across both passes.
Program grad_program(const Program& p, const std::vector<bool>& wrt, const std::vector<bool>& keep_outputs);

/// The linearization of p: `forward` as above, and `linear`: (residuals..., tangents of the `wrt`
/// invars...) -> (tangents of the first num_diff_outputs outputs...).
struct LinearizedPrograms {
  Program forward;
  Program linear;
  size_t num_outputs = 0;
  size_t num_residuals = 0;
};
LinearizedPrograms linearize_programs(const Program& p, const std::vector<bool>& wrt, size_t num_diff_outputs);

}  // namespace fluxion
