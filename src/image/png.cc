#include "image/png.h"

#include <spng.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>

#include "base/error.h"
#include "base/mmap_file.h"

namespace onyx::image {
namespace {

struct CtxFree {
  void operator()(spng_ctx* c) const { spng_ctx_free(c); }
};

const uint8_t kSignature[8] = {137, 80, 78, 71, 13, 10, 26, 10};

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

/// Bytes of image data (IDAT chunks) in the file; a chunk cut short by the end of the
/// file counts what is there.
uint64_t idat_bytes(const uint8_t* b, size_t size) {
  uint64_t total = 0;
  for (size_t off = 8; size - off >= 8;) {
    const uint64_t len = be32(b + off), room = size - off - 8;
    const uint8_t* type = b + off + 4;
    if (std::equal(type, type + 4, reinterpret_cast<const uint8_t*>("IDAT"))) total += std::min(len, room);
    if (std::equal(type, type + 4, reinterpret_cast<const uint8_t*>("IEND")) || len + 4 >= room) break;
    off += static_cast<size_t>(len) + 12;
  }
  return total;
}

/// Deflate expands data at most about 1032 times (a 258-byte match per 2 bits).
constexpr uint64_t kMaxInflateRatio = 1032;

[[noreturn]] void fail_spng(int err, const std::string& what, const char* step) {
  fail_arg("PNG '{}': {} failed: {} (spng error {}); the file is corrupt, truncated or not a PNG image", what, step,
           spng_strerror(err), err);
}

}  // namespace

RgbaImage decode_png(const void* data, size_t size, const std::string& what, const PngLimits& limits) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (size < 8 || !std::equal(kSignature, kSignature + 8, bytes))
    fail_arg("'{}' is not a PNG file (its first bytes are not the PNG signature)", what);
  // The size the IHDR declares, read here so that a refusal can name it (spng only says
  // "invalid width" or "width exceeds user limit").
  if (size >= 24 && std::equal(bytes + 12, bytes + 16, reinterpret_cast<const uint8_t*>("IHDR"))) {
    int64_t w = be32(bytes + 16), h = be32(bytes + 20);
    if (w == 0 || h == 0) fail_arg("PNG '{}' declares an empty image ({}x{} pixels)", what, w, h);
    if (w > limits.max_side || h > limits.max_side || w * h > limits.max_pixels)
      fail_arg("PNG '{}' declares {}x{} pixels; at most {} per side and {} in all are accepted", what, w, h,
               limits.max_side, limits.max_pixels);
  }
  std::unique_ptr<spng_ctx, CtxFree> ctx(spng_ctx_new(0));
  if (!ctx) fail_runtime("PNG '{}': cannot create a decoder (out of memory)", what);
  auto side = static_cast<uint32_t>(std::min<int64_t>(limits.max_side, INT32_MAX));
  if (int e = spng_set_image_limits(ctx.get(), side, side)) fail_spng(e, what, "setting limits");
  // Ancillary chunks (text, ICC profiles) are kept in memory by spng: bound them.
  size_t chunk_max = std::min<size_t>(std::max<size_t>(size, 1), INT32_MAX);
  if (int e = spng_set_chunk_limits(ctx.get(), chunk_max, size_t{16} << 20)) fail_spng(e, what, "setting limits");
  if (int e = spng_set_png_buffer(ctx.get(), data, size)) fail_spng(e, what, "reading");
  spng_ihdr ihdr{};
  if (int e = spng_get_ihdr(ctx.get(), &ihdr)) fail_spng(e, what, "reading the header");
  const int64_t w = ihdr.width, h = ihdr.height;
  if (w < 1 || h < 1 || w > limits.max_side || h > limits.max_side || w * h > limits.max_pixels)
    fail_arg("PNG '{}' declares {}x{} pixels; at most {} per side and {} in all are accepted", what, w, h,
             limits.max_side, limits.max_pixels);
  // The samples the header declares must fit in what the image data can inflate to,
  // checked before the pixels are allocated: a 70-byte file may declare 100M pixels.
  static constexpr int kChannels[7] = {1, 0, 3, 1, 2, 0, 4};  // per PNG colour type
  const int channels = ihdr.color_type < 7 ? kChannels[ihdr.color_type] : 0;
  const uint64_t samples = (static_cast<uint64_t>(w) * channels * ihdr.bit_depth + 7) / 8 * static_cast<uint64_t>(h);
  const uint64_t idat = idat_bytes(bytes, size);
  if (samples / kMaxInflateRatio > idat + 64)
    fail_arg("PNG '{}' declares {}x{} pixels ({} bytes of samples), but its image data is {} bytes, which "
             "cannot inflate to that much; the file is truncated or corrupt",
             what, w, h, samples, idat);
  size_t len = 0;
  if (int e = spng_decoded_image_size(ctx.get(), SPNG_FMT_RGBA8, &len)) fail_spng(e, what, "sizing the image");
  if (len != static_cast<size_t>(w * h * 4))
    fail_runtime("PNG '{}': the decoder asks for {} bytes for {}x{} RGBA pixels", what, len, w, h);
  RgbaImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(len);
  // RGBA8 output: 16-bit samples are reduced to their high byte, low bit depths scaled,
  // palette and gray expanded; TRNS applies the tRNS chunk. Gamma stays off.
  if (int e = spng_decode_image(ctx.get(), img.pixels.data(), len, SPNG_FMT_RGBA8, SPNG_DECODE_TRNS))
    fail_spng(e, what, "decoding the image");
  return img;
}

RgbaImage read_png_file(const std::string& path, const PngLimits& limits) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) fail(ErrorCode::kIo, "cannot open image '{}': no such file", path);
  if (fs::is_directory(st)) fail(ErrorCode::kIo, "image '{}' is a folder, not a PNG file", path);
  // Regular files only, opened without blocking: a FIFO named as an image must not hang.
  std::string buf = read_regular_file(path, "image", limits.max_file_bytes);
  return decode_png(buf.data(), buf.size(), path, limits);
}

}  // namespace onyx::image
