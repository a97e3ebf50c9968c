// The sharded checkpoint format's entry points, as fx::save and fx::load (train/checkpoint.h) reach
// them: the format is written where arrays' blocks, meshes and processes are known
// (runtime/sharded_checkpoint.cpp), a floor above this one, which registers itself here when the
// library loads.
#pragma once
#include <string>
#include <vector>

#include "train/checkpoint.h"

namespace fluxion::checkpoint_io {

struct ShardedFormat {
  /// Writes this process's blocks of `entries` and (process 0) the manifest into directory `dir`.
  void (*write)(const std::string& dir, const Entries& entries) = nullptr;
  /// Every array of the checkpoint: laid out as it was saved where its mesh's devices are here
  /// (each process reads its devices' blocks), else whole.
  Entries (*read)(const std::string& dir) = nullptr;
  /// `found`, the arrays of `read`'s entries that the tree names (checked against `like` by
  /// match), each laid out as its `like` leaf is: kept where it already is, else assembled again
  /// from the blocks in the directory that this process's devices need (whole for a leaf that is
  /// not sharded).
  std::vector<Array> (*lay_out)(const std::string& dir, std::vector<Array> found, const std::vector<std::string>& names,
                                const std::vector<Array>& like) = nullptr;
};

void set_sharded_format(const ShardedFormat& format);

/// Whether `path` names a sharded checkpoint: an existing directory, or a last path component
/// without an extension ("ckpt", "run/step_100/").
bool is_sharded_path(const std::string& path);

}  // namespace fluxion::checkpoint_io
