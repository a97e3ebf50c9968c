// Sharded checkpoints (issue 31 item 5; docs/distributed.md "Sharded checkpoints"): fx::save(dir,
// tree) and fx::load(dir, like) when `dir` names a directory (train/sharded_io.h decides which paths
// do). Each process writes only the blocks its devices hold -- nothing is gathered -- and loading
// lays every leaf out as `like`'s leaf is, over the mesh it was saved on or any other.
//
// The directory:
//   manifest.json                    {"format": "fluxion-sharded-checkpoint", "version": 1,
//                                     "generation": g, "arrays": {name: {"dtype", "shape",
//                                     "mesh": {"axes", "devices", "platform"}, "spec" (the layout
//                                     it was saved in; absent for an unsharded leaf), "blocks":
//                                     [{"file", "tensor", "start", "shape"}, ...]}}}
//   shards-<p>.<g>.safetensors       process p's blocks of generation g (any safetensors reader
//                                    opens it)
//
// Each distinct block is written once, by the process of the first device in mesh order holding
// it (a block replicated over several devices is not written twice); an unsharded leaf is one
// block, written by process 0 (a global value is the same in every process). Saving is atomic:
// every process writes its file of the next generation (temporary file, fsync, rename), the
// processes agree that every write succeeded, and only then does process 0 replace the manifest
// (temporary file, rename) and remove the other generations' files; a crash before that leaves the
// previous checkpoint whole. The processes share the directory (one file system).
//
// Loading checks the manifest -- its format and version, each array's dtype and shape, blocks
// inside the array that tile it exactly (no gap, no overlap, at most manifest::kMaxBlocks), file names inside
// the directory -- and each block against its file: a malformed or hostile manifest is an IOError
// (a shape no array can have a ShapeError), a tree that does not match it a ValueError, ShapeError
// or TypeError as for a single file. A device's block is assembled from the saved blocks that
// overlap it, reading only the files that hold them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/array.h"
#include "train/checkpoint.h"

namespace fluxion::runtime {

void write_sharded_checkpoint(const std::string& dir, const checkpoint_io::Entries& entries);
checkpoint_io::Entries read_sharded_checkpoint(const std::string& dir);
std::vector<Array> lay_out_sharded_checkpoint(const std::string& dir, std::vector<Array> found,
                                              const std::vector<std::string>& names, const std::vector<Array>& like);

}  // namespace fluxion::runtime
