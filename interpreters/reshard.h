// Moving one device's block of a value from one layout to another inside a partitioned program
// (interpreters/partition.h), with the fewest collectives this simple scheme knows:
//
//   partial sums over a, and `to` splits a dim over a next   psum_scatter over a (reduce-scatter)
//   partial sums over a otherwise                            psum over a (all-reduce)
//   a dim split over a alone, which `to` splits elsewhere    all_to_all over a
//   a dim split over more than `to` wants                    all_gather over its minor axes, one by one
//   a dim split over less than `to` wants                    a slice at axis_index: nothing moves
//
// Each inserted collective is logged with the bytes it moves: per device, (n-1)·B received for an
// all_gather of a B-byte block over n devices, 2(n-1)/n·B for a psum (a ring all-reduce),
// (n-1)/n·B for a psum_scatter or an all_to_all of B bytes; in all, that times the devices.
#pragma once
#include <string>
#include <vector>

#include "ir/array.h"
#include "interpreters/partition.h"

namespace fluxion {

/// What resharding inserted: one line per collective, and the bytes they move (all devices).
struct ReshardLog {
  std::vector<std::string> notes;
  int64_t bytes = 0;
};

/// x, this device's block of a value of type `global` laid out by `from`, laid out by `to`: the
/// collectives are bound into the current trace (with every mesh axis's name and size in their
/// params), `from` becomes `to`.
Array reshard(const Array& x, Layout& from, const PartitionSpec& to, const Mesh& mesh, const AbstractArray& global,
              ReshardLog& log, SourceLoc loc);

}  // namespace fluxion
