// PNG encoding (train/png.h): signature, IHDR, one IDAT, IEND; each chunk is length, type, data
// and the CRC-32 (zlib's) of type and data, big-endian as PNG stores every number.
#include "train/png.h"

#include <zlib.h>

#include <string_view>
#include <vector>

#include "ir/error.h"

namespace fluxion::png {
namespace {

void put_be32(std::string& out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out += char((v >> (8 * i)) & 0xff);
}

void chunk(std::string& out, std::string_view type, std::string_view data) {
  put_be32(out, uint32_t(data.size()));
  size_t start = out.size();
  out.append(type);
  out.append(data);
  uLong crc = ::crc32(0L, reinterpret_cast<const Bytef*>(out.data() + start), uInt(out.size() - start));
  put_be32(out, uint32_t(crc));
}

}  // namespace

std::string encode(int64_t height, int64_t width, int channels, const uint8_t* pixels) {
  static const unsigned char kColorType[5] = {0, 0, 4, 2, 6};  // by channels: grey, grey+alpha, RGB, RGBA
  std::string ihdr;
  put_be32(ihdr, uint32_t(width));
  put_be32(ihdr, uint32_t(height));
  ihdr += char(8);                     // bits per sample
  ihdr += char(kColorType[channels]);  // colour type
  ihdr += std::string(3, '\0');        // deflate, adaptive filtering, no interlace
  // Each row is its filter byte (0: none) and then its samples.
  const size_t row = size_t(width) * size_t(channels);
  std::vector<unsigned char> raw;
  raw.reserve(size_t(height) * (row + 1));
  for (int64_t y = 0; y < height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), pixels + size_t(y) * row, pixels + size_t(y + 1) * row);
  }
  uLongf packed_size = compressBound(uLong(raw.size()));
  std::string packed(packed_size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size, raw.data(), uLong(raw.size()), 6) != Z_OK)
    throw ValueError("ValueError: png::encode: zlib could not deflate a " + std::to_string(height) + "x" +
                     std::to_string(width) + " image");
  packed.resize(packed_size);
  std::string out("\x89PNG\r\n\x1a\n", 8);
  chunk(out, "IHDR", ihdr);
  chunk(out, "IDAT", packed);
  chunk(out, "IEND", "");
  return out;
}

}  // namespace fluxion::png
