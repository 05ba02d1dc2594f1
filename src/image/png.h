// PNG decoding to 8-bit RGBA with Debian's libspng. Native builds only (the onyx_png
// library): in the browser the page decodes images and hands RGBA to image/preprocess.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "onyx/preprocess.h"

namespace onyx::image {

/// Sizes a PNG may declare before anything is allocated for it.
struct PngLimits {
  int64_t max_side = kMaxImageSide;       ///< width and height
  int64_t max_pixels = kMaxImagePixels;   ///< width * height
  size_t max_file_bytes = size_t{1} << 28;  ///< read_png_file: larger files are refused
};

/// Decodes PNG bytes to RGBA8, the way models/crnn-digits/preprocess.py states it:
/// 16-bit samples keep their high byte; 1/2/4-bit gray is scaled to 0..255 (x 255, 85,
/// 17); palette, gray and gray+alpha are expanded; a tRNS chunk makes the matching colour
/// (or palette entries) transparent; no gamma correction. Throws onyx::Error naming
/// `what` (the file) on anything that is not a valid PNG within `limits`: no signature,
/// a bad header, a CRC mismatch, corrupt or missing image data. As with PIL and browsers,
/// what follows the image data (the last IDAT's CRC, later chunks, IEND) may be missing.
RgbaImage decode_png(const void* data, size_t size, const std::string& what, const PngLimits& limits = {});

/// Reads and decodes a PNG file (onyx::Error with ErrorCode::kIo when it cannot be read).
RgbaImage read_png_file(const std::string& path, const PngLimits& limits = {});

}  // namespace onyx::image
