// image:: text-line preprocessing and PNG decoding. The gray formula is checked on pixels
// worked out by hand, the resize against a brute-force evaluation of the filter written
// here, and the decoder on PNG files this test encodes itself (zlib + CRC, no spng), whose
// expected RGBA follows from the PNG specification.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <tuple>

#include <unistd.h>

#include "image/png.h"
#include "onyx/preprocess.h"
#include "onyx/error.h"

namespace onyx::image {
namespace {

// ---- gray ----

TEST(ImageGray, HandCheckedPixels) {
  // Opaque: (299 R + 587 G + 114 B + 500) div 1000.
  EXPECT_EQ(gray_over_white(0, 0, 0, 255), 0);
  EXPECT_EQ(gray_over_white(255, 255, 255, 255), 255);
  EXPECT_EQ(gray_over_white(255, 0, 0, 255), 76);   // 76745 / 1000
  EXPECT_EQ(gray_over_white(0, 255, 0, 255), 150);  // 150185 / 1000 = 150.185
  EXPECT_EQ(gray_over_white(0, 0, 255, 255), 29);   // 29570 / 1000 = 29.57
  EXPECT_EQ(gray_over_white(10, 20, 30, 255), 18);  // (2990 + 11740 + 3420 + 500) / 1000 = 18.65
  // 1 of each channel: (299 + 587 + 114 + 500) / 1000 = 1.5 -> 1 (integer division).
  EXPECT_EQ(gray_over_white(1, 1, 1, 255), 1);
  // Over white: (gray A + 255 (255 - A) + 127) div 255.
  EXPECT_EQ(gray_over_white(0, 0, 0, 0), 255);         // fully transparent: white
  EXPECT_EQ(gray_over_white(12, 34, 56, 0), 255);
  EXPECT_EQ(gray_over_white(0, 0, 0, 128), 127);       // (0 + 32385 + 127) / 255 = 127.5
  EXPECT_EQ(gray_over_white(0, 0, 0, 127), 128);       // (0 + 32640 + 127) / 255 = 128.5
  EXPECT_EQ(gray_over_white(255, 0, 0, 100), 185);     // (7600 + 39525 + 127) / 255 = 185.3
  EXPECT_EQ(gray_over_white(100, 100, 100, 1), 254);   // (100 + 64770 + 127) / 255 = 254.9
}

TEST(ImageGray, ImageAndBadSizes) {
  RgbaImage img{2, 1, {255, 0, 0, 255, 0, 0, 0, 0}};
  GrayImage g = rgba_to_gray(img);
  EXPECT_EQ(g.width, 2);
  EXPECT_EQ(g.height, 1);
  EXPECT_EQ(g.pixels, (std::vector<uint8_t>{76, 255}));
  EXPECT_THROW(rgba_to_gray(RgbaImage{2, 2, std::vector<uint8_t>(8)}), Error);  // too few bytes
  EXPECT_THROW(rgba_to_gray(RgbaImage{0, 1, {}}), Error);
  EXPECT_THROW(rgba_to_gray(nullptr, kMaxImageSide + 1, 1), Error);
  EXPECT_THROW(rgba_to_gray(nullptr, 12000, 12000), Error);  // 144M pixels
}

// ---- sizes ----

TEST(ImageResize, TargetWidth) {
  TextLineParams p;
  p.min_width = 1;
  EXPECT_EQ(target_width(100, 32, p), 100);
  EXPECT_EQ(target_width(3, 64, p), 2);    // 1.5 -> 2 (halves up)
  EXPECT_EQ(target_width(5, 64, p), 3);    // 2.5 -> 3
  EXPECT_EQ(target_width(1, 3, p), 11);    // 10.67 -> 11
  EXPECT_EQ(target_width(10, 64, p), 5);
  EXPECT_EQ(target_width(13, 64, p), 7);   // 6.5 -> 7
  EXPECT_EQ(target_width(1, 100, p), 1);   // 0.32 -> 0 -> at least min_width 1
  p.min_width = 16;
  EXPECT_EQ(target_width(10, 64, p), 16);
  EXPECT_EQ(target_width(1, 1, p), 32);
  EXPECT_EQ(target_width(kMaxImageSide, 1, p), kMaxImageSide * 32);
  EXPECT_THROW(target_width(0, 10, p), Error);
  EXPECT_THROW(target_width(10, 0, p), Error);
  EXPECT_THROW(target_width(-1, 10, p), Error);
  p.height = 0;
  EXPECT_THROW(target_width(10, 10, p), Error);
  p.height = 40000;
  EXPECT_THROW(target_width(10, 10, p), Error);
}

// ---- resize ----

/// Weight of input pixel i for output pixel o, straight from the definition (every input
/// pixel considered, zero outside the support), normalised over all of them.
std::vector<double> brute_weights(int64_t n, int64_t m, int64_t o) {
  double s = static_cast<double>(m) / n, support = std::max(1.0, n / static_cast<double>(m));
  double c = (o + 0.5) / s;
  std::vector<double> w(static_cast<size_t>(n));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = std::fabs(i + 0.5 - c);
    w[static_cast<size_t>(i)] = d < support ? 1.0 - d / support : 0.0;
    sum += w[static_cast<size_t>(i)];
  }
  for (double& x : w) x /= sum;
  return w;
}

/// out[y][x] = sum_i sum_j wv(y, i) wh(x, j) g[i][j]: the 2-D formula, one pixel at a time.
double brute_pixel(const GrayImage& g, int64_t oh, int64_t ow, int64_t y, int64_t x) {
  auto wv = brute_weights(g.height, oh, y), wh = brute_weights(g.width, ow, x);
  double acc = 0;
  for (int64_t i = 0; i < g.height; ++i)
    for (int64_t j = 0; j < g.width; ++j) acc += wv[i] * wh[j] * g.pixels[static_cast<size_t>(i * g.width + j)];
  return acc;
}

GrayImage random_gray(int64_t w, int64_t h, std::mt19937& rng) {
  GrayImage g{w, h, std::vector<uint8_t>(static_cast<size_t>(w * h))};
  std::uniform_int_distribution<int> u(0, 255);
  for (auto& p : g.pixels) p = static_cast<uint8_t>(u(rng));
  return g;
}

TEST(ImageResize, MatchesBruteForce) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> side(1, 90);
  for (int iter = 0; iter < 60; ++iter) {
    GrayImage g = random_gray(side(rng), side(rng), rng);
    int64_t oh = iter % 3 == 0 ? 32 : side(rng), ow = side(rng);
    std::vector<double> got = resize_gray(g, oh, ow);
    ASSERT_EQ(got.size(), static_cast<size_t>(oh * ow));
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x)
        ASSERT_NEAR(got[static_cast<size_t>(y * ow + x)], brute_pixel(g, oh, ow, y, x), 1e-9)
            << g.width << "x" << g.height << " -> " << ow << "x" << oh << " at (" << x << ", " << y << ")";
  }
}

TEST(ImageResize, TapsSumToOneAndStayInside) {
  for (int64_t n : {1, 2, 3, 7, 32, 33, 100, 1000})
    for (int64_t m : {1, 2, 5, 16, 32, 64, 999}) {
      ResizeTaps t = resize_taps(n, m);
      for (int64_t o = 0; o < m; ++o) {
        ASSERT_GE(t.first[o], 0);
        ASSERT_LE(t.first[o] + t.count[o], n);
        double sum = 0;
        for (int64_t k = 0; k < t.count[o]; ++k) sum += t.weights[t.offset[o] + k];
        ASSERT_NEAR(sum, 1.0, 1e-12) << n << " -> " << m << " output " << o;
      }
    }
  EXPECT_THROW(resize_taps(0, 3), Error);
  EXPECT_THROW(resize_taps(3, 0), Error);
}

TEST(ImageResize, ConstantStaysConstant) {
  for (auto [w, h, ow] : {std::tuple{1, 1, 16}, {5, 100, 7}, {300, 17, 40}, {64, 32, 64}, {2, 3, 99}}) {
    GrayImage g{w, h, std::vector<uint8_t>(static_cast<size_t>(w * h), 77)};
    for (double v : resize_gray(g, 32, ow)) ASSERT_NEAR(v, 77.0, 1e-12);
  }
}

TEST(ImageResize, IdentityWhenSizeUnchanged) {
  std::mt19937 rng(3);
  GrayImage g = random_gray(45, 32, rng);
  std::vector<double> r = resize_gray(g, 32, 45);
  for (size_t i = 0; i < r.size(); ++i) ASSERT_EQ(r[i], static_cast<double>(g.pixels[i]));
  // Doubling: a 1-pixel-high image gives identical rows.
  GrayImage row = random_gray(9, 1, rng);
  std::vector<double> d = resize_gray(row, 4, 9);
  for (int64_t y = 1; y < 4; ++y)
    for (int64_t x = 0; x < 9; ++x) ASSERT_EQ(d[y * 9 + x], d[x]);
}

TEST(ImageResize, Upsampling2xByHand) {
  // Two pixels 0 and 100 -> four: centres 0.25, 0.75, 1.25, 1.75 in input units; the
  // triangle of radius 1 around them gives 0, 25, 75, 100 (the outer taps are dropped
  // and renormalised: output 0 sees only pixel 0 with weight 0.75 -> 1).
  GrayImage g{2, 1, {0, 100}};
  std::vector<double> r = resize_gray(g, 1, 4);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_NEAR(r[0], 0.0, 1e-12);
  EXPECT_NEAR(r[1], 25.0, 1e-12);
  EXPECT_NEAR(r[2], 75.0, 1e-12);
  EXPECT_NEAR(r[3], 100.0, 1e-12);
  // Halving four pixels: support 2 around centre 1 (then 3): weights 0.25 0.75 0.75 0.25
  // renormalised over the three or four taps inside.
  GrayImage h{4, 1, {0, 40, 80, 120}};
  std::vector<double> q = resize_gray(h, 1, 2);
  EXPECT_NEAR(q[0], (0.75 * 0 + 0.75 * 40 + 0.25 * 80) / 1.75, 1e-12);
  EXPECT_NEAR(q[1], (0.25 * 40 + 0.75 * 80 + 0.75 * 120) / 1.75, 1e-12);
}

TEST(ImagePreprocess, NormalisesAndShapes) {
  GrayImage white{10, 20, std::vector<uint8_t>(200, 255)}, black{10, 20, std::vector<uint8_t>(200, 0)};
  Tensor w = preprocess_gray(white);
  EXPECT_EQ(w.dims(), (Dims{1, 1, 32, 16}));  // 10 * 32 / 20 = 16
  for (int64_t i = 0; i < w.numel(); ++i) ASSERT_FLOAT_EQ(w.data<float>()[i], 1.0f);
  Tensor b = preprocess_gray(black);
  for (int64_t i = 0; i < b.numel(); ++i) ASSERT_FLOAT_EQ(b.data<float>()[i], -1.0f);
  EXPECT_FLOAT_EQ(white_value({}), 1.0f);
  TextLineParams p;
  p.height = 8;
  p.min_width = 1;
  p.mean = 0.0;
  p.std = 1.0;
  GrayImage mid{4, 4, std::vector<uint8_t>(16, 51)};
  Tensor m = preprocess_gray(mid, p);
  EXPECT_EQ(m.dims(), (Dims{1, 1, 8, 8}));
  for (int64_t i = 0; i < m.numel(); ++i) ASSERT_NEAR(m.data<float>()[i], 0.2f, 1e-7);
  p.std = 0;
  EXPECT_THROW(preprocess_gray(mid, p), Error);
}

TEST(ImagePreprocess, PadBatch) {
  Tensor a(DType::kFloat, {1, 1, 2, 3}), b(DType::kFloat, {1, 1, 2, 1});
  for (int i = 0; i < 6; ++i) a.data<float>()[i] = static_cast<float>(i);
  b.data<float>()[0] = 10;
  b.data<float>()[1] = 11;
  Tensor p = pad_batch({a, b}, -5.f);
  EXPECT_EQ(p.dims(), (Dims{2, 1, 2, 3}));
  std::vector<float> want = {0, 1, 2, 3, 4, 5, 10, -5, -5, 11, -5, -5};
  EXPECT_EQ(std::vector<float>(p.data<float>(), p.data<float>() + 12), want);
  EXPECT_THROW(pad_batch({}, 0.f), Error);
  EXPECT_THROW(pad_batch({a, Tensor(DType::kFloat, {1, 1, 3, 3})}, 0.f), Error);
  EXPECT_THROW(pad_batch({Tensor(DType::kFloat, {1, 2, 2, 3})}, 0.f), Error);
}

// ---- PNG files written by this test ----

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string chunk(const std::string& type, const std::string& data) {
  std::string td = type + data;
  uLong crc = crc32(0, reinterpret_cast<const Bytef*>(td.data()), static_cast<uInt>(td.size()));
  return be32(static_cast<uint32_t>(data.size())) + td + be32(static_cast<uint32_t>(crc));
}

std::string zlib_compress(const std::string& raw) {
  uLongf n = compressBound(static_cast<uLong>(raw.size()));
  std::string out(n, '\0');
  compress(reinterpret_cast<Bytef*>(out.data()), &n, reinterpret_cast<const Bytef*>(raw.data()),
           static_cast<uLong>(raw.size()));
  out.resize(n);
  return out;
}

/// A test image: samples per pixel as the PNG stores them (palette indices for type 3).
struct Src {
  uint32_t w, h;
  int depth, color;  // bit depth, PNG colour type
  std::vector<uint16_t> samples;
  std::vector<uint16_t> trns;   // gray: 1 value, RGB: 3, palette: alpha per entry
  std::vector<uint8_t> plte;    // RGB triplets
  bool interlace = false;
  int channels() const { return color == 0 || color == 3 ? 1 : color == 2 ? 3 : color == 4 ? 2 : 4; }
};

/// Packs the scanlines of pixels (x0 + k dx, y) for k < n, filter byte 0 first.
std::string scanline(const Src& s, uint32_t y, uint32_t x0, uint32_t dx) {
  std::string row(1, '\0');
  int ch = s.channels();
  uint32_t acc = 0, bits = 0;
  for (uint32_t x = x0; x < s.w; x += dx)
    for (int c = 0; c < ch; ++c) {
      uint16_t v = s.samples[(static_cast<size_t>(y) * s.w + x) * ch + c];
      if (s.depth == 16) {
        row += static_cast<char>(v >> 8);
        row += static_cast<char>(v & 255);
      } else if (s.depth == 8) {
        row += static_cast<char>(v);
      } else {
        acc = (acc << s.depth) | v;
        bits += s.depth;
        if (bits == 8) {
          row += static_cast<char>(acc);
          acc = bits = 0;
        }
      }
    }
  if (bits) row += static_cast<char>(acc << (8 - bits));
  return row;
}

std::string encode(const Src& s) {
  std::string raw;
  if (!s.interlace) {
    for (uint32_t y = 0; y < s.h; ++y) raw += scanline(s, y, 0, 1);
  } else {  // Adam7: seven passes, each a reduced image; empty passes have no scanlines
    const uint32_t xs[7] = {0, 4, 0, 2, 0, 1, 0}, ys[7] = {0, 0, 4, 0, 2, 0, 1};
    const uint32_t dxs[7] = {8, 8, 4, 4, 2, 2, 1}, dys[7] = {8, 8, 8, 4, 4, 2, 2};
    for (int p = 0; p < 7; ++p) {
      if (xs[p] >= s.w) continue;
      for (uint32_t y = ys[p]; y < s.h; y += dys[p]) raw += scanline(s, y, xs[p], dxs[p]);
    }
  }
  std::string ihdr = be32(s.w) + be32(s.h);
  ihdr += static_cast<char>(s.depth);
  ihdr += static_cast<char>(s.color);
  ihdr += std::string("\0\0", 2);
  ihdr += static_cast<char>(s.interlace ? 1 : 0);
  std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr);
  if (s.color == 3) png += chunk("PLTE", std::string(s.plte.begin(), s.plte.end()));
  if (!s.trns.empty()) {
    std::string t;
    for (uint16_t v : s.trns) {
      if (s.color == 3) t += static_cast<char>(v);
      else t += std::string{static_cast<char>(v >> 8), static_cast<char>(v & 255)};
    }
    png += chunk("tRNS", t);
  }
  png += chunk("IDAT", zlib_compress(raw)) + chunk("IEND", "");
  return png;
}

/// RGBA8 the PNG specification gives for `s`, with the 16-bit high-byte rule.
std::vector<uint8_t> expected_rgba(const Src& s) {
  auto to8 = [&](uint16_t v) -> uint8_t {
    if (s.depth == 16) return static_cast<uint8_t>(v >> 8);
    return static_cast<uint8_t>(v * 255 / ((1 << s.depth) - 1));
  };
  std::vector<uint8_t> out;
  int ch = s.channels();
  for (size_t p = 0; p < static_cast<size_t>(s.w) * s.h; ++p) {
    const uint16_t* v = &s.samples[p * ch];
    uint8_t r, g, b, a = 255;
    if (s.color == 3) {
      r = s.plte[v[0] * 3];
      g = s.plte[v[0] * 3 + 1];
      b = s.plte[v[0] * 3 + 2];
      if (v[0] < s.trns.size()) a = static_cast<uint8_t>(s.trns[v[0]]);
    } else if (s.color == 0 || s.color == 4) {
      r = g = b = to8(v[0]);
      if (s.color == 4) a = to8(v[1]);
      else if (!s.trns.empty() && v[0] == s.trns[0]) a = 0;
    } else {
      r = to8(v[0]);
      g = to8(v[1]);
      b = to8(v[2]);
      if (s.color == 6) a = to8(v[3]);
      else if (!s.trns.empty() && v[0] == s.trns[0] && v[1] == s.trns[1] && v[2] == s.trns[2]) a = 0;
    }
    out.insert(out.end(), {r, g, b, a});
  }
  return out;
}

Src random_src(uint32_t w, uint32_t h, int depth, int color, std::mt19937& rng) {
  Src s{w, h, depth, color, {}, {}, {}};
  std::uniform_int_distribution<int> u(0, (1 << depth) - 1);  // palette indices too
  s.samples.resize(static_cast<size_t>(w) * h * s.channels());
  for (auto& v : s.samples) v = static_cast<uint16_t>(u(rng));
  if (color == 3) {
    std::uniform_int_distribution<int> b(0, 255);
    s.plte.resize(static_cast<size_t>(3 << depth));
    for (auto& v : s.plte) v = static_cast<uint8_t>(b(rng));
  }
  return s;
}

RgbaImage decode(const std::string& png, const std::string& what = "test.png") {
  return decode_png(png.data(), png.size(), what);
}

TEST(ImagePng, EveryColourTypeAndDepth) {
  std::mt19937 rng(11);
  struct Kind {
    int depth, color;
  };
  const Kind kinds[] = {{1, 0}, {2, 0}, {4, 0}, {8, 0}, {16, 0}, {8, 2}, {16, 2}, {1, 3}, {2, 3}, {4, 3},
                        {8, 3}, {8, 4}, {16, 4}, {8, 6}, {16, 6}};
  for (const Kind& k : kinds)
    for (auto [w, h] : {std::pair{1u, 1u}, {7u, 3u}, {13u, 9u}, {33u, 2u}})
      for (bool interlace : {false, true}) {
        Src s = random_src(w, h, k.depth, k.color, rng);
        s.interlace = interlace;
        RgbaImage img = decode(encode(s));
        ASSERT_EQ(img.width, w);
        ASSERT_EQ(img.height, h);
        ASSERT_EQ(img.pixels, expected_rgba(s)) << "depth " << k.depth << " colour type " << k.color << " " << w
                                                << "x" << h << (interlace ? " interlaced" : "");
      }
}

TEST(ImagePng, SixteenBitKeepsTheHighByte) {
  Src s{3, 1, 16, 0, {0x12ff, 0x0100, 0xfffe}, {}, {}};
  EXPECT_EQ(decode(encode(s)).pixels,
            (std::vector<uint8_t>{0x12, 0x12, 0x12, 255, 1, 1, 1, 255, 0xff, 0xff, 0xff, 255}));
}

TEST(ImagePng, Transparency) {
  std::mt19937 rng(5);
  // Gray at every depth, with the tRNS value present in the image.
  for (int depth : {1, 2, 4, 8, 16}) {
    Src s = random_src(16, 4, depth, 0, rng);
    s.trns = {s.samples[5]};
    std::vector<uint8_t> want = expected_rgba(s);
    ASSERT_EQ(want[5 * 4 + 3], 0);
    ASSERT_EQ(decode(encode(s)).pixels, want) << "gray depth " << depth;
  }
  for (int depth : {8, 16}) {
    Src s = random_src(5, 5, depth, 2, rng);
    s.trns = {s.samples[6], s.samples[7], s.samples[8]};  // the colour of pixel 2
    std::vector<uint8_t> want = expected_rgba(s);
    ASSERT_EQ(want[2 * 4 + 3], 0);
    ASSERT_EQ(decode(encode(s)).pixels, want) << "RGB depth " << depth;
  }
  // Palette: alpha for the first three entries only; the others stay opaque.
  Src p = random_src(8, 8, 4, 3, rng);
  p.trns = {0, 128, 255};
  ASSERT_EQ(decode(encode(p)).pixels, expected_rgba(p));
}

std::string valid_png() {
  std::mt19937 rng(1);
  return encode(random_src(20, 10, 8, 2, rng));
}

void expect_error(const std::string& png, const std::string& needle, const std::string& what = "crop.png") {
  try {
    decode(png, what);
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(what), std::string::npos) << m;
    EXPECT_NE(m.find(needle), std::string::npos) << m;
  }
}

TEST(ImagePng, NotAPng) {
  expect_error("", "not a PNG");
  expect_error("\xff\xd8\xff\xe0 JFIF", "not a PNG");
  expect_error("GIF89a....", "not a PNG");
  expect_error(valid_png().substr(0, 7), "not a PNG");
}

TEST(ImagePng, TruncatedFilesFail) {
  std::string png = valid_png();
  size_t iend = png.size() - 12;  // the IEND chunk is the last 12 bytes
  size_t data_end = iend - 4;     // before it, the CRC of the last IDAT chunk
  for (size_t n = 0; n < data_end; ++n)
    EXPECT_THROW(decode(png.substr(0, n)), Error) << "truncated to " << n << " bytes";
  // Once every pixel is read, what follows is not needed (as with PIL and browsers).
  std::mt19937 rng(1);
  std::vector<uint8_t> want = expected_rgba(random_src(20, 10, 8, 2, rng));
  for (size_t n = data_end; n <= png.size(); ++n) EXPECT_EQ(decode(png.substr(0, n)).pixels, want) << n << " bytes";
}

TEST(ImagePng, CorruptFilesFail) {
  std::string png = valid_png();
  size_t idat = png.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  std::string bad_crc = png;
  bad_crc[idat + 4 + 5] ^= 0x55;  // a byte of the compressed data: the CRC no longer matches
  expect_error(bad_crc, "spng");
  // The same change with a recomputed CRC: the CRC passes, inflate fails.
  uint32_t len = (static_cast<uint8_t>(png[idat - 4]) << 24) | (static_cast<uint8_t>(png[idat - 3]) << 16) |
                 (static_cast<uint8_t>(png[idat - 2]) << 8) | static_cast<uint8_t>(png[idat - 1]);
  std::string data = png.substr(idat + 4, len);
  for (size_t i = 2; i < data.size(); ++i) data[i] = static_cast<char>(data[i] ^ 0xA7);
  std::string bad_zlib = png.substr(0, idat - 4) + chunk("IDAT", data) + chunk("IEND", "");
  EXPECT_THROW(decode(bad_zlib), Error);
  // Bad IHDR: bit depth 3, colour type 5.
  Src s{2, 2, 8, 0, {1, 2, 3, 4}, {}, {}};
  std::string p = encode(s);
  std::string ihdr_bad = p;
  ihdr_bad[8 + 8 + 8] = 3;
  ihdr_bad.replace(8, 25, chunk("IHDR", ihdr_bad.substr(16, 13)));
  EXPECT_THROW(decode(ihdr_bad), Error);
  // No IDAT at all.
  EXPECT_THROW(decode(p.substr(0, 33) + chunk("IEND", "")), Error);
}

TEST(ImagePng, RandomByteFlipsNeverCrash) {
  std::string png = valid_png();
  std::mt19937 rng(99);
  std::uniform_int_distribution<size_t> pos(8, png.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  int ok = 0, errors = 0;
  for (int iter = 0; iter < 500; ++iter) {
    std::string m = png;
    for (int k = 0; k < 1 + iter % 4; ++k) m[pos(rng)] = static_cast<char>(byte(rng));
    try {
      RgbaImage img = decode(m);
      ASSERT_EQ(img.pixels.size(), static_cast<size_t>(img.width * img.height * 4));
      ++ok;
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
}

TEST(ImagePng, SizeLimits) {
  auto header_only = [](uint32_t w, uint32_t h) {
    std::string ihdr = be32(w) + be32(h) + std::string("\x08\x00\x00\x00\x00", 5);
    return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", zlib_compress("\0")) +
           chunk("IEND", "");
  };
  expect_error(header_only(0, 5), "empty image");
  expect_error(header_only(5, 0), "empty image");
  expect_error(header_only(20000, 1), "20000x1");
  expect_error(header_only(1, 16385), "1x16385");
  expect_error(header_only(12000, 12000), "12000x12000");  // sides fine, 144M pixels too many
  expect_error(header_only(0x7fffffff, 0x7fffffff), "2147483647x2147483647");
  // Tighter limits of the caller.
  PngLimits small;
  small.max_side = 10;
  std::string png = valid_png();  // 20 x 10
  EXPECT_THROW(decode_png(png.data(), png.size(), "x", small), Error);
  small.max_side = 100;
  small.max_pixels = 199;
  EXPECT_THROW(decode_png(png.data(), png.size(), "x", small), Error);
  small.max_pixels = 200;
  EXPECT_EQ(decode_png(png.data(), png.size(), "x", small).width, 20);
}

// A 70-byte file declaring 10000 x 10000 RGBA pixels made the decoder allocate and clear
// 400 MB before it found the data missing. Deflate expands data at most 1032 times, so
// such a header is refused first.
TEST(ImagePng, DeclaredSizeMustFitTheImageData) {
  auto declared = [](uint32_t w, uint32_t h, int color, const std::string& raw) {
    std::string ihdr = be32(w) + be32(h) + std::string{8, static_cast<char>(color), 0, 0, 0};
    return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", zlib_compress(raw)) +
           chunk("IEND", "");
  };
  expect_error(declared(10000, 10000, 6, std::string(100, '\0')), "cannot inflate to that much");
  expect_error(declared(16000, 6000, 0, std::string(100, '\0')), "96000000 bytes of samples");
  // A real image that compresses close to the limit still decodes: 3000 x 1000 gray
  // zeros (3 MB of scanlines) in about 3 KB of deflate data.
  Src s{3000, 1000, 8, 0, std::vector<uint16_t>(3000 * 1000, 0), {}, {}, false};
  RgbaImage img = decode(encode(s));
  ASSERT_EQ(img.width, 3000);
  ASSERT_EQ(img.height, 1000);
  EXPECT_EQ(img.pixels, expected_rgba(s));
}

TEST(ImagePng, Files) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("onyx_image_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::mt19937 rng(2);
  Src s = random_src(6, 4, 8, 6, rng);
  std::string good = (dir / "good.png").string(), cut = (dir / "cut.png").string();
  std::ofstream(good, std::ios::binary) << encode(s);
  std::ofstream(cut, std::ios::binary) << encode(s).substr(0, 50);
  EXPECT_EQ(read_png_file(good).pixels, expected_rgba(s));
  try {
    read_png_file(cut);
    ADD_FAILURE() << "truncated file decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cut.png"), std::string::npos) << e.what();
  }
  try {
    read_png_file((dir / "missing.png").string());
    ADD_FAILURE() << "missing file decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("missing.png"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_png_file(dir.string()), Error);  // a folder
  PngLimits tiny;
  tiny.max_file_bytes = 10;
  EXPECT_THROW(read_png_file(good, tiny), Error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace onyx::image
