// Buffer donation (jax.jit's donate_argnums): which outputs of a compiled program may be written
// into which donated inputs' buffers, and the run-time side -- which buffers really are free to
// take, and deleting the donated arrays afterwards.
//
// The compiled kernel is the same with or without donation; only the output pointers change. So an
// output may take an input's buffer only where the kernel reads every element of that input before
// (or, element by element, as) it writes the output -- donation_plan proves that from the program
// and the way lowering/ turns it into loops (docs/jit.md, "Buffer donation"). Anything it cannot
// prove gets a fresh buffer, as without donation.
#pragma once
#include <string>
#include <vector>

#include "ir/array.h"
#include "ir/program.h"

namespace fluxion {

/// How a compiled kernel reads a primitive's operands, which decides when its output may take a
/// donated input's buffer (a fact of each primitive's block, prims/registry.h).
enum class Reads : uint8_t {
  other,        // may alias or be fused in any way: shape ops, gathers, scans, control flow, ...
  elementwise,  // each output element from the operands' elements at its own index (fusable)
  whole,        // the operands completely, into a fresh result, before anything after it runs
};

namespace donation {

/// Records p's fact (the registry does, as each primitive's block loads) and reads it back.
void register_reads(Prim p, Reads reads);
Reads reads(Prim p);

/// Per output of `p`: the position in p.invars of the donated input whose buffer it may be
/// written into, or -1. `donated[i]` says whether p.invars[i] is donated. Each input serves at
/// most one output, and only one of its own type.
std::vector<int> plan(const Program& p, const std::vector<bool>& donated);

/// Per output: the buffer of input plan[k] when the call may really take it -- the array is
/// concrete, owns its host memory alone (no other array, view or closure shares the buffer), and
/// no other input of this call is the same buffer -- else null. `consts` are the call's closure
/// arrays.
std::vector<std::shared_ptr<Buffer>> takeable(const std::vector<int>& plan, std::span<const Array> inputs,
                                              std::span<const Array> consts);

/// Raises the use-after-donation ValueError when a leaf of a call was donated to an earlier one.
void check_live(std::span<const Array> leaves);

/// Deletes the donated arrays after the call: their handles (every copy) then raise a ValueError
/// naming the call, the argument and the leaf when their data is used.
void delete_donated(std::span<const Array> leaves, const std::vector<bool>& donated,
                    const std::vector<int>& leaf_argument, const std::string& where);

}  // namespace donation
}  // namespace fluxion
