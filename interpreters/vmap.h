// vmap: automatic batching as a program rewrite.
//
// vmap_eval interprets a program on batched values -- each an Array with the position of its batch
// dimension, or not mapped -- eqn by eqn: an eqn whose inputs are all unmapped is re-bound as is
// (unbatched work stays unbatched), any other goes through its primitive's batching rule, which
// emits the batched computation with ordinary ops and says where the batch dimension of each
// output ended up. Rules move a batch dimension only when they must, so batched programs carry no
// gratuitous transposes (a batched matmul stays one dot_general with one more batch dimension).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "ir/array.h"
#include "ir/program.h"

namespace fluxion {

/// The batch dimension of a value that is not batched (the same for every batch element).
inline constexpr int64_t kNotMapped = -1;

/// A value under vmap: the array and the position of its batch dimension (or kNotMapped).
struct BatchedArray {
  Array value;
  int64_t dim = kNotMapped;
};

/// The batching rule of a primitive: `args` are the eqn's inputs as batched arrays (at least one
/// mapped), `axis_size` the batch size. Returns one batched output per primitive output.
using BatchRule = std::vector<BatchedArray> (*)(std::span<const BatchedArray> args, const Params& params,
                                                int64_t axis_size, SourceLoc loc);

/// The batching rule of p, or nullptr (the table is transforms/'s; prims/ fills it, one block per
/// primitive: prims/registry.h).
BatchRule batch_rule(Prim p);
void register_batch_rule(Prim p, BatchRule rule);

/// Interprets p on batched arguments in the current context (eager, or recorded into the
/// innermost trace). `args[i].dim` says where argument i's batch dimension is.
std::vector<BatchedArray> vmap_eval(const Program& p, std::span<const BatchedArray> args, int64_t axis_size);

// ---- helpers for writing batching rules ---------------------------------------------------------
/// x with its batch dimension moved from `from` to `to` (one transpose; none if from == to).
Array move_batch_dim(const Array& x, int64_t from, int64_t to, SourceLoc loc);
/// A per-example dimension list renumbered for an array whose batch dimension sits at `bd`: the
/// dimensions at or after it move up by one (unchanged when bd is kNotMapped).
IntList dims_past_batch(const IntList& dims, int64_t bd);
/// x with a batch dimension at position `to`: moved there if mapped, broadcast to `axis_size`
/// there if not.
Array batch_at(const BatchedArray& x, int64_t to, int64_t axis_size, SourceLoc loc);
/// Every operand with a batch dimension where the first mapped one has it (unmapped ones
/// broadcast there); `dim` receives that position.
std::vector<Array> batch_like_first(std::span<const BatchedArray> xs, int64_t axis_size, SourceLoc loc, int64_t& dim);
/// A rule for primitives whose operands must agree elementwise (unary and n-ary elementwise,
/// select, clamp): if every mapped operand has the same rank and batch position the primitive is
/// applied as is; otherwise mapped operands are moved to position 0 and unmapped non-scalar
/// operands broadcast there. Rank-0 unmapped operands stay scalars.
std::vector<BatchedArray> elementwise_batch_rule(Prim p, std::span<const BatchedArray> args, const Params& params,
                                                 int64_t axis_size, SourceLoc loc);

}  // namespace fluxion
