#include "lowering/object_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "lowering/passes.h"
#include "lowering/target.h"

namespace fluxion::lowering {

namespace {

// v3: object code (v2 held the module in the LLVM dialect, and LLVM still ran in every process).
constexpr const char* kFormat = "fluxion-kernel v3 object llvm-19\n";

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The object's size and checksum, on the line after the header: a truncated or damaged file is a miss.
std::string seal(const std::string& object) {
  return std::to_string(object.size()) + " " + hex_hash(object) + "\n";
}

}  // namespace

std::string hex_hash(const std::string& s) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a(s)));
  return buf;
}

ObjectCacheEntry::ObjectCacheEntry(const std::string& dir, const std::string& key) {
  header_ = std::string(kFormat) + "target " + cpu_target().id() + "\n" + load_vector_libm() + "\n" +
            std::to_string(key.size()) + "\n" + key + "\n";
  path_ = dir + "/" + hex_hash(header_) + ".fxkernel";
}

std::optional<std::string> ObjectCacheEntry::read() const {
  std::ifstream f(path_, std::ios::binary);
  if (!f) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (text.compare(0, header_.size(), header_) != 0) return std::nullopt;
  const size_t eol = text.find('\n', header_.size());
  if (eol == std::string::npos) return std::nullopt;
  std::string object = text.substr(eol + 1);
  if (text.compare(header_.size(), eol + 1 - header_.size(), seal(object)) != 0) return std::nullopt;
  return object;
}

void ObjectCacheEntry::write(const std::string& object) const {
  static std::atomic<int> counter{0};
  const std::string tmp = path_ + ".tmp" + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) return;
    f << header_ << seal(object) << object;
    if (!f) {
      f.close();
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace fluxion::lowering
