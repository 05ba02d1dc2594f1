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

/// Output rows [0, nrows) of one output channel: row r reads the padded buffer at src +
/// r * src_step + offs[t] + ox for tap t (padded rows hold sw column phases, so every tap
/// reads a contiguous run; a phase leaves room for a whole last vector). The sum starts at
/// bias, gets the residual row z (may be null) and the activation, and is stored once.
/// y and z rows are ow apart. A row stores whole vectors past ow, into the rows after it,
/// which are written later (Y never aliases Z or X), but never past the last row of the
/// call. kTaps > 0: the
/// tap count known at compile time, the weights held in registers.
template <int kTaps>
HWY_INLINE void DwRowsImpl(const float* src, int64_t src_step, const int64_t* offs, const float* wc,
                           int64_t taps_rt, float bias, const float* z, const Activation& act,
                           float* y, int64_t ow, int64_t nrows) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const int64_t taps = kTaps > 0 ? kTaps : taps_rt;
  const V vb = hn::Set(d, bias);
  V wv[kTaps > 0 ? kTaps : 1];
  int64_t off[kTaps > 0 ? kTaps : 1];
  if constexpr (kTaps > 0) {
    for (int t = 0; t < kTaps; ++t) {
      wv[t] = hn::Set(d, wc[t]);
      off[t] = offs[t];
    }
  }
  auto weight = [&](int64_t t) {
    if constexpr (kTaps > 0)
      return wv[t];
    else
      return hn::Set(d, wc[t]);
  };
  auto offset = [&](int64_t t) {
    if constexpr (kTaps > 0)
      return off[t];
    else
      return offs[t];
  };
  const int64_t whole = (ow + L - 1) / L * L;
  for (int64_t r = 0; r < nrows; ++r) {
    const float* sr = src + r * src_step;
    const float* zr = z ? z + r * ow : nullptr;
    float* yr = y + r * ow;
    // Whole vectors may be stored up to `end`: past ow, but within the call's rows.
    const int64_t end = std::min(whole, (nrows - r) * ow);
    int64_t ox = 0;
    for (; ox + 4 * L <= end; ox += 4 * L) {
      V a0 = vb, a1 = vb, a2 = vb, a3 = vb;
      for (int64_t t = 0; t < taps; ++t) {
        const V wt = weight(t);
        const float* p = sr + offset(t) + ox;
        a0 = hn::MulAdd(wt, hn::LoadU(d, p), a0);
        a1 = hn::MulAdd(wt, hn::LoadU(d, p + L), a1);
        a2 = hn::MulAdd(wt, hn::LoadU(d, p + 2 * L), a2);
        a3 = hn::MulAdd(wt, hn::LoadU(d, p + 3 * L), a3);
      }
      if (zr) {
        a0 = hn::Add(a0, hn::LoadU(d, zr + ox));
        a1 = hn::Add(a1, hn::LoadU(d, zr + ox + L));
        a2 = hn::Add(a2, hn::LoadU(d, zr + ox + 2 * L));
        a3 = hn::Add(a3, hn::LoadU(d, zr + ox + 3 * L));
      }
      hn::StoreU(ApplyAct(d, a0, act), d, yr + ox);
      hn::StoreU(ApplyAct(d, a1, act), d, yr + ox + L);
      hn::StoreU(ApplyAct(d, a2, act), d, yr + ox + 2 * L);
      hn::StoreU(ApplyAct(d, a3, act), d, yr + ox + 3 * L);
    }
    for (; ox < ow; ox += L) {
      // Two chains (even and odd taps) so the FMAs of one vector overlap.
      V a0 = vb, a1 = hn::Zero(d);
      int64_t t = 0;
      for (; t + 2 <= taps; t += 2) {
        a0 = hn::MulAdd(weight(t), hn::LoadU(d, sr + offset(t) + ox), a0);
        a1 = hn::MulAdd(weight(t + 1), hn::LoadU(d, sr + offset(t + 1) + ox), a1);
      }
      if (t < taps) a0 = hn::MulAdd(weight(t), hn::LoadU(d, sr + offset(t) + ox), a0);
      a0 = hn::Add(a0, a1);
      if (ox + L <= end) {
        if (zr) a0 = hn::Add(a0, hn::LoadU(d, zr + ox));
        hn::StoreU(ApplyAct(d, a0, act), d, yr + ox);
      } else {
        HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)] = {};
        if (zr) std::copy(zr + ox, zr + ow, tmp);
        hn::Store(ApplyAct(d, hn::Add(a0, hn::Load(d, tmp)), act), d, tmp);
        std::copy(tmp, tmp + (ow - ox), yr + ox);
      }
    }
  }
}

void DwRows(const float* src, int64_t src_step, const int64_t* offs, const float* wc, int64_t taps,
            float bias, const float* z, const Activation& act, float* y, int64_t ow,
            int64_t nrows) {
  if (taps == 9)
    DwRowsImpl<9>(src, src_step, offs, wc, taps, bias, z, act, y, ow, nrows);
  else
    DwRowsImpl<0>(src, src_step, offs, wc, taps, bias, z, act, y, ow, nrows);
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
HWY_EXPORT(DwRows);
HWY_EXPORT(DwDeinterleave2);

void depthwise_conv2d(const DepthwiseArgs& a, ThreadPool* pool) {
  const int64_t L = HWY_DYNAMIC_DISPATCH(DwLanes)();
  const auto rows_fn = HWY_DYNAMIC_DISPATCH(DwRows);
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
  // Below about half a million multiply-adds (some tens of microseconds) waking the
  // workers costs about what it saves.
  const bool parallel = threads > 1 && work >= double(1 << 19);
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
        const int64_t yo = ym + oy0 * ow;
        rows_fn(pad.data(), sh * rs, offs.data(), wc, taps, b, a.ep.z ? a.ep.z + yo : nullptr,
                a.ep.act, a.y + yo, ow, oy1 - oy0);
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
