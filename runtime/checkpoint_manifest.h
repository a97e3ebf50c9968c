// The manifest of a sharded checkpoint (runtime/sharded_checkpoint.h has the format), read and
// checked, and the saved blocks read back and cut to any region of an array.
#pragma once
#include <map>
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

/// Reads the saved blocks, each file once, and checks each against the manifest.
class BlockReader {
 public:
  explicit BlockReader(std::string dir) : dir_(std::move(dir)) {}
  /// The region [start, start + shape) of `a`, from the saved blocks that overlap it.
  Array region(const SavedArray& a, const std::vector<int64_t>& start, const Shape& shape);
  Array whole(const SavedArray& a) { return region(a, std::vector<int64_t>(a.shape.size(), 0), a.shape); }

 private:
  const Array& block(const SavedBlock& b, DType dtype);
  std::string dir_;
  std::map<std::string, std::map<std::string, Array>> files_;
};

}  // namespace fluxion::runtime::manifest
