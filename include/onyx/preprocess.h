// Image preprocessing of text-line models (OCR): RGBA8 -> gray -> resize to a fixed height
// -> normalised float32 [1, 1, H, W]. The C++ twin of models/crnn-digits/preprocess.py,
// which is the normative definition; tests/image/preprocess_test.py feeds the same PNG
// files through both. Pure code without libraries, so it builds for WASM as is (the
// browser decodes images itself and hands RGBA here); PNG files are src/image/png.h.
#pragma once
#include <cstdint>
#include <vector>

#include "onyx/tensor.h"

namespace onyx::image {

/// 8-bit RGBA pixels, row-major, 4 bytes per pixel, no padding between rows.
struct RgbaImage {
  int64_t width = 0;
  int64_t height = 0;
  std::vector<uint8_t> pixels;  ///< width * height * 4
};

/// 8-bit gray pixels, row-major.
struct GrayImage {
  int64_t width = 0;
  int64_t height = 0;
  std::vector<uint8_t> pixels;  ///< width * height
};

/// What a text-line model expects. The defaults are those of models/crnn-digits.
struct TextLineParams {
  int64_t height = 32;     ///< output height; the width keeps the aspect ratio
  int64_t min_width = 16;  ///< narrower results are widened to this
  double scale = 1.0 / 255.0;  ///< pixel value (0..255) -> [0, 1]
  double mean = 0.5;       ///< then (x - mean) / std
  double std = 0.5;
};

/// Limits of the functions below (and of the PNG decoder): larger sizes are refused with
/// onyx::Error, so that a hostile file cannot exhaust memory.
inline constexpr int64_t kMaxImageSide = 16384;
inline constexpr int64_t kMaxImagePixels = 100'000'000;
inline constexpr int64_t kMaxOutputHeight = 4096;
inline constexpr int64_t kMaxOutputWidth = 1 << 20;

/// Gray value of one RGBA8 pixel, composited over white, in integers:
/// gray = (299 R + 587 G + 114 B + 500) div 1000, then (gray A + 255 (255 - A) + 127) div 255.
inline uint8_t gray_over_white(uint8_t r, uint8_t g, uint8_t b, uint8_t a) {
  uint32_t gray = (299u * r + 587u * g + 114u * b + 500u) / 1000u;
  return static_cast<uint8_t>((gray * a + 255u * (255u - a) + 127u) / 255u);
}

/// Applies gray_over_white to every pixel. `rgba` holds width * height * 4 bytes.
/// Throws onyx::Error on a zero, negative or too large size.
GrayImage rgba_to_gray(const uint8_t* rgba, int64_t width, int64_t height);
GrayImage rgba_to_gray(const RgbaImage& rgba);

/// Output width for an input of `width` x `height`: round(width * params.height / height)
/// with halves rounded up, at least params.min_width. Throws onyx::Error on bad sizes or
/// when the result exceeds kMaxOutputWidth.
int64_t target_width(int64_t width, int64_t height, const TextLineParams& params);

/// Filter taps of one axis resized from `in` to `out` pixels: triangle (linear) filter
/// with half-pixel centres, widened by in/out when shrinking (antialiasing), taps outside
/// [0, in) dropped and the rest renormalised to sum to 1. Output pixel o reads inputs
/// first[o] .. first[o] + count[o] - 1 with weights weights[offset[o] ...].
struct ResizeTaps {
  std::vector<int64_t> first, count, offset;
  std::vector<double> weights;
};
ResizeTaps resize_taps(int64_t in, int64_t out);

/// Resizes gray pixels to out_height x out_width in float64 (values stay in [0, 255]):
/// the vertical pass first (height -> out_height), then the horizontal one, as
/// preprocess.py does. Returns out_height * out_width values, row-major.
std::vector<double> resize_gray(const GrayImage& gray, int64_t out_height, int64_t out_width);

/// The whole preprocessing of one crop: resize to params.height x target_width, scale,
/// normalise, float32 tensor [1, 1, height, width].
Tensor preprocess_gray(const GrayImage& gray, const TextLineParams& params = {});
Tensor preprocess_rgba(const RgbaImage& rgba, const TextLineParams& params = {});

/// The value a white pixel has after preprocessing ((255 * scale - mean) / std), the
/// natural padding of dark text on a light background.
float white_value(const TextLineParams& params);

/// Stacks preprocessed crops [1, 1, H, W_i] into one batch [N, 1, H, max W_i], padding
/// each on the right with `pad` (white_value() for dark-on-light text). Throws
/// onyx::Error when the crops differ in height or are not [1, 1, H, W] float32.
Tensor pad_batch(const std::vector<Tensor>& crops, float pad);

}  // namespace onyx::image
