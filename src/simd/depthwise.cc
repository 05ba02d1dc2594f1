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

#include "base/cancel.h"
#include "runtime/thread_pool.h"
#include "simd/depthwise.h"
#include "simd/transpose.h"

namespace onyx::simd {
/// The geometry of one channel-blocked call (see DwBlocked).
struct DwBlockGeom {
  int64_t C, ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw;
  int64_t iwp;      ///< padded input columns a row needs: (ow - 1) sw + (kw - 1) dw + 1
  int64_t cblocks;  ///< ceil(C / L)
  int64_t rblocks, rows_per;
};
}  // namespace onyx::simd
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
  template <class F>
  HWY_INLINE void Store4(V a0, V a1, V a2, V a3, const float* z, const F& act, float* out) const {
    const int64_t L = static_cast<int64_t>(hn::Lanes(d));
    if (z) {
      a0 = hn::Add(a0, hn::LoadU(d, z));
      a1 = hn::Add(a1, hn::LoadU(d, z + L));
      a2 = hn::Add(a2, hn::LoadU(d, z + 2 * L));
      a3 = hn::Add(a3, hn::LoadU(d, z + 3 * L));
    }
    hn::StoreU(act(d, a0), d, out);
    hn::StoreU(act(d, a1), d, out + L);
    hn::StoreU(act(d, a2), d, out + 2 * L);
    hn::StoreU(act(d, a3), d, out + 3 * L);
  }
};

/// out[k] for k in [0, n) of one output channel over its phase planes (see
/// depthwise_conv2d): bias + the sum over taps t of wc[t] * src[offs[t] + k], plus z[k]
/// when z is given, then the activation when act is given; a last partial vector is stored
/// lane by lane. Reads up to one vector past src + offs[t] + n. Every output vector is an
/// independent sum, four at a time, so the loop is bound by FMA and load throughput
/// rather than by one accumulator's latency. kTaps > 0: the tap count known at compile
/// time, the weights held in registers. Each variant (taps, activation) is a function of
/// its own, not inlined into the dispatcher: WebAssembly's JIT compiles functions as they
/// are first called and optimizes those that run hot, so a model pays only for its own
/// variants (DwRows with all of them inlined was a 52 KB function that V8 optimized for
/// 30-75 ms of CPU during the digit reader's cold start, for its first layer).
template <int kTaps, class F>
HWY_NOINLINE void DwFlatImpl(const float* src, const int64_t* offs, const float* wc,
                           int64_t taps_rt, float bias, const float* z, const F& a, float* out,
                           int64_t n) {
  const DwTaps<kTaps> tp(wc, offs, taps_rt);
  const auto d = tp.d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const V vb = hn::Set(d, bias);
  int64_t k = 0;
  CancelPoll poll;  // base/cancel.h: a hostile window can hold a million taps
  for (; k + 4 * L <= n; k += 4 * L) {
    poll(4 * L * taps_rt);
    V a0, a1, a2, a3;
    tp.Sum4(src + k, vb, a0, a1, a2, a3);
    tp.Store4(a0, a1, a2, a3, z ? z + k : nullptr, a, out + k);
  }
  for (; k < n; k += L) {
    V a0 = tp.Sum1(src + k, vb);
    if (k + L <= n) {
      if (z) a0 = hn::Add(a0, hn::LoadU(d, z + k));
      hn::StoreU(a(d, a0), d, out + k);
    } else {
      const auto m = hn::FirstN(d, static_cast<size_t>(n - k));
      if (z) a0 = hn::Add(a0, TailLoad(m, d, z + k));
      TailStore(a(d, a0), m, d, out + k);
    }
  }
}

void DwFlat(const float* src, const int64_t* offs, const float* wc, int64_t taps, float bias,
            const float* z, const Activation* act, float* out, int64_t n) {
  const Activation none;
  const Activation& a = act ? *act : none;
  if (taps == 9)
    WithAct(a, [&](const auto& f) { DwFlatImpl<9>(src, offs, wc, taps, bias, z, f, out, n); });
  else
    DwFlatImpl<0>(src, offs, wc, taps, bias, z, ActFn<kAnyAct>{a}, out, n);
}

/// Output rows [0, nrows) of one output channel (rows of at least a few vectors): row r
/// reads the phase planes at src + r * src_step + offs[t] + ox for tap t, whole vectors
/// (past the row's end into the next plane row or the buffer's slack). The sum starts at
/// bias, gets the residual row z (may be null) and the activation, and is stored once.
/// y and z rows are ow apart. A row stores whole vectors past ow, into the rows after it,
/// which are written later (Y never aliases Z or X), but never past the last row of the
/// call. kTaps > 0: the tap count known at compile time, the weights held in registers.
/// A function per variant, as DwFlatImpl.
template <int kTaps, class F>
HWY_NOINLINE void DwRowsImpl(const float* src, int64_t src_step, const int64_t* offs, const float* wc,
                           int64_t taps_rt, float bias, const float* z, const F& act, float* y,
                           int64_t ow, int64_t nrows) {
  const DwTaps<kTaps> tp(wc, offs, taps_rt);
  const auto d = tp.d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const V vb = hn::Set(d, bias);
  const int64_t whole = (ow + L - 1) / L * L;
  CancelPoll poll;
  for (int64_t r = 0; r < nrows; ++r) {
    poll(ow * taps_rt);
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
        hn::StoreU(act(d, a0), d, yr + ox);
      } else {
        HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)] = {};
        if (zr) std::copy(zr + ox, zr + ow, tmp);
        hn::Store(act(d, hn::Add(a0, hn::Load(d, tmp))), d, tmp);
        std::copy(tmp, tmp + (ow - ox), yr + ox);
      }
    }
  }
}

void DwRows(const float* src, int64_t src_step, const int64_t* offs, const float* wc, int64_t taps,
            float bias, const float* z, const Activation& act, float* y, int64_t ow,
            int64_t nrows) {
  if (taps == 9)
    WithAct(act, [&](const auto& f) {
      DwRowsImpl<9>(src, src_step, offs, wc, taps, bias, z, f, y, ow, nrows);
    });
  else
    DwRowsImpl<0>(src, src_step, offs, wc, taps, bias, z, ActFn<kAnyAct>{act}, y, ow, nrows);
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

/// y[j] = act(x[j] * w + b + z[j]) for j < n (z may be null): a plane of a 1x1 depthwise
/// convolution without strides or pads (a BatchNormalization rewritten as one), straight
/// from X to Y in one pass.
void DwScale(const float* x, int64_t n, float w, float b, const float* z, const Activation& act,
             float* y) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const auto vw = hn::Set(d, w), vb = hn::Set(d, b);
  int64_t j = 0;
  for (; j + 2 * L <= n; j += 2 * L) {
    auto v0 = hn::MulAdd(hn::LoadU(d, x + j), vw, vb);
    auto v1 = hn::MulAdd(hn::LoadU(d, x + j + L), vw, vb);
    if (z) {
      v0 = hn::Add(v0, hn::LoadU(d, z + j));
      v1 = hn::Add(v1, hn::LoadU(d, z + j + L));
    }
    hn::StoreU(ApplyAct(d, v0, act), d, y + j);
    hn::StoreU(ApplyAct(d, v1, act), d, y + j + L);
  }
  for (; j < n; j += L) {
    const auto m = hn::FirstN(d, static_cast<size_t>(std::min(L, n - j)));
    auto v = hn::MulAdd(TailLoad(m, d, x + j), vw, vb);
    if (z) v = hn::Add(v, TailLoad(m, d, z + j));
    TailStore(ApplyAct(d, v, act), m, d, y + j);
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


// ---- channel-blocked depthwise: one vector = the same pixel of L channels ------------
//
// For small planes and strided or dilated windows the per-plane kernel above spends more
// on per-row control and phase-plane copies than on its FMAs (MobileNet's 7x7 planes,
// the stride-2 layers). Here a task takes L channels at once: their input rows are
// transposed into [row][column][L] (zero-padded), every tap of every output is then one
// contiguous vector load and one FMA with that tap's L weights, whatever the stride or
// dilation, and each output row is transposed back into the L channel planes, where the
// residual and the activation are applied before the only store.

/// v[0, L) as the rows of an L x L matrix, transposed in place: lane j of the new v[i] is
/// lane i of the old v[j]. 4 x 4 transposes inside each 128-bit block, then (8 and 16
/// lanes) the blocks exchanged between vectors.
template <class D>
HWY_INLINE void TransposeSquare(D d, hn::Vec<D>* v) {
  constexpr size_t kL = hn::MaxLanes(D());
#if HWY_TARGET == HWY_SCALAR
  (void)d;
  (void)v;
  static_assert(kL == 1, "one lane");
#else
  if constexpr (kL == 1) {
    return;
  } else if constexpr (kL == 4 || kL == 8 || kL == 16) {
    using V = hn::Vec<D>;
    V t[kL];
    for (size_t g = 0; g < kL / 4; ++g) {
      const V a = v[4 * g], b = v[4 * g + 1], c = v[4 * g + 2], e = v[4 * g + 3];
      const V t0 = hn::InterleaveLower(d, a, c), t1 = hn::InterleaveUpper(d, a, c);
      const V t2 = hn::InterleaveLower(d, b, e), t3 = hn::InterleaveUpper(d, b, e);
      // Block k of t[4g + j]: lane j of block k of rows 4g .. 4g + 3.
      t[4 * g] = hn::InterleaveLower(d, t0, t2);
      t[4 * g + 1] = hn::InterleaveUpper(d, t0, t2);
      t[4 * g + 2] = hn::InterleaveLower(d, t1, t3);
      t[4 * g + 3] = hn::InterleaveUpper(d, t1, t3);
    }
    if constexpr (kL == 4) {
      for (size_t i = 0; i < 4; ++i) v[i] = t[i];
    } else if constexpr (kL == 8) {
      // Output row 4k + j: block k of t[j], then block k of t[4 + j].
      for (size_t j = 0; j < 4; ++j) {
        v[j] = hn::ConcatLowerLower(d, t[4 + j], t[j]);
        v[4 + j] = hn::ConcatUpperUpper(d, t[4 + j], t[j]);
      }
    } else {
      // Output row 4k + j: block k of t[j], t[4 + j], t[8 + j], t[12 + j].
      for (size_t j = 0; j < 4; ++j) {
        const V A = t[j], B = t[4 + j], C = t[8 + j], E = t[12 + j];
        const V P = hn::OddEvenBlocks(hn::SwapAdjacentBlocks(B), A);  // A0 B0 A2 B2
        const V Q = hn::OddEvenBlocks(B, hn::SwapAdjacentBlocks(A));  // A1 B1 A3 B3
        const V R = hn::OddEvenBlocks(hn::SwapAdjacentBlocks(E), C);  // C0 E0 C2 E2
        const V S = hn::OddEvenBlocks(E, hn::SwapAdjacentBlocks(C));  // C1 E1 C3 E3
        v[j] = hn::ConcatLowerLower(d, R, P);
        v[4 + j] = hn::ConcatLowerLower(d, S, Q);
        v[8 + j] = hn::ConcatUpperUpper(d, R, P);
        v[12 + j] = hn::ConcatUpperUpper(d, S, Q);
      }
    }
  } else {
    HWY_ALIGN float m[kL * kL];
    for (size_t i = 0; i < kL; ++i) hn::Store(v[i], d, m + i * kL);
    HWY_ALIGN float r[kL * kL];
    for (size_t i = 0; i < kL; ++i)
      for (size_t j = 0; j < kL; ++j) r[i * kL + j] = m[j * kL + i];
    for (size_t i = 0; i < kL; ++i) v[i] = hn::Load(d, r + i * kL);
  }
#endif
}

/// One output row of the channel-blocked kernel: obuf[ox][L] = bias + the taps over the
/// transposed input rows at `base` (row ky at + ky * dh * iwp * L), four pixels at a time.
/// kKH, kKW, kSW > 0: the window and the column stride known at compile time (dilation 1):
/// per window row, the 3 kSW + kKW input vectors the four pixels read are loaded once and
/// shared by their taps (a 5x5 window: 8 loads for 20 FMAs instead of 20), the weights
/// loaded where used (an array of them in registers had GCC copy 1.6 KB of them to the
/// stack per row: 11% of a 5x5 layer). Whole blocks of four pixels, the last one past ow
/// into obuf's slack, reading up to 3 kSW pixels' columns past the row (the caller's
/// slack). kKH = 0: any window and strides, one pixel at a time past the last whole block.
template <int kKH, int kKW, int kSW>
HWY_NOINLINE void DwPixels(const float* base, const DwBlockGeom& g, const float* w,
                         hn::Vec<hn::ScalableTag<float>> vb, float* obuf) {
  using D = hn::ScalableTag<float>;
  using V = hn::Vec<D>;
  const D d;
  constexpr int64_t L = static_cast<int64_t>(hn::MaxLanes(D()));
  if constexpr (kKH > 0) {
    const int64_t row_step = g.iwp * L;
    constexpr int kIn = 3 * kSW + kKW;  // input vectors one window row of 4 pixels reads
    for (int64_t ox = 0; ox < g.ow; ox += 4) {
      V a0 = vb, a1 = vb, a2 = vb, a3 = vb;
      for (int ky = 0; ky < kKH; ++ky) {
        const float* r = base + ky * row_step + ox * kSW * L;
        V in[kIn];
        for (int i = 0; i < kIn; ++i) in[i] = hn::LoadU(d, r + i * L);
        for (int kx = 0; kx < kKW; ++kx) {
          const V wv = hn::LoadU(d, w + (ky * kKW + kx) * L);
          a0 = hn::MulAdd(wv, in[kx], a0);
          a1 = hn::MulAdd(wv, in[kx + kSW], a1);
          a2 = hn::MulAdd(wv, in[kx + 2 * kSW], a2);
          a3 = hn::MulAdd(wv, in[kx + 3 * kSW], a3);
        }
      }
      hn::StoreU(a0, d, obuf + ox * L);
      hn::StoreU(a1, d, obuf + (ox + 1) * L);
      hn::StoreU(a2, d, obuf + (ox + 2) * L);
      hn::StoreU(a3, d, obuf + (ox + 3) * L);
    }
    return;
  }
  const int64_t kh = g.kh, kw = g.kw;
  const int64_t row_step = g.dh * g.iwp * L, tap_step = g.dw * L, sx = g.sw * L;
  int64_t ox = 0;
  for (; ox + 4 <= g.ow; ox += 4) {
    V a0 = vb, a1 = vb, a2 = vb, a3 = vb;
    for (int64_t ky = 0; ky < kh; ++ky) {
      const float* r = base + ky * row_step + ox * sx;
      for (int64_t kx = 0; kx < kw; ++kx) {
        const V wv = hn::LoadU(d, w + (ky * kw + kx) * L);
        const float* p = r + kx * tap_step;
        a0 = hn::MulAdd(wv, hn::LoadU(d, p), a0);
        a1 = hn::MulAdd(wv, hn::LoadU(d, p + sx), a1);
        a2 = hn::MulAdd(wv, hn::LoadU(d, p + 2 * sx), a2);
        a3 = hn::MulAdd(wv, hn::LoadU(d, p + 3 * sx), a3);
      }
    }
    hn::StoreU(a0, d, obuf + ox * L);
    hn::StoreU(a1, d, obuf + (ox + 1) * L);
    hn::StoreU(a2, d, obuf + (ox + 2) * L);
    hn::StoreU(a3, d, obuf + (ox + 3) * L);
  }
  for (; ox < g.ow; ++ox) {
    V a0 = vb, a1 = hn::Zero(d);
    for (int64_t ky = 0; ky < kh; ++ky) {
      const float* r = base + ky * row_step + ox * sx;
      int64_t kx = 0;
      for (; kx + 2 <= kw; kx += 2) {
        a0 = hn::MulAdd(hn::LoadU(d, w + (ky * kw + kx) * L), hn::LoadU(d, r + kx * tap_step), a0);
        a1 = hn::MulAdd(hn::LoadU(d, w + (ky * kw + kx + 1) * L),
                        hn::LoadU(d, r + (kx + 1) * tap_step), a1);
      }
      if (kx < kw)
        a0 = hn::MulAdd(hn::LoadU(d, w + (ky * kw + kx) * L), hn::LoadU(d, r + kx * tap_step), a0);
    }
    hn::StoreU(hn::Add(a0, a1), d, obuf + ox * L);
  }
}

/// The last step of one output row of DwBlocked: obuf's [ow rounded up to L][L] sums
/// transposed back into the nc channel planes (plane_out apart) at y, with the residual z
/// (may be null) and the activation. A function per activation (noinline), not inlined
/// into DwBlocked: a JIT (WebAssembly) then compiles only the variants a model uses.
template <class F>
HWY_NOINLINE void DwBlockedRowOut(const float* obuf, int64_t ow, int64_t nc, int64_t plane_out,
                                  const float* z, float* y, const F& act) {
  using D = hn::ScalableTag<float>;
  using V = hn::Vec<D>;
  const D d;
  constexpr int64_t L = static_cast<int64_t>(hn::MaxLanes(D()));
  V v[L];
  for (int64_t x0 = 0; x0 < ow; x0 += L) {
    const int64_t nx = std::min(L, ow - x0);
    for (int64_t j = 0; j < L; ++j) v[j] = hn::LoadU(d, obuf + (x0 + j) * L);
    TransposeSquare(d, v);
    const auto m = hn::FirstN(d, static_cast<size_t>(nx));
    for (int64_t c = 0; c < L; ++c) {
      if (c >= nc) break;
      float* yp = y + c * plane_out + x0;
      const float* zp = z ? z + c * plane_out + x0 : nullptr;
      V o = v[c];
      if (nx == L) {
        if (zp) o = hn::Add(o, hn::LoadU(d, zp));
        hn::StoreU(act(d, o), d, yp);
      } else {
        if (zp) o = hn::Add(o, TailLoad(m, d, zp));
        TailStore(act(d, o), m, d, yp);
      }
    }
  }
}

/// Tasks [t0, t1) of (image, channel block, block of output rows): wt [cblocks][taps][L]
/// and bt [cblocks][L] the weights and biases by channel block (lanes past C zero); ibuf
/// room for the task's transposed input rows, obuf for one output row ([ow rounded up to
/// L][L]).
void DwBlocked(const DepthwiseArgs& a, const DwBlockGeom& g, const float* wt, const float* bt,
               int64_t t0, int64_t t1, float* ibuf, float* obuf) {
  using D = hn::ScalableTag<float>;
  using V = hn::Vec<D>;
  const D d;
  // Fixed-width targets only (x86, WebAssembly): the loops over the L vectors of a
  // transpose have compile-time bounds, so they unroll and the vectors stay in registers.
  static_assert(!HWY_HAVE_SCALABLE, "DwBlocked needs a fixed vector width");
  constexpr int64_t L = static_cast<int64_t>(hn::MaxLanes(D()));
  const int64_t taps = g.kh * g.kw, iwp = g.iwp, plane_in = g.ih * g.iw, plane_out = g.oh * g.ow;
  const int64_t x_end = std::max<int64_t>(0, std::min(g.iw, iwp - g.pw));  // input columns used
  V v[L];
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t rb = t % g.rblocks, nc_ = t / g.rblocks, cb = nc_ % g.cblocks, n = nc_ / g.cblocks;
    const int64_t c0 = cb * L, nc = std::min(L, g.C - c0);
    const int64_t oy0 = rb * g.rows_per, oy1 = std::min(g.oh, oy0 + g.rows_per);
    const int64_t rows_in = (oy1 - 1 - oy0) * g.sh + (g.kh - 1) * g.dh + 1;
    const int64_t iy0 = oy0 * g.sh - g.ph;
    const float* xc = a.x + (n * g.C + c0) * plane_in;
    // 1. The input rows, transposed: ibuf[ri][q][l] = x[c0 + l][iy0 + ri][q - pw].
    for (int64_t ri = 0; ri < rows_in; ++ri) {
      float* row = ibuf + ri * iwp * L;
      const int64_t iy = iy0 + ri;
      if (iy < 0 || iy >= g.ih) {
        std::fill(row, row + iwp * L, 0.0f);
        continue;
      }
      std::fill(row, row + std::min(g.pw, iwp) * L, 0.0f);
      if (g.pw + x_end < iwp) std::fill(row + (g.pw + x_end) * L, row + iwp * L, 0.0f);
      const float* xr = xc + iy * g.iw;
      for (int64_t x0 = 0; x0 < x_end; x0 += L) {
        const int64_t nx = std::min(L, x_end - x0);
        if (nx == L && nc == L) {
          for (int64_t c = 0; c < L; ++c) v[c] = hn::LoadU(d, xr + c * plane_in + x0);
        } else {
          const auto m = hn::FirstN(d, static_cast<size_t>(nx));
          for (int64_t c = 0; c < L; ++c)
            v[c] = c < nc ? TailLoad(m, d, xr + c * plane_in + x0) : hn::Zero(d);
        }
        TransposeSquare(d, v);
        float* dst = row + (g.pw + x0) * L;
        // (Compile-time bounds with a test, not `j < nx`: a runtime trip count has GCC
        // spill the vectors and memcpy them.)
        for (int64_t j = 0; j < L; ++j)
          if (j < nx) hn::StoreU(v[j], d, dst + j * L);
      }
    }
    // 2. Each output row: the taps summed per pixel (four pixels at a time), then
    // transposed back into the channel planes with the residual and the activation.
    const float* w = wt + cb * taps * L;
    const V vb = hn::LoadU(d, bt + cb * L);
    for (int64_t oy = oy0; oy < oy1; ++oy) {
      poll_cancel();
      const float* base = ibuf + (oy - oy0) * g.sh * iwp * L;
      const bool unit = g.dh == 1 && g.dw == 1;
      if (unit && g.kh == 3 && g.kw == 3 && g.sw == 1)
        DwPixels<3, 3, 1>(base, g, w, vb, obuf);
      else if (unit && g.kh == 3 && g.kw == 3 && g.sw == 2)
        DwPixels<3, 3, 2>(base, g, w, vb, obuf);
#if !defined(__EMSCRIPTEN__)  // (the WebAssembly binary's size is a product metric)
      else if (unit && g.kh == 5 && g.kw == 5 && g.sw == 1)
        DwPixels<5, 5, 1>(base, g, w, vb, obuf);
      else if (unit && g.kh == 5 && g.kw == 5 && g.sw == 2)
        DwPixels<5, 5, 2>(base, g, w, vb, obuf);
#endif
      else
        DwPixels<0, 0, 0>(base, g, w, vb, obuf);
      const int64_t yo = (n * g.C + c0) * plane_out + oy * g.ow;
      WithAct(a.ep.act, [&](const auto& act) {
        DwBlockedRowOut(obuf, g.ow, nc, plane_out, a.ep.z ? a.ep.z + yo : nullptr, a.y + yo, act);
      });
    }
  }
}

/// One output row of the channels-last kernel, every channel: rows[ky] points at input row
/// oy sh - ph + ky dh (a row of zeros where that is outside), y and z at output row oy.
/// Pixels [lo, hi) have every tap inside the row and go four at a time, channel block by
/// channel block, each window row's input vectors loaded once for the four (kK, kS > 0: a
/// kK x kK window at stride kS, dilation 1), so the row is read in memory order and a
/// block of pixels stays in L1 across its channels; the other pixels, and a last partial
/// block of channels, test each tap. Each output vector is finished (bias, residual,
/// activation) in registers before its only store.
template <int kK, int kS>
HWY_NOINLINE void DwNhwcRow(const float* const* rows, const DwBlockGeom& g, const float* wt, const float* bt,
                          const Activation& act, const float* z, float* y, int64_t lo, int64_t hi) {
  using D = hn::ScalableTag<float>;
  using V = hn::Vec<D>;
  const D d;
  constexpr int64_t L = static_cast<int64_t>(hn::MaxLanes(D()));
  const int64_t C = g.C, taps = g.kh * g.kw, full = C / L, rem = C - full * L;
  const auto tail = hn::FirstN(d, static_cast<size_t>(rem));
  auto finish = [&](V acc, int64_t off, bool whole) {
    if (whole) {
      if (z) acc = hn::Add(acc, hn::LoadU(d, z + off));
      hn::StoreU(ApplyAct(d, acc, act), d, y + off);
    } else {
      if (z) acc = hn::Add(acc, TailLoad(tail, d, z + off));
      TailStore(ApplyAct(d, acc, act), tail, d, y + off);
    }
  };
  // Any pixel, every channel block: the window's columns clamped to the row once (rows
  // outside read zeros), four channel blocks at a time as independent sums.
  auto one = [&](int64_t ox) {
    const int64_t ix0 = ox * g.sw - g.pw;
    const int64_t kx0 = ix0 >= 0 ? 0 : (-ix0 + g.dw - 1) / g.dw;
    const int64_t kx1 = std::min(g.kw, ix0 < g.iw ? (g.iw - ix0 + g.dw - 1) / g.dw : int64_t(0));
    int64_t cb = 0;
    for (; cb + 4 <= full; cb += 4) {
      const int64_t c0 = cb * L;
      V a0 = hn::LoadU(d, bt + c0), a1 = hn::LoadU(d, bt + c0 + L), a2 = hn::LoadU(d, bt + c0 + 2 * L),
        a3 = hn::LoadU(d, bt + c0 + 3 * L);
      const float* w = wt + cb * taps * L;
      const int64_t ws = taps * L;  // between channel blocks
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        const float* r = rows[ky] + c0;
        for (int64_t kx = kx0; kx < kx1; ++kx) {
          const float* p = r + (ix0 + kx * g.dw) * C;
          const float* wk = w + (ky * g.kw + kx) * L;
          a0 = hn::MulAdd(hn::LoadU(d, wk), hn::LoadU(d, p), a0);
          a1 = hn::MulAdd(hn::LoadU(d, wk + ws), hn::LoadU(d, p + L), a1);
          a2 = hn::MulAdd(hn::LoadU(d, wk + 2 * ws), hn::LoadU(d, p + 2 * L), a2);
          a3 = hn::MulAdd(hn::LoadU(d, wk + 3 * ws), hn::LoadU(d, p + 3 * L), a3);
        }
      }
      finish(a0, ox * C + c0, true);
      finish(a1, ox * C + c0 + L, true);
      finish(a2, ox * C + c0 + 2 * L, true);
      finish(a3, ox * C + c0 + 3 * L, true);
    }
    for (; cb < g.cblocks; ++cb) {
      const bool whole = cb < full;
      const int64_t c0 = cb * L;
      const float* w = wt + cb * taps * L;
      V a0 = hn::LoadU(d, bt + c0);
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        const float* r = rows[ky] + c0;
        for (int64_t kx = kx0; kx < kx1; ++kx) {
          const float* p = r + (ix0 + kx * g.dw) * C;
          const V in = whole ? hn::LoadU(d, p) : TailLoad(tail, d, p);
          a0 = hn::MulAdd(hn::LoadU(d, w + (ky * g.kw + kx) * L), in, a0);
        }
      }
      finish(a0, ox * C + c0, whole);
    }
  };
  int64_t ox = 0;
  for (; ox < std::min(lo, g.ow); ++ox) one(ox);
  if constexpr (kK > 0) {
    constexpr int kIn = 3 * kS + kK;  // input pixels one window row of 4 outputs reads
    for (; ox + 4 <= hi; ox += 4) {
      const int64_t ix0 = ox * kS - g.pw;
      for (int64_t cb = 0; cb < full; ++cb) {
        const int64_t c0 = cb * L;
        const float* w = wt + cb * taps * L;
        const V vb = hn::LoadU(d, bt + c0);
        V a0 = vb, a1 = vb, a2 = vb, a3 = vb;
        for (int ky = 0; ky < kK; ++ky) {
          const float* r = rows[ky] + ix0 * C + c0;
          V in[kIn];
          for (int i = 0; i < kIn; ++i) in[i] = hn::LoadU(d, r + i * C);
          for (int kx = 0; kx < kK; ++kx) {
            const V wv = hn::LoadU(d, w + (ky * kK + kx) * L);
            a0 = hn::MulAdd(wv, in[kx], a0);
            a1 = hn::MulAdd(wv, in[kx + kS], a1);
            a2 = hn::MulAdd(wv, in[kx + 2 * kS], a2);
            a3 = hn::MulAdd(wv, in[kx + 3 * kS], a3);
          }
        }
        finish(a0, ox * C + c0, true);
        finish(a1, (ox + 1) * C + c0, true);
        finish(a2, (ox + 2) * C + c0, true);
        finish(a3, (ox + 3) * C + c0, true);
      }
      if (rem) {  // the partial block of channels of these four pixels
        const int64_t c0 = full * L;
        const float* w = wt + full * taps * L;
        for (int64_t p = 0; p < 4; ++p) {
          V a = hn::LoadU(d, bt + c0);
          for (int ky = 0; ky < kK; ++ky) {
            const float* r = rows[ky] + (ix0 + p * kS) * C + c0;
            for (int kx = 0; kx < kK; ++kx)
              a = hn::MulAdd(hn::LoadU(d, w + (ky * kK + kx) * L), TailLoad(tail, d, r + kx * C), a);
          }
          finish(a, (ox + p) * C + c0, false);
        }
      }
    }
  }
  for (; ox < g.ow; ++ox) one(ox);
}

/// Channels last (DepthwiseArgs::nhwc): tasks [t0, t1) of (image, block of output rows),
/// reading X in place (pixel stride C) through DwNhwcRow; rows above or below the image
/// read `zeros` (iw * C + L floats). wt, bt: W and the biases by channel block
/// (depthwise_pack_blocked's layout).
void DwBlockedNhwc(const DepthwiseArgs& a, const DwBlockGeom& g, const float* wt, const float* bt,
                   int64_t t0, int64_t t1, const float* zeros) {
  const int64_t C = g.C;
  // Output columns whose every tap is inside the row: ox sw - pw >= 0 and
  // ox sw - pw + (kw - 1) dw < iw.
  const int64_t lo = std::min(g.ow, (g.pw + g.sw - 1) / g.sw);
  const int64_t span = g.iw + g.pw - (g.kw - 1) * g.dw;  // ox sw < span
  const int64_t hi = std::max(lo, std::min(g.ow, span > 0 ? (span + g.sw - 1) / g.sw : int64_t(0)));
  const bool unit = g.dh == 1 && g.dw == 1 && g.kh == g.kw;
  const float* rows[64];
  std::vector<const float*> many;
  const float** rp = g.kh <= 64 ? rows : (many.resize(static_cast<size_t>(g.kh)), many.data());
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t rb = t % g.rblocks, n = t / g.rblocks;
    const int64_t oy0 = rb * g.rows_per, oy1 = std::min(g.oh, oy0 + g.rows_per);
    for (int64_t oy = oy0; oy < oy1; ++oy) {
      poll_cancel();
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        const int64_t iy = oy * g.sh - g.ph + ky * g.dh;
        rp[ky] = iy < 0 || iy >= g.ih ? zeros : a.x + (n * g.ih + iy) * g.iw * C;
      }
      const int64_t yo = (n * g.oh + oy) * g.ow * C;
      const float* z = a.ep.z ? a.ep.z + yo : nullptr;
      float* y = a.y + yo;
      if (unit && g.kh == 3 && g.sw == 1)
        DwNhwcRow<3, 1>(rp, g, wt, bt, a.ep.act, z, y, lo, hi);
      else if (unit && g.kh == 3 && g.sw == 2)
        DwNhwcRow<3, 2>(rp, g, wt, bt, a.ep.act, z, y, lo, hi);
#if !defined(__EMSCRIPTEN__)
      else if (unit && g.kh == 5 && g.sw == 1)
        DwNhwcRow<5, 1>(rp, g, wt, bt, a.ep.act, z, y, lo, hi);
      else if (unit && g.kh == 5 && g.sw == 2)
        DwNhwcRow<5, 2>(rp, g, wt, bt, a.ep.act, z, y, lo, hi);
#endif
      else
        DwNhwcRow<0, 0>(rp, g, wt, bt, a.ep.act, z, y, g.ow, g.ow);
    }
  }
}

/// y[c * ldy + r] = x[r * ldx + c] for rows [r0, r1) and columns [0, S) of x
/// (simd/transpose.h): L x L blocks through TransposeSquare, the edges scalar.
void Transpose2D(const float* x, int64_t ldx, int64_t S, float* y, int64_t ldy, int64_t r0,
                 int64_t r1) {
  using D = hn::ScalableTag<float>;
  using V = hn::Vec<D>;
  const D d;
  constexpr int64_t L = static_cast<int64_t>(hn::MaxLanes(D()));
  V v[L];
  int64_t r = r0;
  for (; r + L <= r1; r += L) {
    int64_t c = 0;
    for (; c + L <= S; c += L) {
      for (int64_t i = 0; i < L; ++i) v[i] = hn::LoadU(d, x + (r + i) * ldx + c);
      TransposeSquare(d, v);
      for (int64_t i = 0; i < L; ++i) hn::StoreU(v[i], d, y + (c + i) * ldy + r);
    }
    for (; c < S; ++c)
      for (int64_t i = 0; i < L; ++i) y[c * ldy + r + i] = x[(r + i) * ldx + c];
  }
  for (; r < r1; ++r)
    for (int64_t c = 0; c < S; ++c) y[c * ldy + r] = x[r * ldx + c];
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
HWY_EXPORT(DwScale);
HWY_EXPORT(DwBlocked);
HWY_EXPORT(DwBlockedNhwc);
HWY_EXPORT(Transpose2D);

void transpose_2d(const float* x, int64_t batch, int64_t R, int64_t S, float* y, ThreadPool* pool) {
  if (batch * R * S == 0) return;
  const auto fn = HWY_DYNAMIC_DISPATCH(Transpose2D);
  const int64_t L = HWY_DYNAMIC_DISPATCH(DwLanes)();
  // Units of L rows of one image; threads from 64K floats.
  const int64_t blocks = (R + L - 1) / L, units = batch * blocks;
  auto run = [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t b = u / blocks, r0 = (u % blocks) * L;
      fn(x + b * R * S, S, S, y + b * R * S, R, r0, std::min(R, r0 + L));
    }
  };
  if (pool && pool->size() > 1 && units > 1 && batch * R * S >= (int64_t(1) << 16))
    pool->parallel_for(units, run);
  else
    run(0, units);
}

void transpose_block(const float* x, int64_t ldx, int64_t rows, int64_t cols, float* y, int64_t ldy) {
  if (rows > 0 && cols > 0) HWY_DYNAMIC_DISPATCH(Transpose2D)(x, ldx, cols, y, ldy, 0, rows);
}

/// Floats of the channel-blocked kernel's input buffer for one output row (its least):
/// the padded columns a row spans times the window's rows times L, in double (the dims of
/// a hostile file may be near 2^63).
double blocked_scratch(const DepthwiseArgs& a, int64_t L) {
  const double iwp = double(a.ow - 1) * double(a.sw) + double(a.kw - 1) * double(a.dw) + 1.0;
  const double rows = double(a.kh - 1) * double(a.dh) + 1.0;
  return iwp * rows * double(L);
}

/// Whether the channel-blocked kernel (DwBlocked) takes this convolution: one output channel
/// per input channel, at least a vector of channels, and planes or windows where the
/// per-plane kernel's row overheads and phase-plane copies cost more than the transposes:
/// rows under four vectors (and 48 floats), or strides or dilations past 1.
bool blocked_suits(const DepthwiseArgs& a, int64_t L) {
  if (a.mult != 1 || a.kernel == DwKernel::kPlanes) return false;
  // Its buffer grows with the dilated window over the padding, L times the per-plane
  // kernel's rows (which the caller sized): a 5x5 image of 16 channels with a dilation of
  // 3e5 over as much padding would have asked for 115 MB. Past 4M floats, the planes.
  if (blocked_scratch(a, L) > double(1 << 22)) return false;
  if (a.kernel == DwKernel::kBlocked) return true;
  // A single tap (a BatchNormalization as a 1x1 depthwise Conv) is one FMA per output:
  // the transposes would cost several times that (0.57 against 0.16 ms on 256x56x56).
  if (a.channels < L || a.kh * a.kw == 1) return false;
  // (Rows of 48 floats and up go to the planes whatever the vector: with 16 lanes a
  // 56-wide row, 3.5 vectors, ran 7-9% faster there: 144 channels 3x3 at 56x56 0.27 ->
  // 0.25 ms; 28-wide rows stay blocked, 10-40% faster than the planes.)
  return a.ow < std::min<int64_t>(4 * L, 48) || a.sh > 1 || a.sw > 1 || a.dh > 1 || a.dw > 1;
}

/// out = w [channels][taps] as [ceil(channels / L)][taps][L], lanes past channels zero.
void pack_blocked(const float* w, int64_t channels, int64_t taps, int64_t L,
                  std::vector<float>& out) {
  const int64_t cblocks = (channels + L - 1) / L;
  out.assign(static_cast<size_t>(cblocks * taps * L), 0.0f);
  for (int64_t cb = 0; cb < cblocks; ++cb)
    for (int64_t l = 0; l < L && cb * L + l < channels; ++l) {
      const float* wc = w + (cb * L + l) * taps;
      float* o = out.data() + cb * taps * L + l;
      for (int64_t t = 0; t < taps; ++t) o[t * L] = wc[t];
    }
}

std::vector<float> depthwise_pack_blocked(const float* w, int64_t channels, int64_t taps) {
  std::vector<float> out;
  pack_blocked(w, channels, taps, HWY_DYNAMIC_DISPATCH(DwLanes)(), out);
  return out;
}

void depthwise_blocked(const DepthwiseArgs& a, int64_t L, ThreadPool* pool) {
  DwBlockGeom g{a.channels, a.ih, a.iw, a.oh, a.ow, a.kh, a.kw, a.sh, a.sw, a.dh, a.dw, a.ph, a.pw,
                0, 0, 0, 0};
  g.iwp = (a.ow - 1) * a.sw + (a.kw - 1) * a.dw + 1;
  g.cblocks = (a.channels + L - 1) / L;
  const int64_t taps = a.kh * a.kw;
  // Output rows per task: the transposed input rows within 64 KiB (L1/L2), at least one.
  constexpr int64_t kInFloats = 16 << 10;
  const int64_t fit_rows = kInFloats / std::max<int64_t>(1, g.iwp * L);
  g.rows_per = std::clamp((fit_rows - (a.kh - 1) * a.dh - 1) / a.sh + 1, int64_t(1), a.oh);
  g.rblocks = (a.oh + g.rows_per - 1) / g.rows_per;
  const int64_t threads = pool ? pool->size() : 1;
  const double work = static_cast<double>(a.batch * a.channels) * static_cast<double>(a.oh * a.ow) *
                      static_cast<double>(taps);
  // A tap here costs more than the per-plane kernel's (the transposes): threads pay from
  // about 64K taps (MobileNetV2's 960-channel 7x7 depthwise, 423K taps, ran on one).
  const bool parallel = threads > 1 && work >= double(1 << 16);
  // Weights (unless prepacked) and biases by channel block, lanes past the last channel zero.
  thread_local std::vector<float> wt, bt;
  if (!a.w_blocked) pack_blocked(a.w, a.channels, taps, L, wt);
  bt.assign(static_cast<size_t>(g.cblocks * L), 0.0f);
  if (a.ep.bias) std::copy(a.ep.bias, a.ep.bias + a.channels, bt.begin());
  const float* wp = a.w_blocked ? a.w_blocked : wt.data();
  const float* bp = bt.data();
  if (a.nhwc) {
    // Tasks of (image, block of output rows) over every channel block, each reading about
    // 64K floats of input rows (L2), at least one output row.
    const int64_t row_floats = std::max<int64_t>(1, a.iw * a.channels);
    g.rows_per = std::clamp((kInFloats * 4 / row_floats - (a.kh - 1) * a.dh - 1) / a.sh + 1, int64_t(1), a.oh);
    g.rblocks = (a.oh + g.rows_per - 1) / g.rows_per;
    if (parallel && a.batch * g.rblocks < 4 * threads) {
      g.rblocks = std::min(a.oh, (4 * threads + a.batch - 1) / a.batch);
      g.rows_per = (a.oh + g.rblocks - 1) / g.rblocks;
      g.rblocks = (a.oh + g.rows_per - 1) / g.rows_per;
    }
    thread_local std::vector<float> zeros;
    // (+ L: a tail block's row of zeros is read from channel c0 on.)
    const size_t zero_floats = static_cast<size_t>(a.iw * a.channels + L);
    if (zeros.size() < zero_floats) zeros.assign(zero_floats, 0.0f);
    const auto fn = HWY_DYNAMIC_DISPATCH(DwBlockedNhwc);
    const float* zp = zeros.data();
    auto run = [&](int64_t t0, int64_t t1) { fn(a, g, wp, bp, t0, t1, zp); };
    const int64_t tasks = a.batch * g.rblocks;
    if (parallel && tasks > 1)
      pool->parallel_for(tasks, run);
    else
      run(0, tasks);
    return;
  }
  if (parallel && a.batch * g.cblocks * g.rblocks < 4 * threads) {
    g.rblocks = std::min(a.oh, (4 * threads + a.batch * g.cblocks - 1) / (a.batch * g.cblocks));
    g.rows_per = (a.oh + g.rblocks - 1) / g.rblocks;
    g.rblocks = (a.oh + g.rows_per - 1) / g.rows_per;
  }
  const int64_t rows_in = (g.rows_per - 1) * a.sh + (a.kh - 1) * a.dh + 1;
  // (+ slack: DwPixels' last block of four pixels reads up to 3 sw pixels past a row.)
  const size_t ibuf_floats = static_cast<size_t>(rows_in * g.iwp * L + 8 * L);
  const size_t obuf_floats = static_cast<size_t>((a.ow + L - 1) / L * L * L);
  const auto fn = HWY_DYNAMIC_DISPATCH(DwBlocked);
  auto run = [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> ibuf, obuf;
    if (ibuf.size() < ibuf_floats) ibuf.resize(ibuf_floats);
    if (obuf.size() < obuf_floats) obuf.assign(obuf_floats, 0.0f);
    fn(a, g, wp, bp, t0, t1, ibuf.data(), obuf.data());
  };
  const int64_t tasks = a.batch * g.cblocks * g.rblocks;
  if (parallel && tasks > 1)
    pool->parallel_for(tasks, run);
  else
    run(0, tasks);
}

/// One tap without stride or pad: DwScale's plane-by-plane pass from X.
bool one_tap_in_place(const DepthwiseArgs& a) {
  return a.kh == 1 && a.kw == 1 && a.sh == 1 && a.sw == 1 && a.ph == 0 && a.pw == 0 && a.oh == a.ih &&
         a.ow == a.iw;
}

bool depthwise_nhwc_suits(const DepthwiseArgs& a) {
  // (Rows above or below the image read a row of zeros: iw * channels floats.)
  return a.mult == 1 && double(a.iw) * double(a.channels) <= double(1 << 22);
}

bool depthwise_uses_blocked(const DepthwiseArgs& a) {
  return !one_tap_in_place(a) && blocked_suits(a, HWY_DYNAMIC_DISPATCH(DwLanes)());
}

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
  if (a.nhwc) {  // (the caller checked depthwise_nhwc_suits)
    depthwise_blocked(a, L, pool);
    return;
  }
  if (one_tap_in_place(a)) {
    // One tap, no stride or pad: y = act(x * w + b + z) per plane, X read in place.
    const auto scale_fn = HWY_DYNAMIC_DISPATCH(DwScale);
    const int64_t maps = a.batch * a.channels * a.mult, plane = oh * ow;
    auto run = [&](int64_t q0, int64_t q1) {
      for (int64_t q = q0; q < q1; ++q) {
        const int64_t m = q % (a.channels * a.mult), n = q / (a.channels * a.mult);
        const float* xp = a.x + (n * a.channels + m / a.mult) * plane;
        scale_fn(xp, plane, a.w[m], a.ep.bias ? a.ep.bias[m] : 0.0f,
                 a.ep.z ? a.ep.z + q * plane : nullptr, a.ep.act, a.y + q * plane);
      }
    };
    const int64_t threads = pool ? pool->size() : 1;
    if (threads > 1 && maps > 1 && maps * plane >= (int64_t(1) << 17))
      pool->parallel_for(maps, run);
    else
      run(0, maps);
    return;
  }
  if (blocked_suits(a, L)) {
    depthwise_blocked(a, L, pool);
    return;
  }
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
