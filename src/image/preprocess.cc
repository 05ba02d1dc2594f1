#include "onyx/preprocess.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace onyx::image {
namespace {

void check_size(int64_t width, int64_t height, const char* what) {
  if (width < 1 || height < 1)
    fail_arg("{}: the image is {}x{} pixels; both sides must be at least 1", what, width, height);
  if (width > kMaxImageSide || height > kMaxImageSide)
    fail_arg("{}: the image is {}x{} pixels; the largest side accepted is {}", what, width, height, kMaxImageSide);
  if (width * height > kMaxImagePixels)
    fail_arg("{}: the image is {}x{} = {} pixels; at most {} are accepted", what, width, height, width * height,
             kMaxImagePixels);
}

void check_params(const TextLineParams& p) {
  if (p.height < 1 || p.height > kMaxOutputHeight)
    fail_arg("text-line preprocessing: height {} must be in [1, {}]", p.height, kMaxOutputHeight);
  if (p.min_width < 1 || p.min_width > kMaxOutputWidth)
    fail_arg("text-line preprocessing: min_width {} must be in [1, {}]", p.min_width, kMaxOutputWidth);
  if (!std::isfinite(p.scale) || !std::isfinite(p.mean) || !std::isfinite(p.std) || p.std == 0)
    fail_arg("text-line preprocessing: scale {}, mean {} and std {} must be finite and std non-zero", p.scale,
             p.mean, p.std);
}

}  // namespace

GrayImage rgba_to_gray(const uint8_t* rgba, int64_t width, int64_t height) {
  check_size(width, height, "RGBA to gray");
  GrayImage g;
  g.width = width;
  g.height = height;
  g.pixels.resize(static_cast<size_t>(width * height));
  for (size_t i = 0; i < g.pixels.size(); ++i) {
    const uint8_t* p = rgba + 4 * i;
    g.pixels[i] = gray_over_white(p[0], p[1], p[2], p[3]);
  }
  return g;
}

GrayImage rgba_to_gray(const RgbaImage& rgba) {
  check_size(rgba.width, rgba.height, "RGBA to gray");
  if (rgba.pixels.size() != static_cast<size_t>(rgba.width * rgba.height * 4))
    fail_arg("RGBA to gray: {} bytes given for {}x{} pixels (expected {})", rgba.pixels.size(), rgba.width,
             rgba.height, rgba.width * rgba.height * 4);
  return rgba_to_gray(rgba.pixels.data(), rgba.width, rgba.height);
}

int64_t target_width(int64_t width, int64_t height, const TextLineParams& params) {
  check_params(params);
  check_size(width, height, "text-line preprocessing");
  // Both factors are bounded (side <= 2^16, height <= 2^12), so the product fits easily.
  int64_t w = std::max(params.min_width, (2 * width * params.height + height) / (2 * height));
  if (w > kMaxOutputWidth)
    fail_arg("text-line preprocessing: a {}x{} image becomes {} pixels wide at height {}; at most {} are accepted "
             "(is the crop a text line?)", width, height, w, params.height, kMaxOutputWidth);
  return w;
}

ResizeTaps resize_taps(int64_t in, int64_t out) {
  if (in < 1 || out < 1) fail_arg("resize from {} to {} pixels: both must be at least 1", in, out);
  ResizeTaps r;
  r.first.resize(static_cast<size_t>(out));
  r.count.resize(static_cast<size_t>(out));
  r.offset.resize(static_cast<size_t>(out));
  // The same expressions, in the same order, as resize_weights() of preprocess.py.
  const double s = static_cast<double>(out) / static_cast<double>(in);
  const double support = std::max(1.0, 1.0 / s);
  for (int64_t o = 0; o < out; ++o) {
    const double c = (static_cast<double>(o) + 0.5) / s;
    int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(std::floor(c - support)));
    int64_t hi = std::min<int64_t>(in, static_cast<int64_t>(std::ceil(c + support)));
    size_t at = r.weights.size();
    double sum = 0;
    for (int64_t i = lo; i < hi; ++i) {
      double t = std::max(0.0, 1.0 - std::abs(static_cast<double>(i) + 0.5 - c) / support);
      r.weights.push_back(t);
      sum += t;
    }
    // The nearest input centre is within half a pixel of c, so sum >= 0.5.
    for (size_t k = at; k < r.weights.size(); ++k) r.weights[k] /= sum;
    r.first[static_cast<size_t>(o)] = lo;
    r.count[static_cast<size_t>(o)] = hi - lo;
    r.offset[static_cast<size_t>(o)] = static_cast<int64_t>(at);
  }
  return r;
}

std::vector<double> resize_gray(const GrayImage& gray, int64_t out_height, int64_t out_width) {
  check_size(gray.width, gray.height, "resize");
  if (gray.pixels.size() != static_cast<size_t>(gray.width * gray.height))
    fail_arg("resize: {} bytes given for {}x{} gray pixels", gray.pixels.size(), gray.width, gray.height);
  if (out_height < 1 || out_height > kMaxOutputHeight || out_width < 1 || out_width > kMaxOutputWidth)
    fail_arg("resize to {}x{}: the height must be in [1, {}] and the width in [1, {}]", out_width, out_height,
             kMaxOutputHeight, kMaxOutputWidth);
  const int64_t w = gray.width;
  ResizeTaps v = resize_taps(gray.height, out_height);
  std::vector<double> rows(static_cast<size_t>(out_height * w), 0.0);
  for (int64_t o = 0; o < out_height; ++o) {
    double* dst = rows.data() + o * w;
    for (int64_t k = 0; k < v.count[o]; ++k) {
      const double wt = v.weights[static_cast<size_t>(v.offset[o] + k)];
      const uint8_t* src = gray.pixels.data() + (v.first[o] + k) * w;
      for (int64_t x = 0; x < w; ++x) dst[x] += wt * static_cast<double>(src[x]);
    }
  }
  ResizeTaps h = resize_taps(w, out_width);
  std::vector<double> out(static_cast<size_t>(out_height * out_width));
  for (int64_t y = 0; y < out_height; ++y) {
    const double* src = rows.data() + y * w;
    double* dst = out.data() + y * out_width;
    for (int64_t p = 0; p < out_width; ++p) {
      const double* wt = h.weights.data() + h.offset[p];
      const double* in = src + h.first[p];
      double acc = 0;
      for (int64_t k = 0; k < h.count[p]; ++k) acc += wt[k] * in[k];
      dst[p] = acc;
    }
  }
  return out;
}

Tensor preprocess_gray(const GrayImage& gray, const TextLineParams& params) {
  const int64_t width = target_width(gray.width, gray.height, params);
  std::vector<double> r = resize_gray(gray, params.height, width);
  Tensor t(DType::kFloat, {1, 1, params.height, width});
  float* d = t.data<float>();
  for (size_t i = 0; i < r.size(); ++i) d[i] = static_cast<float>((r[i] * params.scale - params.mean) / params.std);
  return t;
}

Tensor preprocess_rgba(const RgbaImage& rgba, const TextLineParams& params) {
  return preprocess_gray(rgba_to_gray(rgba), params);
}

float white_value(const TextLineParams& params) {
  return static_cast<float>((255.0 * params.scale - params.mean) / params.std);
}

Tensor pad_batch(const std::vector<Tensor>& crops, float pad) {
  if (crops.empty()) fail_arg("pad_batch: no crops given");
  int64_t height = -1, width = 0;
  for (size_t i = 0; i < crops.size(); ++i) {
    const Tensor& c = crops[i];
    if (c.dtype() != DType::kFloat || c.rank() != 4 || c.dim(0) != 1 || c.dim(1) != 1)
      fail_arg("pad_batch: crop {} is {}{}; expected float32 [1, 1, H, W]", i, dtype_name(c.dtype()),
               dims_str(c.dims()));
    if (height >= 0 && c.dim(2) != height)
      fail_arg("pad_batch: crop {} is {} pixels high but crop 0 is {}", i, c.dim(2), height);
    height = c.dim(2);
    width = std::max(width, c.dim(3));
  }
  const int64_t n = static_cast<int64_t>(crops.size());
  Tensor out(DType::kFloat, {n, 1, height, width});
  float* d = out.data<float>();
  std::fill(d, d + out.numel(), pad);
  for (int64_t b = 0; b < n; ++b) {
    const Tensor& c = crops[static_cast<size_t>(b)];
    for (int64_t y = 0; y < height; ++y)
      std::copy_n(c.data<float>() + y * c.dim(3), c.dim(3), d + (b * height + y) * width);
  }
  return out;
}

}  // namespace onyx::image
