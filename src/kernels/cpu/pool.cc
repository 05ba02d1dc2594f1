#include "kernels/cpu/pool.h"

#include <algorithm>
#include <limits>

namespace onyx::kernels::cpu {

namespace {

/// The reference's running maximum: a larger value, or the first NaN, replaces it.
inline float fold(float best, float v) {
  return (v > best || (v != v && best == best)) ? v : best;
}

/// One window row folded into the output row yr, every window inside the input row xr
/// (no pads on these columns, no dilation). KW > 0 fixes the kernel width at compile time; first =
/// the row is the window's first, whose first value is taken as it is.
template <int KW>
void fold_row(const float* xr, float* yr, int64_t ow, int64_t sw, int64_t kw, bool first) {
  const int64_t n = KW > 0 ? KW : kw;
  for (int64_t ox = 0; ox < ow; ++ox) {
    const float* p = xr + ox * sw;
    float b = first ? p[0] : fold(yr[ox], p[0]);
    for (int64_t k = 1; k < n; ++k) b = fold(b, p[k]);
    yr[ox] = b;
  }
}

}  // namespace

bool max_pool2d_f32(const WindowGeom& g, int64_t planes, const float* x, float* y) {
  if (g.nsp != 2) return false;
  const int64_t ih = g.in[0], iw = g.in[1], oh = g.out[0], ow = g.out[1];
  const int64_t kh = g.kernel[0], kw = g.kernel[1], sh = g.strides[0], sw = g.strides[1];
  const int64_t dh = g.dilations[0], dw = g.dilations[1], ph = g.pad_begin[0], pw = g.pad_begin[1];
  // Per output column: the first kernel column inside the image and the count of them.
  std::vector<int64_t> kx0(static_cast<size_t>(ow)), kxn(static_cast<size_t>(ow));
  for (int64_t ox = 0; ox < ow; ++ox) {
    const int64_t base = ox * sw - pw;
    int64_t lo = 0, hi = kw;
    while (lo < kw && base + lo * dw < 0) ++lo;
    while (hi > lo && base + (hi - 1) * dw >= iw) --hi;
    kx0[ox] = lo;
    kxn[ox] = hi - lo;
  }
  constexpr float kLowest = std::numeric_limits<float>::lowest();
  // Without dilation, output columns [lo_in, hi_in) have every window column inside the
  // input row and take fold_row; the ones at the pads take the general loop.
  int64_t lo_in = 0, hi_in = 0;
  if (dw == 1) {
    lo_in = std::min(ow, (pw + sw - 1) / sw);
    hi_in = iw - kw + pw >= 0 ? std::clamp((iw - kw + pw) / sw + 1, lo_in, ow) : lo_in;
  }
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* xs = x + pl * ih * iw;
    float* ys = y + pl * oh * ow;
    for (int64_t oy = 0; oy < oh; ++oy) {
      const int64_t base_y = oy * sh - ph;
      float* yr = ys + oy * ow;
      std::fill(yr, yr + ow, kLowest);
      bool seen = false;  // a window row inside the image was read
      for (int64_t ky = 0; ky < kh; ++ky) {
        const int64_t iy = base_y + ky * dh;
        if (iy < 0 || iy >= ih) continue;
        const float* xr = xs + iy * iw;
        auto general = [&](int64_t ox0, int64_t ox1) {
          for (int64_t ox = ox0; ox < ox1; ++ox) {
            const float* xw = xr + ox * sw - pw + kx0[ox] * dw;
            float best = yr[ox];
            const int64_t n = kxn[ox];
            for (int64_t k = 0; k < n; ++k) {
              const float v = xw[k * dw];
              // The reference takes the first value read, then a larger one or the first NaN.
              if ((!seen && k == 0) || v > best || (v != v && best == best)) best = v;
            }
            yr[ox] = best;
          }
        };
        general(0, lo_in);
        if (hi_in > lo_in) {
          const float* xi = xr + lo_in * sw - pw;
          float* yi = yr + lo_in;
          const int64_t n = hi_in - lo_in;
          if (kw == 1)
            fold_row<1>(xi, yi, n, sw, kw, !seen);
          else if (kw == 2)
            fold_row<2>(xi, yi, n, sw, kw, !seen);
          else if (kw == 3)
            fold_row<3>(xi, yi, n, sw, kw, !seen);
          else
            fold_row<0>(xi, yi, n, sw, kw, !seen);
        }
        general(std::max(lo_in, hi_in), ow);
        seen = true;
      }
    }
  }
  return true;
}

}  // namespace onyx::kernels::cpu
