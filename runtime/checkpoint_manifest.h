// The manifest of a sharded checkpoint (runtime/sharded_checkpoint.h has the format), read and
// checked, and the saved blocks read back and cut to any region of an array.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/array.h"
#include "ir/sharding.h"

namespace fluxion::runtime::manifest {

inline constexpr const char* kFormat = "fluxion-sharded-checkpoint";
inline constexpr const char* kFileName = "manifest.json";
/// The most blocks one array may have (the check that they tile it is quadratic in them).
inline constexpr size_t kMaxBlocks = 4096;

struct SavedBlock {
  std::string file, tensor;
  std::vector<int64_t> start;
  Shape shape;
};

struct SavedArray {
  DType dtype = DType::float32;
  Shape shape;
  /// The layout it was saved in (absent: an unsharded leaf).
  std::optional<NamedSharding> layout;
  std::vector<SavedBlock> blocks;
};

struct Manifest {
  int64_t generation = 0;
  std::map<std::string, SavedArray> arrays;
};

/// The manifest of `dir`, checked (IOError naming the manifest's path and what is wrong).
Manifest read(const std::string& dir);
/// The generation of `dir`'s manifest, or -1 where there is none that can be read.
int64_t generation(const std::string& dir);

/// Reads regions of the saved arrays: each file's header once, then from each saved block only
/// the bytes the region needs (a run of contiguous bytes per row of the overlap, merged where the
/// overlap spans whole rows), checking each block against the manifest.
class BlockReader {
 public:
  explicit BlockReader(std::string dir);
  ~BlockReader();
  /// The region [start, start + shape) of `a`, from the saved blocks that overlap it.
  Array region(const SavedArray& a, const std::vector<int64_t>& start, const Shape& shape);
  Array whole(const SavedArray& a) { return region(a, std::vector<int64_t>(a.shape.size(), 0), a.shape); }
  /// The data bytes read so far (headers apart): what a test checks partial reads by.
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  struct File;
  const File& file(const std::string& name);
  std::string dir_;
  std::map<std::string, std::unique_ptr<File>> files_;
  uint64_t bytes_read_ = 0;
};

}  // namespace fluxion::runtime::manifest
