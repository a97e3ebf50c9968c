// A safetensors file's header alone, for a reader that takes parts of its tensors instead of the
// whole file (runtime/checkpoint_manifest.cpp: a device's region of a sharded checkpoint's block).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/shape.h"
#include "train/file_io.h"

namespace fluxion::checkpoint_io {

/// A tensor of a safetensors file: its dtype, shape and the byte offset of its data in the file.
struct SafetensorsTensor {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t offset;
};

/// The header, checked as read_safetensors checks it (IOError naming the file and what is wrong).
std::vector<SafetensorsTensor> read_safetensors_header(const io::FileRanges& file);

}  // namespace fluxion::checkpoint_io
