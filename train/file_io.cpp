#include "train/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/settings.h"

namespace fluxion::io {

void fail(const std::string& path, const std::string& what) { throw IOError("IOError: " + path + ": " + what); }

void shape_fail(const std::string& op, const std::string& path, const std::string& what) {
  throw ShapeError("ShapeError: " + op + "(" + path + "): " + what);
}

// zlib's message for the last error, without the path it puts first (fail() names the file).
static std::string gz_message(gzFile f, const std::string& path, int* err) {
  std::string msg = gzerror(f, err);
  if (msg.rfind(path + ": ", 0) == 0) msg.erase(0, path.size() + 2);
  return msg;
}

// The most bytes a file read whole may give: FLUXION_MAX_FILE_MB, else half the machine's memory.
// gzip inflates up to about 1000:1, so a few megabytes of zeros would otherwise fill the memory and
// end the process (std::bad_alloc, or the kernel's OOM killer) instead of raising an IOError.
static size_t max_file_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  const int64_t half_mb = pages > 0 && page > 0 ? int64_t(pages) * page / 2 / (1 << 20) : int64_t(1) << 14;
  return size_t(integer_setting("FLUXION_MAX_FILE_MB", half_mb)) << 20;
}

std::string read_file(const std::string& path) {
  // gzread reads gzip and plain files alike.
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) fail(path, std::string("cannot open: ") + std::strerror(errno));
  // zlib's buffers (1 MiB for a large file) and ours sized to the file: for the many small files
  // read (checkpoint headers, the fuzzers' inputs) allocating and zeroing megabytes cost more than
  // the reading.
  struct stat st {};
  const size_t size = ::stat(path.c_str(), &st) == 0 ? size_t(st.st_size) : 0;
  const size_t chunk = std::clamp<size_t>(size, size_t(1) << 13, size_t(1) << 20);
  gzbuffer(f, unsigned(chunk));
  std::string out;
  const size_t limit = max_file_bytes();
  std::vector<char> buf(std::min<size_t>(chunk, size_t(1) << 16));
  for (;;) {
    int n = gzread(f, buf.data(), unsigned(buf.size()));
    if (n < 0) {
      int err = 0;
      std::string msg = gz_message(f, path, &err);
      gzclose(f);
      fail(path, "read failed: " + msg);
    }
    if (n == 0) break;
    if (out.size() + size_t(n) > limit) {
      const bool gzip_stream = gzdirect(f) == 0;
      gzclose(f);
      fail(path, std::string(gzip_stream ? "inflates" : "holds") + " more than " + std::to_string(limit >> 20) +
                     " MiB (" + std::to_string(size) + " bytes on disk): over FLUXION_MAX_FILE_MB" +
                     (gzip_stream ? ", a gzip bomb or a file larger than this machine can hold" : ""));
    }
    out.append(buf.data(), size_t(n));
  }
  // A gzip stream that ends early (a file cut short, whatever the cut) reads as the bytes before the
  // cut: zlib reports it only here, as Z_BUF_ERROR. Refused, or a cut at a record's end would load.
  int err = Z_OK;
  const std::string why = gz_message(f, path, &err);
  const bool gzip_stream = gzdirect(f) == 0;
  gzclose(f);
  if (err == Z_BUF_ERROR && gzip_stream)
    fail(path, "the gzip stream ends early (" + why + ") after " + std::to_string(out.size()) +
                   " bytes inflated: the file is truncated");
  return out;
}

// The process's umask, read without changing it (umask(2) can only be read by setting it, which
// races with other threads creating files). Linux reports it in /proc/self/status since 4.7.
static mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Umask:", 0) == 0) return mode_t(std::stoul(line.substr(6), nullptr, 8));
  return 022;
}

FileRanges::FileRanges(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail(path_, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  unsigned char magic[2] = {0, 0};
  if (::fstat(fd_, &st) != 0 || ::pread(fd_, magic, 2, 0) < 0) {
    const int err = errno;
    ::close(fd_);
    fail(path_, std::string("cannot read: ") + std::strerror(err));
  }
  size_ = uint64_t(st.st_size);
  if (magic[0] == 0x1f && magic[1] == 0x8b) {
    ::close(fd_);
    fail(path_, "is gzip-compressed: it cannot be read in parts");
  }
}

FileRanges::~FileRanges() { ::close(fd_); }

void FileRanges::read(void* dst, size_t n, uint64_t offset) const {
  if (offset > size_ || n > size_ - offset)
    fail(path_, "bytes [" + std::to_string(offset) + ", " + std::to_string(offset + n) + ") lie past its end (" +
                    std::to_string(size_) + " bytes)");
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, p, n, off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      fail(path_, "read failed at byte " + std::to_string(offset) + ": " + (got < 0 ? std::strerror(errno) : "the file ended"));
    p += got, n -= size_t(got), offset += uint64_t(got);
  }
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  std::string pattern = path_ + ".tmp.XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  fd_ = mkstemp(name.data());
  if (fd_ < 0) fail(path_, std::string("cannot create a temporary file beside it: ") + std::strerror(errno));
  tmp_ = name.data();
  // mkstemp creates the file 0600; the checkpoint gets the mode open(O_CREAT, 0666) would give it.
  if (::fchmod(fd_, 0666 & ~current_umask()) != 0) fail(path_, std::string("fchmod failed: ") + std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail(path_, std::string("write failed: ") + std::strerror(errno));
    p += w;
    n -= size_t(w);
  }
}

void AtomicFile::commit() {
  // Data reaches the disk before the rename makes it visible under the real name.
  if (::fsync(fd_) != 0) fail(path_, std::string("fsync failed: ") + std::strerror(errno));
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    ::unlink(tmp_.c_str());
    fail(path_, std::string("close failed: ") + std::strerror(errno));
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp_.c_str());
    fail(path_, std::string("rename failed: ") + std::strerror(e));
  }
}

}  // namespace fluxion::io
