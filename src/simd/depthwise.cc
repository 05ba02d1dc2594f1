// Depthwise 2-D convolution (see depthwise.h), compiled once per SIMD target through
// Highway's foreach_target.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/depthwise.cc"
#if defined(__EMSCRIPTEN__) && !defined(HWY_COMPILE_ONLY_STATIC)
#define HWY_COMPILE_ONLY_STATIC 1
#endif
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include <algorithm>
#include <vector>

#include "runtime/thread_pool.h"
#include "simd/depthwise.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Number of floats in one vector of this target.
int64_t DwLanes() {
  const hn::ScalableTag<float> d;
  return static_cast<int64_t>(hn::Lanes(d));
}

/// One output row: tap t (kernel row i, column j) reads the padded buffer at src + offs[t]
/// + ox, where offs[t] = i * (row stride) + (j % sw) * (phase length) + j / sw: padded rows
/// hold sw phases (phase p, index q = padded column q * sw + p), so every tap reads a
/// contiguous run. Every read stays inside the buffer because a phase leaves room for a
/// whole last vector.
void DwRow(const float* src, const int64_t* offs, const float* wc, int64_t taps, float bias, float* yrow,
           int64_t ow) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const auto vb = hn::Set(d, bias);
  int64_t ox = 0;
  for (; ox + 4 * L <= ow; ox += 4 * L) {
    auto a0 = vb, a1 = vb, a2 = vb, a3 = vb;
    for (int64_t t = 0; t < taps; ++t) {
      const auto wv = hn::Set(d, wc[t]);
      const float* s = src + offs[t] + ox;
      a0 = hn::MulAdd(wv, hn::LoadU(d, s), a0);
      a1 = hn::MulAdd(wv, hn::LoadU(d, s + L), a1);
      a2 = hn::MulAdd(wv, hn::LoadU(d, s + 2 * L), a2);
      a3 = hn::MulAdd(wv, hn::LoadU(d, s + 3 * L), a3);
    }
    hn::StoreU(a0, d, yrow + ox);
    hn::StoreU(a1, d, yrow + ox + L);
    hn::StoreU(a2, d, yrow + ox + 2 * L);
    hn::StoreU(a3, d, yrow + ox + 3 * L);
  }
  for (; ox < ow; ox += L) {
    // Two chains (even and odd taps) so the FMAs of one vector overlap.
    auto a0 = vb, a1 = hn::Zero(d);
    int64_t t = 0;
    for (; t + 2 <= taps; t += 2) {
      a0 = hn::MulAdd(hn::Set(d, wc[t]), hn::LoadU(d, src + offs[t] + ox), a0);
      a1 = hn::MulAdd(hn::Set(d, wc[t + 1]), hn::LoadU(d, src + offs[t + 1] + ox), a1);
    }
    if (t < taps) a0 = hn::MulAdd(hn::Set(d, wc[t]), hn::LoadU(d, src + offs[t] + ox), a0);
    a0 = hn::Add(a0, a1);
    if (ox + L <= ow) {
      hn::StoreU(a0, d, yrow + ox);
    } else {
      HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)];
      hn::Store(a0, d, tmp);
      std::copy(tmp, tmp + (ow - ox), yrow + ox);
    }
  }
}

/// even[q] = src[2q], odd[q] = src[2q + 1] for q in [0, n).
void DwDeinterleave2(const float* src, int64_t n, float* even, float* odd) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t q = 0;
  for (; q + L <= n; q += L) {
    hn::Vec<decltype(d)> v0, v1;
    hn::LoadInterleaved2(d, src + 2 * q, v0, v1);
    hn::StoreU(v0, d, even + q);
    hn::StoreU(v1, d, odd + q);
  }
  for (; q < n; ++q) {
    even[q] = src[2 * q];
    odd[q] = src[2 * q + 1];
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::simd {

HWY_EXPORT(DwLanes);
HWY_EXPORT(DwRow);
HWY_EXPORT(DwDeinterleave2);

void depthwise_conv2d(int64_t batch, int64_t channels, const float* x, int64_t ih, int64_t iw,
                      const float* w, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                      int64_t pw, const float* bias, float* y, int64_t oh, int64_t ow, ThreadPool* pool) {
  const int64_t L = HWY_DYNAMIC_DISPATCH(DwLanes)();
  const auto row_fn = HWY_DYNAMIC_DISPATCH(DwRow);
  const auto deint = HWY_DYNAMIC_DISPATCH(DwDeinterleave2);
  // Padded rows the output reads, and per phase the indices a whole-vector read may touch.
  const int64_t rows = (oh - 1) * sh + kh;
  const int64_t pl = (ow + L - 1) / L * L + (kw - 1) / sw + 1;
  const int64_t rs = pl * sw;
  const int64_t planes = batch * channels;
  std::vector<int64_t> offs(static_cast<size_t>(kh * kw));
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) offs[static_cast<size_t>(i * kw + j)] = i * rs + (j % sw) * pl + j / sw;
  // Phase f, index q holds input column q * sw + f - pw: inside the row for q in [lo_f, hi_f).
  std::vector<int64_t> lo_f(static_cast<size_t>(sw)), hi_f(static_cast<size_t>(sw));
  for (int64_t f = 0; f < sw; ++f) {
    const int64_t lo = std::min(pl, pw - f > 0 ? (pw - f + sw - 1) / sw : int64_t(0));
    lo_f[static_cast<size_t>(f)] = lo;
    hi_f[static_cast<size_t>(f)] = std::clamp(iw + pw - f > 0 ? (iw + pw - f + sw - 1) / sw : int64_t(0), lo, pl);
  }
  // With sw == 2, both phases are inside the row for q in [q1, q2), filled by SIMD; the
  // scalar loops above take the rest (q1 = q2 leaves everything to them).
  const int64_t q1 = sw == 2 ? std::min((pw + 1) / 2, pl) : 0;
  const int64_t q2 = sw == 2 ? std::max(q1, std::min((iw + pw) / 2, pl)) : 0;  // 2q + 1 - pw < iw
  auto run = [&](int64_t p0, int64_t p1) {
    std::vector<float> pad(static_cast<size_t>(rows * rs));
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t c = p % channels;
      const float* xc = x + p * ih * iw;
      for (int64_t r = 0; r < rows; ++r) {
        float* prow = pad.data() + r * rs;
        const int64_t iy = r - ph;
        if (iy < 0 || iy >= ih) {
          std::fill(prow, prow + rs, 0.0f);
          continue;
        }
        const float* xr = xc + iy * iw;
        if (sw == 2) deint(xr + 2 * q1 - pw, q2 - q1, prow + q1, prow + pl + q1);
        for (int64_t f = 0; f < sw; ++f) {
          float* dst = prow + f * pl;
          const int64_t lo = lo_f[static_cast<size_t>(f)], hi = hi_f[static_cast<size_t>(f)];
          std::fill(dst, dst + lo, 0.0f);
          const float* xs = xr + f - pw;
          if (sw == 1) {
            std::copy(xs + lo, xs + hi, dst + lo);
          } else {
            for (int64_t q = lo; q < std::min(hi, q1); ++q) dst[q] = xs[q * sw];
            for (int64_t q = std::max(lo, q2); q < hi; ++q) dst[q] = xs[q * sw];
          }
          std::fill(dst + hi, dst + pl, 0.0f);
        }
      }
      const float* wc = w + c * kh * kw;
      const float b = bias ? bias[c] : 0.0f;
      float* yc = y + p * oh * ow;
      for (int64_t oy = 0; oy < oh; ++oy)
        row_fn(pad.data() + oy * sh * rs, offs.data(), wc, kh * kw, b, yc + oy * ow, ow);
    }
  };
  if (pool && pool->size() > 1 && planes > 1 && planes * oh * ow * kh * kw >= (1 << 14))
    pool->parallel_for(planes, run);
  else
    run(0, planes);
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
