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

#include "simd/conv_epilogue-inl.h"

#ifndef ONYX_SIMD_DEPTHWISE_ONCE
#define ONYX_SIMD_DEPTHWISE_ONCE
#include <algorithm>
#include <vector>

#include "runtime/thread_pool.h"
#include "simd/depthwise.h"
#endif

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Number of floats in one vector of this target.
int64_t DwLanes() {
  const hn::ScalableTag<float> d;
  return static_cast<int64_t>(hn::Lanes(d));
}

/// One output row: tap t reads the padded buffer at src + offs[t] + ox (padded rows hold
/// sw column phases, so every tap reads a contiguous run; a phase leaves room for a whole
/// last vector). The sum starts at bias, gets the residual row z (may be null) and the
/// activation, and is stored once.
void DwRow(const float* src, const int64_t* offs, const float* wc, int64_t taps, float bias,
           const float* z, const Activation& act, float* yrow, int64_t ow) {
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
    if (z) {
      a0 = hn::Add(a0, hn::LoadU(d, z + ox));
      a1 = hn::Add(a1, hn::LoadU(d, z + ox + L));
      a2 = hn::Add(a2, hn::LoadU(d, z + ox + 2 * L));
      a3 = hn::Add(a3, hn::LoadU(d, z + ox + 3 * L));
    }
    hn::StoreU(ApplyAct(d, a0, act), d, yrow + ox);
    hn::StoreU(ApplyAct(d, a1, act), d, yrow + ox + L);
    hn::StoreU(ApplyAct(d, a2, act), d, yrow + ox + 2 * L);
    hn::StoreU(ApplyAct(d, a3, act), d, yrow + ox + 3 * L);
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
      if (z) a0 = hn::Add(a0, hn::LoadU(d, z + ox));
      hn::StoreU(ApplyAct(d, a0, act), d, yrow + ox);
    } else {
      HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)] = {};
      if (z) std::copy(z + ox, z + ow, tmp);
      hn::Store(ApplyAct(d, hn::Add(a0, hn::Load(d, tmp)), act), d, tmp);
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

void depthwise_conv2d(const DepthwiseArgs& a, ThreadPool* pool) {
  const int64_t L = HWY_DYNAMIC_DISPATCH(DwLanes)();
  const auto row_fn = HWY_DYNAMIC_DISPATCH(DwRow);
  const auto deint = HWY_DYNAMIC_DISPATCH(DwDeinterleave2);
  const int64_t ih = a.ih, iw = a.iw, oh = a.oh, ow = a.ow, kh = a.kh, kw = a.kw;
  const int64_t sh = a.sh, sw = a.sw, dh = a.dh, dw = a.dw, ph = a.ph, pw = a.pw;
  if (a.batch * a.channels * a.mult * oh * ow == 0) return;
  // Per phase, the indices a whole-vector read may touch; the row stride of the buffer.
  const int64_t pl = (ow + L - 1) / L * L + (kw - 1) * dw / sw + 1;
  const int64_t rs = pl * sw;
  const int64_t planes = a.batch * a.channels;
  const int64_t taps = kh * kw;
  // Tap (i, j) reads padded row oy * sh + i * dh, padded column ox * sw + j * dw: phase
  // (j * dw) % sw, index ox + (j * dw) / sw; offsets relative to the first row an output
  // row reads.
  std::vector<int64_t> offs(static_cast<size_t>(taps));
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j)
      offs[static_cast<size_t>(i * kw + j)] = i * dh * rs + (j * dw % sw) * pl + j * dw / sw;
  // Phase f, index q holds input column q * sw + f - pw: inside the row for q in [lo_f, hi_f).
  std::vector<int64_t> lo_f(static_cast<size_t>(sw)), hi_f(static_cast<size_t>(sw));
  for (int64_t f = 0; f < sw; ++f) {
    const int64_t lo = std::min(pl, pw - f > 0 ? (pw - f + sw - 1) / sw : int64_t(0));
    lo_f[static_cast<size_t>(f)] = lo;
    hi_f[static_cast<size_t>(f)] =
        std::clamp(iw + pw - f > 0 ? (iw + pw - f + sw - 1) / sw : int64_t(0), lo, pl);
  }
  // With sw == 2, both phases are inside the row for q in [q1, q2), filled by SIMD; the
  // scalar loops take the rest (q1 = q2 leaves everything to them).
  const int64_t q1 = sw == 2 ? std::min((pw + 1) / 2, pl) : 0;
  const int64_t q2 = sw == 2 ? std::max(q1, std::min((iw + pw) / 2, pl)) : 0;  // 2q + 1 - pw < iw
  // Tasks: (plane, block of output rows); row blocks only when there are few planes.
  const int64_t threads = pool ? pool->size() : 1;
  const double work = static_cast<double>(planes * a.mult) * static_cast<double>(oh * ow) *
                      static_cast<double>(taps);
  const bool parallel = threads > 1 && work >= double(1 << 16);
  int64_t rblocks = 1;
  if (parallel && planes < 4 * threads) rblocks = std::min(oh, (4 * threads + planes - 1) / planes);
  const int64_t rows_per = (oh + rblocks - 1) / rblocks;
  rblocks = (oh + rows_per - 1) / rows_per;
  auto run = [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> pad;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t p = t / rblocks, oy0 = (t % rblocks) * rows_per,
                    oy1 = std::min(oh, oy0 + rows_per);
      const int64_t r0 = oy0 * sh,
                    rows = (oy1 - 1 - oy0) * sh + (kh - 1) * dh + 1;  // padded rows read
      if (static_cast<int64_t>(pad.size()) < rows * rs) pad.resize(static_cast<size_t>(rows * rs));
      const float* xc = a.x + p * ih * iw;
      for (int64_t r = 0; r < rows; ++r) {
        float* prow = pad.data() + r * rs;
        const int64_t iy = r0 + r - ph;
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
      const int64_t n = p / a.channels, c = p % a.channels;
      for (int64_t k = 0; k < a.mult; ++k) {
        const int64_t m = c * a.mult + k, ym = (n * a.channels * a.mult + m) * oh * ow;
        const float* wc = a.w + m * taps;
        const float b = a.ep.bias ? a.ep.bias[m] : 0.0f;
        for (int64_t oy = oy0; oy < oy1; ++oy) {
          const int64_t yo = ym + oy * ow;
          row_fn(pad.data() + (oy - oy0) * sh * rs, offs.data(), wc, taps, b,
                 a.ep.z ? a.ep.z + yo : nullptr, a.ep.act, a.y + yo, ow);
        }
      }
    }
  };
  if (parallel && planes * rblocks > 1)
    pool->parallel_for(planes * rblocks, run);
  else
    run(0, planes * rblocks);
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
