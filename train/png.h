// PNG encoding for TensorBoard's images (train/summary.cpp): 8-bit grey, grey+alpha, RGB or RGBA,
// no interlacing, filter 0 on every row, the pixels deflated by zlib (already a dependency of
// train/ for gzip datasets). Enough for a viewer; not a general image library.
#pragma once
#include <cstdint>
#include <string>

namespace fluxion::png {

/// The PNG file of a height x width image of `channels` (1, 2, 3 or 4) interleaved 8-bit samples,
/// rows top to bottom.
std::string encode(int64_t height, int64_t width, int channels, const uint8_t* pixels);

}  // namespace fluxion::png
