// The channel-vector direct convolution (see conv.h and simd/conv_cv.h): per image and
// group, X padded once (or read in place when no tap reads padding), then tasks of (block
// of output channels, block of output rows), each tile CB channels x up to a dozen
// positions of one output row, accumulated over the whole depth in registers.
#include <algorithm>
#include <vector>

#include "kernels/cpu/conv.h"
#include "runtime/thread_pool.h"
#include "simd/conv_cv.h"

namespace onyx::kernels::cpu {

namespace {
/// The input extent the taps of axis d read (from the padded origin).
int64_t span_read(const WindowGeom& g, size_t d) {
  return (g.out[d] - 1) * g.strides[d] + (g.kernel[d] - 1) * g.dilations[d] + 1;
}

/// Whether a tap reads outside X (so X is copied with its padding).
bool reads_padding(const WindowGeom& g) {
  for (size_t d = 0; d < g.nsp; ++d)
    if (g.pad_begin[d] != 0 || span_read(g, d) > g.in[d]) return true;
  return false;
}
}  // namespace

bool cv_suits(const ConvShape& s) {
#ifdef __EMSCRIPTEN__
  (void)s;
  return false;
#else
  const WindowGeom& g = s.g;
  if (g.nsp != 2 || s.cg < 2) return false;
  if (g.strides[1] != 1 && g.strides[1] != 2) return false;
  if (reads_padding(g)) {  // the padded copy stays near X's size (no huge pads or strides)
    const double copy = double(s.batch) * double(s.channels) * double(span_read(g, 0)) *
                        double(span_read(g, 1));
    if (copy > std::max(double(1 << 22), 4.0 * double(s.batch) * double(s.channels) * double(g.in_size)))
      return false;
  }
  return true;
#endif
}

bool cv_preferred(const ConvShape& s) {
  // Measured on one Zen 5 core (min of 100 runs, the GEMM path / this one, ms): it wins
  // where the GEMM's 32-wide column panels go partly empty or an im2col is built: 3x3
  // 512 -> 512 at 7x7 1.72-1.93 / 1.12-1.16, 1x1 512 -> 2048 at 7x7 0.65 / 0.53, 3x3 stride
  // 2 128 -> 128 to 28x28 1.61 / 1.24-1.31, DenseNet's 3x3 128 -> 32 at 14x14 0.14 / 0.08
  // and at 56x56 1.35-1.64 / 1.25. It loses on wide images (1x1 64 -> 256 at 56x56 0.48-0.52
  // / 0.61-0.73, 1x1 128 -> 512 at 28x28 0.47 / 0.53), with few taps (a 3-channel 7x7 stem
  // 1.26 / 1.71: conv_direct) and on pointwise layers of shallow depth, whose transposed
  // write of each tile costs as much as its sums (EfficientNet-B0's 80 -> 480 at 14x14:
  // 0.10 / 0.15, 144 -> 24 at 56x56 0.08 / 0.14). Winograd's layers are decided in conv.cc.
  // Lanes it fills: at least 3 in 4 of the channel blocks' (UNet's 16-channel layers fill
  // half a 32-lane block: 3x3 16 -> 16 at 256x256 1.87 / 3.80).
#ifdef __EMSCRIPTEN__
  (void)s;
  return false;  // the kernel is native-only (cv_suits says no there too)
#else
  const int64_t cb = simd::conv_cv_block(s.mg);
  if (4 * s.mg < 3 * ((s.mg + cb - 1) / cb * cb)) return false;
  const WindowGeom& g = s.g;
  if (g.kernel_size == 1) return g.out_size <= 64 && s.kdepth >= 256;
  if (s.cg < 8 || s.kdepth < 64) return false;
  const bool strided = g.strides[0] != 1 || g.strides[1] != 1;
  // Large images of few output channels only with a deep window: DenseNet's 128 -> 32 at
  // 56x56 (depth 1152) wins, UNet's 64 -> 32 at 128x128 (depth 576) loses, 2.80 / 3.44.
  return g.out_size <= 256 || strided || (s.mg <= 32 && s.kdepth >= 1024);
#endif
}

void conv_cv_run(const ConvShape& s, const float* packed, const ConvIO& io, ThreadPool* pool) {
#ifdef __EMSCRIPTEN__
  (void)s;
  (void)packed;
  (void)io;
  (void)pool;
#else
  const WindowGeom& g = s.g;
  const int64_t OH = g.out[0], OW = g.out[1], OS = g.out_size, K = s.kdepth, cg = s.cg;
  const int64_t kh = g.kernel[0], kw = g.kernel[1], dh = g.dilations[0], dw = g.dilations[1];
  const int64_t CB = simd::conv_cv_block(s.mg);
  // X as the kernel reads it: a padded copy [batch * group][cg][HP][WP], or X itself.
  const bool copy = reads_padding(g);
  const int64_t HP = copy ? span_read(g, 0) : g.in[0], WP = copy ? span_read(g, 1) : g.in[1];
  const int64_t plane = HP * WP;
  const float* xs = io.x;
  thread_local std::vector<float> pad_buf;
  if (copy) {
    const int64_t planes = s.batch * s.channels;
    if (static_cast<int64_t>(pad_buf.size()) < planes * plane)
      pad_buf.resize(static_cast<size_t>(planes * plane));
    float* dst = pad_buf.data();
    const int64_t IH = g.in[0], IW = g.in[1], ph = g.pad_begin[0], pw = g.pad_begin[1];
    const float* x = io.x;
    conv_prepass_parallel(pool, planes, s, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const float* xc = x + c * g.in_size;
        float* dc = dst + c * plane;
        for (int64_t r = 0; r < HP; ++r) {
          float* d = dc + r * WP;
          const int64_t iy = r - ph;
          if (iy < 0 || iy >= IH) {
            std::fill(d, d + WP, 0.0f);
            continue;
          }
          const int64_t lo = std::min(WP, pw), hi = std::clamp(IW + pw, lo, WP);
          std::fill(d, d + lo, 0.0f);
          std::copy(xc + iy * IW + (lo - pw), xc + iy * IW + (hi - pw), d + lo);
          std::fill(d + hi, d + WP, 0.0f);
        }
      }
    });
    xs = pad_buf.data();
  }
  std::vector<int64_t> koff(static_cast<size_t>(K));
  for (int64_t c = 0, p = 0; c < cg; ++c)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j, ++p) koff[static_cast<size_t>(p)] = c * plane + i * dh * WP + j * dw;
  // Tasks: (image, group, block of channels, block of output rows), rows fastest so that
  // a thread's run of tasks reuses its block of W.
  const int64_t blocks = (s.mg + CB - 1) / CB;
  const int64_t units = s.batch * s.group * blocks;
  const int64_t threads = pool ? pool->size() : 1;
  int64_t rblocks = 1;
  if (threads > 1 && units < 4 * threads) rblocks = std::min(OH, (4 * threads + units - 1) / units);
  const int64_t rows_per = (OH + rblocks - 1) / rblocks;
  rblocks = (OH + rows_per - 1) / rows_per;
  const int64_t per_group = simd::conv_cv_pack_size(s.mg, K);
  conv_parallel(pool, units * rblocks, conv_macs(s), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t rb = t % rblocks, u = t / rblocks;
      const int64_t b = u % blocks, ng = u / blocks, gi = ng % s.group, n = ng / s.group;
      simd::ConvCvArgs a;
      a.K = K;
      a.cb = CB;
      a.a = packed + gi * per_group + b * CB * K;
      a.koff = koff.data();
      a.x = xs + (n * s.channels + gi * cg) * plane;
      a.xrow = WP;
      a.sh = g.strides[0];
      a.sw = g.strides[1];
      a.OW = OW;
      a.oy0 = rb * rows_per;
      a.oy1 = std::min(OH, a.oy0 + rows_per);
      const int64_t m0 = b * CB;
      a.rows = std::min(CB, s.mg - m0);
      const int64_t ch = n * s.maps + gi * s.mg + m0;  // first output channel of the block
      a.y = io.y + ch * OS;
      a.ldy = OS;
      a.bias = io.bias ? io.bias + gi * s.mg + m0 : nullptr;
      a.z = io.z ? io.z + ch * OS : nullptr;
      a.act = io.act;
      simd::conv_cv(a);
    }
  });
#endif
}

}  // namespace onyx::kernels::cpu
