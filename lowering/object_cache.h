// The on-disk cache of kernels' object code (FLUXION_CACHE_DIR), like JAX's persistent compilation
// cache: a process that finds a kernel there skips lowering, every MLIR pass and LLVM, and only
// links (lowering/codegen_cpu.h).
//
// One file per kernel: a header, then the object code. The header holds the format version, the
// build of the library that compiled it (the ELF build ID of libfluxion.so: another build lowers
// the same program differently, and its kernels call the runtime of their own build), the target
// (CPU and features: object code for AVX-512 must never reach an AVX2 process sharing the
// directory), the libmvec variant, and the whole fingerprint -- so a hash collision, a file of
// another version, build or target, or a damaged file is a miss, never a wrong kernel. The file is named
// by a hash of its whole header, so processes on different hosts sharing a directory keep their
// own files. Files are written under a temporary name and renamed: readers never see half a file.
//
// On by default, as a user expects a second run not to compile again: the directory is
// FLUXION_CACHE_DIR, else $XDG_CACHE_HOME/fluxion, else ~/.cache/fluxion (`off` turns it off). Its
// size is bounded (FLUXION_CACHE_MAX_MB): a hit refreshes its file's time, and a process that has
// written a sixteenth of the bound since it last looked removes the files used longest ago until the
// directory holds 80% of it. Several processes may share the directory: a file removed under a
// reader is a miss for it (an open file stays readable), never a wrong kernel.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace fluxion::lowering {

class ObjectCacheEntry {
 public:
  /// The entry of the kernel whose fingerprint is `key`, in directory `dir`.
  ObjectCacheEntry(const std::string& dir, const std::string& key);
  /// Its object code, or nothing on a miss (no file, another header, a damaged file).
  std::optional<std::string> read() const;
  /// Stores `object`; an unwritable directory only costs the next process a compile.
  void write(const std::string& object) const;
  const std::string& path() const { return path_; }

 private:
  std::string header_, path_;
};

/// The disk cache's directory (made if missing), or nothing when it is off or cannot be made.
std::optional<std::string> kernel_cache_dir();

/// Removes the least recently used kernels of `dir` until it holds at most 80% of `max_bytes`,
/// when it holds more than `max_bytes`; returns the bytes it holds after.
uint64_t trim_kernel_cache(const std::string& dir, uint64_t max_bytes);

/// The ELF build ID of the binary this code is linked into (libfluxion.so) as hex digits; where
/// there is none, the binary's path, size and modification time.
const std::string& library_build_id();

/// A stable 64-bit hash as 16 hex digits (file names of dumps and cache entries).
std::string hex_hash(const std::string& s);

}  // namespace fluxion::lowering
