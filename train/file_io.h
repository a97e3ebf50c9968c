// Files for checkpoints and datasets: whole-file reads (gzip decompressed on the fly), and atomic
// writes -- the bytes go to a temporary file in the same directory, which is flushed to disk and
// renamed over the destination, so a crash leaves either the old file or the new one, never half.
// Every failure is an IOError naming the path and the system's reason.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fluxion::io {

/// The whole file; a gzip file (by its magic bytes, whatever its name) is decompressed. More than
/// FLUXION_MAX_FILE_MB (half the memory by default) is an IOError, so a gzip bomb cannot exhaust memory.
std::string read_file(const std::string& path);

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// Removes the temporary file unless commit() ran.
  ~AtomicFile();
  void write(const void* data, size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }
  /// Flushes, syncs and renames the temporary file over the destination.
  void commit();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
};

/// A file read in parts at byte offsets (pread), for a reader that needs a few ranges of a large
/// file -- a sharded checkpoint's block cut to one device's region. Plain files only: a gzip file
/// is an IOError (read_file decompresses it whole).
class FileRanges {
 public:
  explicit FileRanges(std::string path);
  FileRanges(const FileRanges&) = delete;
  FileRanges& operator=(const FileRanges&) = delete;
  ~FileRanges();
  uint64_t size() const { return size_; }
  /// Exactly n bytes from `offset`; an IOError naming the path, the range and the reason otherwise.
  void read(void* dst, size_t n, uint64_t offset) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

[[noreturn]] void fail(const std::string& path, const std::string& what);

/// A file that declares a shape no array can have (shape_problem: a negative dimension, a size past
/// int64): a ShapeError naming the reading operation, the file and where the shape is declared,
/// "ShapeError: load(w.npy): the header's shape (-4,): the shape [-4] has a negative dimension".
[[noreturn]] void shape_fail(const std::string& op, const std::string& path, const std::string& what);

/// Little-endian integers (every format here stores them so).
inline void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += char((v >> (8 * i)) & 0xFF);
}
inline uint64_t get_le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace fluxion::io
