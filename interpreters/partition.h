// The partitioner of sharded jit: a program over global arrays, with a layout for each input
// (in_shardings), each output (out_shardings) and wherever the user constrained one
// (with_sharding_constraint), becomes the per-device program of a shard_map over the mesh
// (GSPMD's propagation, kept simple): layouts flow forward eqn by eqn, each primitive's sharding
// rule (its record's `shard` field, prims/registry.h) says which layouts its operands must be in
// and which layouts its results then have, and where a value's layout is not the one its consumer
// needs, collectives move it:
//
//   split over a -> whole               all_gather (tiled) over a
//   whole -> split over a               a local slice at axis_index(a): nothing moves
//   split over a, dim i -> dim j        all_to_all over a
//   partial sums over a -> whole        psum over a (all-reduce)
//   partial sums over a -> split over a psum_scatter over a (reduce-scatter)
//
// A primitive without a rule is computed replicated: its operands are gathered whole, and the
// dump says so. With FLUXION_DUMP set the partitioned program is written beside the jit's other
// dumps with every value's per-device type, every inserted collective and the bytes it moves.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/sharding.h"

namespace fluxion {

/// A value's layout as the partitioner tracks it: how its dimensions are split, and the mesh axes
/// over which every device holds only a summand of it (a partial sum still to be added: what a
/// contraction over a split dimension leaves).
struct Layout {
  PartitionSpec spec;
  AxisList partial;
  friend bool operator==(const Layout&, const Layout&) = default;
};

/// What a sharding rule decides for one eqn.
struct ShardPlan {
  /// The layouts the operands must be in (whole sums: no partial).
  std::vector<PartitionSpec> in;
  /// The layouts of the per-device results.
  std::vector<Layout> out;
  /// The per-device eqn's params (shapes held in params become per-device shapes).
  Params params;
  /// Bit i: the eqn is linear in operand i, so a partial sum there may pass through unsummed and
  /// make every result a partial sum over the same axes -- jointly (every operand in the mask a
  /// partial sum over the same axes: add, sub) or, with one_at_a_time, one of them alone (mul,
  /// dot_general). The partitioner checks that the operand is in the spec `in` asks and that no
  /// result is split over those axes; otherwise the sum is added first.
  uint32_t linear = 0;
  bool one_at_a_time = false;
};

/// A primitive's sharding rule: the operands' current specs (partial sums not yet added show as
/// their spec), their global types and the eqn's params -> the plan, or nullopt to compute the
/// eqn replicated.
using ShardRule = std::optional<ShardPlan> (*)(std::span<const PartitionSpec> in, std::span<const AbstractArray> in_avals,
                                               const Params& params, const Mesh& mesh);

/// The sharding rule of p (nullptr: computed replicated). The table is the partitioner's; prims/
/// fills it, one block per primitive (prims/registry.h).
ShardRule shard_rule(Prim p);
void register_shard_rule(Prim p, ShardRule rule);

/// A partitioned program: the per-device body and the specs of its inputs and outputs.
struct Partitioned {
  Program body;
  std::vector<PartitionSpec> in_specs, out_specs;
  /// One line per eqn of the body that matters to a reader: inserted collectives with the bytes
  /// each device sends, eqns computed replicated.
  std::vector<std::string> notes;
  /// The bytes the inserted collectives move per call, summed over devices (docs/distributed.md
  /// says how each collective is counted).
  int64_t collective_bytes = 0;
};

/// Partitions `p` over `mesh`: `in_specs` per invar; `out_specs` per outvar (nullopt: whatever
/// propagation gives). Constraint eqns (sharding_constraint) fix their operand's layout.
Partitioned partition_program(const Program& p, const Mesh& mesh, const std::vector<PartitionSpec>& in_specs,
                              const std::vector<std::optional<PartitionSpec>>& out_specs);

/// The rule of elementwise primitives (unary, binary, comparisons, select, clamp, conversions):
/// every operand of full rank in the layout of the most split one, scalars whole; the result in
/// that layout.
std::optional<ShardPlan> shard_elementwise(std::span<const PartitionSpec> in, std::span<const AbstractArray> avals,
                                           const Params& params, const Mesh& mesh);

/// shard_elementwise for a primitive linear in the operands of `Linear` (see ShardPlan::linear).
template <uint32_t Linear, bool OneAtATime = false>
std::optional<ShardPlan> shard_linear_elementwise(std::span<const PartitionSpec> in, std::span<const AbstractArray> avals,
                                                  const Params& params, const Mesh& mesh) {
  std::optional<ShardPlan> plan = shard_elementwise(in, avals, params, mesh);
  plan->linear = Linear;
  plan->one_at_a_time = OneAtATime;
  return plan;
}

/// p without sharding_constraint eqns (their output replaced by their operand), recursively: what
/// an unsharded jit compiles.
Program drop_sharding_constraints(Program p);

}  // namespace fluxion
