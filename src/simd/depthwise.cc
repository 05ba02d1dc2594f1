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
#include "simd/tail-inl.h"

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

/// The taps of one output channel: weight t broadcast and tap t's offset into the phase
/// planes, held in registers when the tap count kTaps > 0 is known at compile time. Sums
/// start from `init` (the bias broadcast).
template <int kTaps>
struct DwTaps {
  using D = hn::ScalableTag<float>;
  using V = hn::Vec<D>;
  D d;
  int64_t taps;
  const float* wc;
  const int64_t* offs;
  V wv[kTaps > 0 ? kTaps : 1];
  int64_t off[kTaps > 0 ? kTaps : 1];

  HWY_INLINE DwTaps(const float* w, const int64_t* o, int64_t taps_rt)
      : taps(kTaps > 0 ? kTaps : taps_rt), wc(w), offs(o) {
    if constexpr (kTaps > 0) {
      for (int t = 0; t < kTaps; ++t) {
        wv[t] = hn::Set(d, wc[t]);
        off[t] = offs[t];
      }
    }
  }
  HWY_INLINE V weight(int64_t t) const {
    if constexpr (kTaps > 0)
      return wv[t];
    else
      return hn::Set(d, wc[t]);
  }
  HWY_INLINE int64_t offset(int64_t t) const {
    if constexpr (kTaps > 0)
      return off[t];
    else
      return offs[t];
  }
  /// Four consecutive output vectors from p: four independent sums.
  HWY_INLINE void Sum4(const float* p, V init, V& a0, V& a1, V& a2, V& a3) const {
    const int64_t L = static_cast<int64_t>(hn::Lanes(d));
    a0 = a1 = a2 = a3 = init;
    for (int64_t t = 0; t < taps; ++t) {
      const V wt = weight(t);
      const float* q = p + offset(t);
      a0 = hn::MulAdd(wt, hn::LoadU(d, q), a0);
      a1 = hn::MulAdd(wt, hn::LoadU(d, q + L), a1);
      a2 = hn::MulAdd(wt, hn::LoadU(d, q + 2 * L), a2);
      a3 = hn::MulAdd(wt, hn::LoadU(d, q + 3 * L), a3);
    }
  }
  /// One output vector from p, in two chains (even and odd taps) so the FMAs overlap.
  HWY_INLINE V Sum1(const float* p, V init) const {
    V a0 = init, a1 = hn::Zero(d);
    int64_t t = 0;
    for (; t + 2 <= taps; t += 2) {
      a0 = hn::MulAdd(weight(t), hn::LoadU(d, p + offset(t)), a0);
      a1 = hn::MulAdd(weight(t + 1), hn::LoadU(d, p + offset(t + 1)), a1);
    }
    if (t < taps) a0 = hn::MulAdd(weight(t), hn::LoadU(d, p + offset(t)), a0);
    return hn::Add(a0, a1);
  }
  /// out[0, 4 vectors) = act(a + z) (z may be null).
  HWY_INLINE void Store4(V a0, V a1, V a2, V a3, const float* z, const Activation& act,
                         float* out) const {
    const int64_t L = static_cast<int64_t>(hn::Lanes(d));
    if (z) {
      a0 = hn::Add(a0, hn::LoadU(d, z));
      a1 = hn::Add(a1, hn::LoadU(d, z + L));
      a2 = hn::Add(a2, hn::LoadU(d, z + 2 * L));
      a3 = hn::Add(a3, hn::LoadU(d, z + 3 * L));
    }
    hn::StoreU(ApplyAct(d, a0, act), d, out);
    hn::StoreU(ApplyAct(d, a1, act), d, out + L);
    hn::StoreU(ApplyAct(d, a2, act), d, out + 2 * L);
    hn::StoreU(ApplyAct(d, a3, act), d, out + 3 * L);
  }
};

/// out[k] for k in [0, n) of one output channel over its phase planes (see
/// depthwise_conv2d): bias + the sum over taps t of wc[t] * src[offs[t] + k], plus z[k]
/// when z is given, then the activation when act is given; a last partial vector is stored
/// lane by lane. Reads up to one vector past src + offs[t] + n. Every output vector is an
/// independent sum, four at a time, so the loop is bound by FMA and load throughput
/// rather than by one accumulator's latency. kTaps > 0: the tap count known at compile
/// time, the weights held in registers.
template <int kTaps>
HWY_INLINE void DwFlatImpl(const float* src, const int64_t* offs, const float* wc,
                           int64_t taps_rt, float bias, const float* z, const Activation* act,
                           float* out, int64_t n) {
  const DwTaps<kTaps> tp(wc, offs, taps_rt);
  const auto d = tp.d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const V vb = hn::Set(d, bias);
  const Activation none;
  const Activation& a = act ? *act : none;
  int64_t k = 0;
  for (; k + 4 * L <= n; k += 4 * L) {
    V a0, a1, a2, a3;
    tp.Sum4(src + k, vb, a0, a1, a2, a3);
    tp.Store4(a0, a1, a2, a3, z ? z + k : nullptr, a, out + k);
  }
  for (; k < n; k += L) {
    V a0 = tp.Sum1(src + k, vb);
    if (k + L <= n) {
      if (z) a0 = hn::Add(a0, hn::LoadU(d, z + k));
      hn::StoreU(ApplyAct(d, a0, a), d, out + k);
    } else {
      const auto m = hn::FirstN(d, static_cast<size_t>(n - k));
      if (z) a0 = hn::Add(a0, TailLoad(m, d, z + k));
      TailStore(ApplyAct(d, a0, a), m, d, out + k);
    }
  }
}

void DwFlat(const float* src, const int64_t* offs, const float* wc, int64_t taps, float bias,
            const float* z, const Activation* act, float* out, int64_t n) {
  if (taps == 9)
    DwFlatImpl<9>(src, offs, wc, taps, bias, z, act, out, n);
  else
    DwFlatImpl<0>(src, offs, wc, taps, bias, z, act, out, n);
}

/// Output rows [0, nrows) of one output channel (rows of at least a few vectors): row r
/// reads the phase planes at src + r * src_step + offs[t] + ox for tap t, whole vectors
/// (past the row's end into the next plane row or the buffer's slack). The sum starts at
/// bias, gets the residual row z (may be null) and the activation, and is stored once.
/// y and z rows are ow apart. A row stores whole vectors past ow, into the rows after it,
/// which are written later (Y never aliases Z or X), but never past the last row of the
/// call. kTaps > 0: the tap count known at compile time, the weights held in registers.
template <int kTaps>
HWY_INLINE void DwRowsImpl(const float* src, int64_t src_step, const int64_t* offs, const float* wc,
                           int64_t taps_rt, float bias, const float* z, const Activation& act,
                           float* y, int64_t ow, int64_t nrows) {
  const DwTaps<kTaps> tp(wc, offs, taps_rt);
  const auto d = tp.d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const V vb = hn::Set(d, bias);
  const int64_t whole = (ow + L - 1) / L * L;
  for (int64_t r = 0; r < nrows; ++r) {
    const float* sr = src + r * src_step;
    const float* zr = z ? z + r * ow : nullptr;
    float* yr = y + r * ow;
    // Whole vectors may be stored up to `end`: past ow, but within the call's rows.
    const int64_t end = std::min(whole, (nrows - r) * ow);
    int64_t ox = 0;
    for (; ox + 4 * L <= end; ox += 4 * L) {
      V a0, a1, a2, a3;
      tp.Sum4(sr + ox, vb, a0, a1, a2, a3);
      tp.Store4(a0, a1, a2, a3, zr ? zr + ox : nullptr, act, yr + ox);
    }
    for (; ox < ow; ox += L) {
      V a0 = tp.Sum1(sr + ox, vb);
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

/// y[r * ow + j] = src[r * pl + j] for rows r < nrows, j < ow (pl >= ow): whole vectors,
/// each row's last one running into the next row (rewritten after), the last row's tail
/// element by element. (Tails never go through a stack buffer here: a vector load of
/// floats just stored one by one stalls on store forwarding.)
void DwCompact(const float* src, int64_t pl, float* y, int64_t ow, int64_t nrows) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t r = 0; r < nrows; ++r) {
    const float* sr = src + r * pl;
    float* yr = y + r * ow;
    const int64_t room = r + 1 < nrows ? (nrows - r) * ow : ow;  // writable from yr
    int64_t j = 0;
    for (; j < ow && j + L <= room; j += L) hn::StoreU(hn::LoadU(d, sr + j), d, yr + j);
    for (; j < ow; ++j) yr[j] = sr[j];
  }
}

/// y[j] = act(y[j] + z[j]) for j < n (z may be null): the epilogue of rows computed
/// into a wider buffer.
void DwFinishRow(float* y, const float* z, int64_t n, const Activation& act) {
  EpilogueRow(y, z, n, 0.0f, act);
}

/// dst[q] = src[q] for q in [0, n): whole vectors, then element by element (rows of a
/// few vectors, where a library memcpy call costs more than the copy).
void DwCopy(const float* src, float* dst, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t q = 0;
  for (; q + L <= n; q += L) hn::StoreU(hn::LoadU(d, src + q), d, dst + q);
  for (; q < n; ++q) dst[q] = src[q];
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
HWY_EXPORT(DwFlat);
HWY_EXPORT(DwRows);
HWY_EXPORT(DwFinishRow);
HWY_EXPORT(DwCompact);
HWY_EXPORT(DwDeinterleave2);
HWY_EXPORT(DwCopy);

void depthwise_conv2d(const DepthwiseArgs& a, ThreadPool* pool) {
  const int64_t L = HWY_DYNAMIC_DISPATCH(DwLanes)();
  const auto flat_fn = HWY_DYNAMIC_DISPATCH(DwFlat);
  const auto rows_fn = HWY_DYNAMIC_DISPATCH(DwRows);
  const auto finish_fn = HWY_DYNAMIC_DISPATCH(DwFinishRow);
  const auto compact_fn = HWY_DYNAMIC_DISPATCH(DwCompact);
  const auto deint = HWY_DYNAMIC_DISPATCH(DwDeinterleave2);
  const auto copy_fn = HWY_DYNAMIC_DISPATCH(DwCopy);
  const int64_t ih = a.ih, iw = a.iw, oh = a.oh, ow = a.ow, kh = a.kh, kw = a.kw;
  const int64_t sh = a.sh, sw = a.sw, dh = a.dh, dw = a.dw, ph = a.ph, pw = a.pw;
  if (a.batch * a.channels * a.mult * oh * ow == 0) return;
  // A task's input rows are split into sh x sw phase planes: plane (fr, fc), row ri, column
  // q holds padded input row (oy0 + ri) * sh + fr, column q * sw + fc. Tap (i, j) of output
  // (oy, ox) then reads plane ((i dh) % sh, (j dw) % sw) at row oy - oy0 + (i dh) / sh,
  // column ox + (j dw) / sw: with pl columns per plane row, output k = (oy - oy0) * pl + ox
  // reads flat index k + offs[tap], so a whole block of output rows is one flat run of
  // vectors (columns [ow, pl) of each row are computed and dropped).
  const int64_t pl = ow + (kw - 1) * dw / sw;
  const int64_t extra = (kh - 1) * dh / sh;  // plane rows past the block's output rows
  const int64_t planes = a.batch * a.channels;
  const int64_t taps = kh * kw;
  const int64_t threads = pool ? pool->size() : 1;
  const double work = static_cast<double>(planes * a.mult) * static_cast<double>(oh * ow) *
                      static_cast<double>(taps);
  // Below about half a million multiply-adds (some tens of microseconds) waking the
  // workers costs about what it saves.
  const bool parallel = threads > 1 && work >= double(1 << 19);
  // Row blocks of about 4096 outputs keep a task's planes in L1/L2; more blocks when there
  // are too few planes for the threads.
  constexpr int64_t kBlockOutputs = 4096;
  int64_t rblocks = (oh + std::max<int64_t>(1, kBlockOutputs / pl) - 1) /
                    std::max<int64_t>(1, kBlockOutputs / pl);
  if (parallel && planes * rblocks < 4 * threads)
    rblocks = std::min(oh, (4 * threads + planes - 1) / planes);
  const int64_t rows_per = (oh + rblocks - 1) / rblocks;
  rblocks = (oh + rows_per - 1) / rows_per;
  const int64_t rows_p = rows_per + extra;  // rows of each phase plane
  const int64_t plane_floats = rows_p * pl;
  std::vector<int64_t> offs(static_cast<size_t>(taps));
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j)
      offs[static_cast<size_t>(i * kw + j)] =
          ((i * dh % sh) * sw + j * dw % sw) * plane_floats + (i * dh / sh) * pl + j * dw / sw;
  // Column phase f, index q holds input column q * sw + f - pw: inside the row for q in
  // [lo_f, hi_f).
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
  // Wide rows: each output row summed and stored straight to Y, whole vectors, several at a
  // time (DwRows). Narrower rows: one flat run of vectors over the block (DwFlat), straight
  // to Y when its rows are the planes' rows (1 x 1 taps), else through a buffer of pl-wide
  // rows.
  const bool wide = ow >= 4 * L, direct = !wide && pl == ow;
  // Slack for the reads of the dropped columns of the last plane row and the last vector.
  const int64_t buf_floats = sh * sw * plane_floats + pl + L;
  auto run = [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> buf, tmp;
    if (static_cast<int64_t>(buf.size()) < buf_floats) buf.resize(static_cast<size_t>(buf_floats));
    // The padding columns of every plane row are the same for all tasks: zeroed once here.
    std::fill(buf.begin(), buf.begin() + buf_floats, 0.0f);
    if (!wide && !direct && static_cast<int64_t>(tmp.size()) < rows_per * pl)
      tmp.resize(static_cast<size_t>(rows_per * pl));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t p = t / rblocks, oy0 = (t % rblocks) * rows_per,
                    oy1 = std::min(oh, oy0 + rows_per), nrows = oy1 - oy0;
      const float* xc = a.x + p * ih * iw;
      for (int64_t fr = 0; fr < sh; ++fr) {
        for (int64_t ri = 0; ri < nrows + extra; ++ri) {
          const int64_t iy = (oy0 + ri) * sh + fr - ph;
          float* prow = buf.data() + (fr * sw * rows_p + ri) * pl;  // column phase 0
          if (iy < 0 || iy >= ih) {
            for (int64_t f = 0; f < sw; ++f)
              std::fill(prow + f * plane_floats, prow + f * plane_floats + pl, 0.0f);
            continue;
          }
          // Columns outside [lo_f, hi_f) are zero from the fill above (nothing writes
          // them).
          const float* xr = xc + iy * iw;
          if (sw == 1) {
            const int64_t lo = lo_f[0], hi = hi_f[0];
            copy_fn(xr + lo - pw, prow + lo, hi - lo);
            continue;
          }
          if (sw == 2) deint(xr + 2 * q1 - pw, q2 - q1, prow + q1, prow + plane_floats + q1);
          for (int64_t f = 0; f < sw; ++f) {
            float* dst = prow + f * plane_floats;
            const int64_t lo = lo_f[static_cast<size_t>(f)], hi = hi_f[static_cast<size_t>(f)];
            const float* xs = xr + f - pw;
            for (int64_t q = lo; q < std::min(hi, q1); ++q) dst[q] = xs[q * sw];
            for (int64_t q = std::max(lo, q2); q < hi; ++q) dst[q] = xs[q * sw];
          }
        }
      }
      const int64_t n = p / a.channels, c = p % a.channels;
      for (int64_t k = 0; k < a.mult; ++k) {
        const int64_t m = c * a.mult + k, yo = (n * a.channels * a.mult + m) * oh * ow + oy0 * ow;
        const float* wc = a.w + m * taps;
        const float b = a.ep.bias ? a.ep.bias[m] : 0.0f;
        const float* z = a.ep.z ? a.ep.z + yo : nullptr;
        if (wide) {
          rows_fn(buf.data(), pl, offs.data(), wc, taps, b, z, a.ep.act, a.y + yo, ow, nrows);
          continue;
        }
        if (direct) {
          flat_fn(buf.data(), offs.data(), wc, taps, b, z, &a.ep.act, a.y + yo, nrows * ow);
          continue;
        }
        flat_fn(buf.data(), offs.data(), wc, taps, b, nullptr, z ? nullptr : &a.ep.act,
                tmp.data(), nrows * pl);
        compact_fn(tmp.data(), pl, a.y + yo, ow, nrows);
        if (z)
          for (int64_t r = 0; r < nrows; ++r) finish_fn(a.y + yo + r * ow, z + r * ow, ow, a.ep.act);
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
