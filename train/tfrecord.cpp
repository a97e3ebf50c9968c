// TFRecord framing (train/tfrecord.h).
#include "train/tfrecord.h"

#include <array>

#include "train/file_io.h"

namespace fluxion::tfrecord {
namespace {

// The byte-at-a-time table of the reflected Castagnoli polynomial. Event files are small (a few
// hundred bytes a record), so the simple table is fast enough; SSE4.2's crc32 instruction would
// need a CPU check for no measurable gain here.
constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = make_table();

}  // namespace

uint32_t crc32c(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = kTable[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t n) {
  uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string frame(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  io::put_le(out, data.size(), 8);
  io::put_le(out, masked_crc32c(out.data(), 8), 4);
  out.append(data);
  io::put_le(out, masked_crc32c(data.data(), data.size()), 4);
  return out;
}

}  // namespace fluxion::tfrecord
