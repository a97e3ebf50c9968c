#include "lowering/object_cache.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <system_error>
#include <vector>

#include "ir/settings.h"
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

namespace {

struct BuildIdSearch {
  uintptr_t address;  // an address inside the binary sought
  std::string id;
};

// dl_iterate_phdr's callback: in the object whose loaded segments hold `address`, the
// NT_GNU_BUILD_ID note's descriptor as hex.
int find_build_id(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<BuildIdSearch*>(data);
  bool inside = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && s->address >= start && s->address < start + ph.p_memsz) inside = true;
  }
  if (!inside) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const auto* desc = reinterpret_cast<const unsigned char*>(name + ((n->n_namesz + 3) & ~3u));
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        for (uint32_t k = 0; k < n->n_descsz; ++k) {
          char hex[3];
          std::snprintf(hex, sizeof hex, "%02x", desc[k]);
          s->id += hex;
        }
        return 1;
      }
      p = reinterpret_cast<const char*>(desc) + ((n->n_descsz + 3) & ~3u);
    }
  }
  return 1;  // the binary has no build ID
}

}  // namespace

const std::string& library_build_id() {
  static const std::string id = [] {
    BuildIdSearch s{reinterpret_cast<uintptr_t>(&find_build_id), ""};
    dl_iterate_phdr(find_build_id, &s);
    if (!s.id.empty()) return s.id;
    Dl_info info{};
    struct stat st {};
    if (dladdr(reinterpret_cast<void*>(&find_build_id), &info) && info.dli_fname && stat(info.dli_fname, &st) == 0)
      return std::string(info.dli_fname) + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtime);
    return std::string("unknown");
  }();
  return id;
}

std::string hex_hash(const std::string& s) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a(s)));
  return buf;
}

ObjectCacheEntry::ObjectCacheEntry(const std::string& dir, const std::string& key) {
  header_ = std::string(kFormat) + "build " + library_build_id() + "\n" + "target " + cpu_target().id() + "\n" + load_vector_libm() + "\n" +
            std::to_string(key.size()) + "\n" + key + "\n";
  path_ = dir + "/" + hex_hash(header_) + ".fxkernel";
}

std::optional<std::string> kernel_cache_dir() {
  std::string dir;
  if (std::optional<std::string> v = setting_value("FLUXION_CACHE_DIR")) {
    if (*v == "off") return std::nullopt;
    dir = *v;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') {
    dir = std::string(xdg) + "/fluxion";
  } else if (const char* home = std::getenv("HOME"); home && *home == '/') {
    dir = std::string(home) + "/.cache/fluxion";
  } else {
    return std::nullopt;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir, ec)) return std::nullopt;  // unwritable: compile every time
  return dir;
}

uint64_t trim_kernel_cache(const std::string& dir, uint64_t max_bytes) {
  namespace fs = std::filesystem;
  struct File {
    fs::path path;
    uint64_t bytes;
    fs::file_time_type used;
  };
  std::vector<File> files;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".fxkernel") continue;  // temporaries and foreign files stay
    std::error_code e1, e2;
    const uint64_t bytes = it->file_size(e1);
    const fs::file_time_type used = it->last_write_time(e2);
    if (e1 || e2) continue;  // removed by another process meanwhile
    files.push_back({it->path(), bytes, used});
    total += bytes;
  }
  if (total <= max_bytes) return total;
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) { return a.used < b.used; });
  for (const File& f : files) {
    if (total <= max_bytes / 5 * 4) break;
    std::error_code e;
    fs::remove(f.path, e);
    total -= f.bytes;  // removed here or by another process: gone either way
  }
  return total;
}

namespace {

// After a write: a process that has written a sixteenth of the bound since it last trimmed trims.
void trim_now_and_then(const std::string& dir, uint64_t written) {
  static std::mutex mutex;
  static uint64_t since_trim = ~uint64_t{0} / 2;  // the first write trims
  const uint64_t max_bytes = uint64_t(integer_setting("FLUXION_CACHE_MAX_MB", 1024)) << 20;
  std::lock_guard<std::mutex> lock(mutex);
  since_trim += written;
  if (since_trim < max_bytes / 16) return;
  since_trim = 0;
  trim_kernel_cache(dir, max_bytes);
}

}  // namespace

std::optional<std::string> ObjectCacheEntry::read() const {
  std::ifstream f(path_, std::ios::binary);
  if (!f) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (text.compare(0, header_.size(), header_) != 0) return std::nullopt;
  const size_t eol = text.find('\n', header_.size());
  if (eol == std::string::npos) return std::nullopt;
  std::string object = text.substr(eol + 1);
  if (text.compare(header_.size(), eol + 1 - header_.size(), seal(object)) != 0) return std::nullopt;
  std::error_code ec;  // used now: the last to be trimmed (a file another process removed meanwhile: no matter)
  std::filesystem::last_write_time(path_, std::filesystem::file_time_type::clock::now(), ec);
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
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    std::remove(tmp.c_str());
    return;
  }
  trim_now_and_then(path_.substr(0, path_.rfind('/')), header_.size() + object.size());
}

}  // namespace fluxion::lowering
