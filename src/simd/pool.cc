// Pooling rows (see pool.h), compiled once per SIMD target through Highway's
// foreach_target.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/pool.cc"
#if defined(__EMSCRIPTEN__) && !defined(HWY_COMPILE_ONLY_STATIC)
#define HWY_COMPILE_ONLY_STATIC 1
#endif
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include "simd/math-inl.h"
#include "simd/tail-inl.h"
// clang-format on

#include "simd/pool.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/cancel.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

/// A fold of window taps: the largest (NaN when any tap is NaN) or the sum. Max folds
/// with a plain Max and notes NaNs in a mask on the side, applied once at the end: a
/// NaN-propagating max per tap (compare, mask or, blend) made the fold's dependency chain
/// three times longer, and the pools ran at a third of onnxruntime's speed.
template <bool kMax>
struct TapFold {
  VF acc;
  hn::Mask<DF> nan;
  // (An explicit constructor: an implicit one lacks the target's attributes.)
  HWY_INLINE TapFold() : acc(kMax ? hn::Set(DF(), -HUGE_VALF) : hn::Zero(DF())), nan(hn::FirstN(DF(), 0)) {}
  HWY_INLINE void add(VF v) {
    if constexpr (kMax) {
      acc = hn::Max(acc, v);
      nan = hn::Or(nan, hn::IsNaN(v));
    } else {
      acc = hn::Add(acc, v);
    }
  }
  HWY_INLINE VF result() const {
    if constexpr (kMax) return hn::IfThenElse(nan, hn::Set(DF(), NAN), acc);
    return acc;
  }
};

/// TapFold without the NaN mask: exact where no tap is NaN (pool_plane_rows_first).
template <bool kMax>
struct PlainFold {
  VF acc;
  HWY_INLINE PlainFold() : acc(kMax ? hn::Set(DF(), -HUGE_VALF) : hn::Zero(DF())) {}
  HWY_INLINE void add(VF v) { acc = kMax ? hn::Max(acc, v) : hn::Add(acc, v); }
  HWY_INLINE VF result() const { return acc; }
};

/// Output row oy's window rows inside the input: iy = base + t * dh for t in [t0, t1).
HWY_INLINE void window_rows(const PoolGeom& g, int64_t oy, int64_t& base, int64_t& t0,
                            int64_t& t1) {
  base = oy * g.sh - g.ph;
  t0 = 0;
  t1 = g.kh;
  while (t0 < t1 && base + t0 * g.dh < 0) ++t0;
  while (t1 > t0 && base + (t1 - 1) * g.dh >= g.ih) --t1;
}

/// One vector of horizontal window results: lane j reduces (max, NaN-propagating unless
/// Fold is PlainFold, or sum) base[j * kStride + k * dw] over k < kw.
template <bool kMax, int64_t kStride, typename Fold = TapFold<kMax>>
HWY_INLINE VF window_vector(const float* base, int64_t kw, int64_t dw) {
  const DF d;
  Fold fold;
  for (int64_t k = 0; k < kw; ++k) {
    const float* p = base + k * dw;
    VF v;
#if HWY_TARGET == HWY_SCALAR
    v = hn::LoadU(d, p);  // one lane: nothing to deinterleave
#else
    if constexpr (kStride == 1)
      v = hn::LoadU(d, p);
    else
      v = hn::ConcatEven(d, hn::LoadU(d, p + static_cast<int64_t>(hn::Lanes(d))), hn::LoadU(d, p));
#endif
    fold.add(v);
  }
  return fold.result();
}

/// Outputs [o0, o1), every tap of which is inside the row, a vector of outputs at a time;
/// a last partial vector is done as the whole vector ending at o1 (recomputing some
/// outputs) when the range holds one. Returns where it stopped.
template <bool kMax, int64_t kStride>
HWY_INLINE int64_t pool_vectors(const float* x, float* h, int64_t o0, int64_t o1, int64_t kw,
                                int64_t pw, int64_t dw) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  auto vector_at = [&](int64_t ox) {
    hn::StoreU(window_vector<kMax, kStride>(x + ox * kStride - pw, kw, dw), d, h + ox);
  };
  if (o1 - o0 < L) return o0;
  int64_t ox = o0;
  for (; ox + L <= o1; ox += L) vector_at(ox);
  if (ox < o1) vector_at(o1 - L);
  return o1;
}

/// h[ox] for ox < ow folds x[ox * sw - pw + k * dw], k < kw, over the taps inside [0, iw):
/// the largest value (NaN when any is NaN; -inf when no tap is inside) or the sum (0 then).
template <bool kMax>
void pool_row_impl(const float* x, int64_t iw, float* h, int64_t ow, int64_t kw, int64_t sw,
                   int64_t pw, int64_t dw) {
  auto scalar = [&](int64_t ox) {
    const int64_t base = ox * sw - pw;
    float acc = kMax ? -HUGE_VALF : 0.0f;
    for (int64_t k = 0; k < kw; ++k) {
      const int64_t c = base + k * dw;
      if (c < 0 || c >= iw) continue;
      const float v = x[c];
      if constexpr (kMax)
        acc = (acc < v || v != v) ? v : acc;  // MaxNaN
      else
        acc += v;
    }
    h[ox] = acc;
  };
  // Outputs whose taps all lie inside: ox * sw >= pw and ox * sw - pw + (kw - 1) dw < iw.
  const int64_t span = (kw - 1) * dw;
  int64_t lo = std::min(ow, (pw + sw - 1) / sw);
  int64_t hi = iw - 1 - span + pw >= 0 ? std::clamp((iw - 1 - span + pw) / sw + 1, lo, ow) : lo;
  for (int64_t ox = 0; ox < lo; ++ox) scalar(ox);
  int64_t done = lo;
  if (hi > lo) {
    if (sw == 1) done = pool_vectors<kMax, 1>(x, h, lo, hi, kw, pw, dw);
    // Stride 2 loads two vectors per tap: the last one may read one float past the last
    // tap, so it stops a vector early unless that float is inside the row.
    else if (sw == 2)
      done = pool_vectors<kMax, 2>(x, h, lo, std::max(lo, std::min(hi, (iw + pw - span) / 2)), kw,
                                   pw, dw);
  }
  for (int64_t ox = done; ox < ow; ++ox) scalar(ox);
}

/// The vertical pass: output row oy folds the window's rows of `rows` (ih rows of ow
/// partial results, one per output column) into y.
template <bool kMax>
void fold_rows(const PoolGeom& g, const float* rows, float* y, const float* row_scale,
               const float* col_scale) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const VF init = kMax ? hn::Set(d, -HUGE_VALF) : hn::Zero(d);
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    poll_cancel();  // a row can hold a 2048-tap window per output
    int64_t base, t0, t1;
    window_rows(g, oy, base, t0, t1);
    float* yr = y + oy * g.ow;
    const float* r0 = rows + (base + t0 * g.dh) * g.ow;
    const int64_t step = g.dh * g.ow;
    const VF vs = hn::Set(d, row_scale ? row_scale[oy] : 1.0f);
    auto fold = [&](auto load, int64_t ox) {
      VF acc = init;
      for (int64_t t = t0; t < t1; ++t) {
        const VF v = load(r0 + (t - t0) * step + ox);
        acc = kMax ? MaxNaN(acc, v) : hn::Add(acc, v);
      }
      if (row_scale) acc = hn::Mul(acc, hn::Mul(vs, load(col_scale + ox)));
      return acc;
    };
    int64_t ox = 0;
    for (; ox + L <= g.ow; ox += L)
      hn::StoreU(fold([&](const float* p) { return hn::LoadU(d, p); }, ox), d, yr + ox);
    if (ox < g.ow) {
      const auto m = hn::FirstN(d, static_cast<size_t>(g.ow - ox));
      TailStore(fold([&](const float* p) { return TailLoad(m, d, p); }, ox), m, d,
                       yr + ox);
    }
  }
}

template <bool kMax>
void pool_plane_impl(const PoolGeom& g, const float* x, float* y, float* rows,
                     const float* row_scale, const float* col_scale) {
  for (int64_t iy = 0; iy < g.ih; ++iy) {
    poll_cancel();
    pool_row_impl<kMax>(x + iy * g.iw, g.iw, rows + iy * g.ow, g.ow, g.kw, g.sw, g.pw, g.dw);
  }
  fold_rows<kMax>(g, rows, y, row_scale, col_scale);
}

/// The max of pool_plane_impl for strides 1 and 2 over padded rows, NaN-exact (a NaN
/// mask per tap): the fallback of pool_plane_rows_first for planes holding NaN. Each
/// input row is copied into `line` (pw values -inf, the row, -inf to the end, which fold
/// like taps outside), so every output of the row, up to owp (ow rounded up to whole
/// vectors), is whole vectors without bounds tests; rows holds ih rows of owp partial
/// results. Only the last partial vector of each output row is stored lane by lane. line
/// has room for kPoolLines lines of line_len floats.
template <int64_t kStride>
void max_plane_padded(const PoolGeom& g, const float* x, float* y, float* rows, float* line,
                      int64_t line_len, int64_t owp) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  // kPoolLines rows are copied before the first of them is read: a vector load of floats
  // stored a moment before, across two of the copy's stores, waits for them to leave the
  // store buffer (the copy-then-read of one row at a time made this loop 3x slower).
  for (int64_t l = 0; l < kPoolLines; ++l)
    std::fill(line + l * line_len, line + (l + 1) * line_len, -HUGE_VALF);
  for (int64_t iy0 = 0; iy0 < g.ih; iy0 += kPoolLines) {
    const int64_t n = std::min(kPoolLines, g.ih - iy0);
    poll_cancel();
    for (int64_t l = 0; l < n; ++l)
      std::copy(x + (iy0 + l) * g.iw, x + (iy0 + l + 1) * g.iw, line + l * line_len + g.pw);
    for (int64_t l = 0; l < n; ++l) {
      const float* ln = line + l * line_len;
      float* hr = rows + (iy0 + l) * owp;
      for (int64_t ox = 0; ox < owp; ox += L)
        hn::StoreU(window_vector<true, kStride>(ln + ox * kStride, g.kw, g.dw), d, hr + ox);
    }
  }
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    poll_cancel();
    int64_t base, t0, t1;
    window_rows(g, oy, base, t0, t1);
    float* yr = y + oy * g.ow;
    const float* r0 = rows + (base + t0 * g.dh) * owp;
    const int64_t step = g.dh * owp;
    for (int64_t ox = 0; ox < g.ow; ox += L) {
      TapFold<true> fold;
      for (int64_t t = t0; t < t1; ++t) fold.add(hn::LoadU(d, r0 + (t - t0) * step + ox));
      const VF acc = fold.result();
      if (ox + L <= g.ow)
        hn::StoreU(acc, d, yr + ox);
      else
        TailStore(acc, hn::FirstN(d, static_cast<size_t>(g.ow - ox)), d, yr + ox);
    }
  }
}

/// pool_plane_impl's result for strides 1 and 2 with the window's rows folded first:
/// for each output row, its window's rows inside the input are folded straight from X
/// into a padded line (so X is read in place and only oh lines are folded along the
/// width, not ih rows), then the line along the width into y. A max folds with plain
/// Max, exact only without NaN: every input vector is also tested for NaN into a mask,
/// and when that mask has a lane set at the end it returns false and y is to be computed
/// again by max_plane_padded. (The test was an FMA probe, probe = v * 0 + probe: one chain
/// through every input vector at the FMA's latency, which held the 3x3 stride-2 pool after
/// SqueezeNet's stem to 0.17 ms; the mask's OR chain costs a cycle a vector.) line has room for
/// kPoolLines lines of line_len floats.
template <bool kMax, int64_t kStride>
bool pool_plane_rows_first(const PoolGeom& g, const float* x, float* y, float* line,
                           int64_t line_len, const float* row_scale, const float* col_scale) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  hn::Mask<DF> nan = hn::FirstN(d, 0);
  for (int64_t l = 0; l < kPoolLines; ++l)
    std::fill(line + l * line_len, line + (l + 1) * line_len, kMax ? -HUGE_VALF : 0.0f);
  const int64_t full = g.iw / L * L;
  const auto tail = hn::FirstN(d, static_cast<size_t>(g.iw - full));
  for (int64_t oy0 = 0; oy0 < g.oh; oy0 += kPoolLines) {
    const int64_t n = std::min(kPoolLines, g.oh - oy0);
    poll_cancel();
    // kPoolLines lines are folded before the first of them is read along the width (a
    // load across two stores still in the store buffer waits for them).
    for (int64_t l = 0; l < n; ++l) {
      int64_t base, t0, t1;
      window_rows(g, oy0 + l, base, t0, t1);
      float* ln = line + l * line_len + g.pw;
      if (t0 == t1) {  // no row inside: a line of the fill value
        std::fill(ln, ln + g.iw, kMax ? -HUGE_VALF : 0.0f);
        continue;
      }
      const float* r0 = x + (base + t0 * g.dh) * g.iw;
      const int64_t step = g.dh * g.iw;
      auto fold = [&](auto load, int64_t j) {
        VF acc = load(r0 + j);
        if constexpr (kMax) nan = hn::Or(nan, hn::IsNaN(acc));
        for (int64_t t = t0 + 1; t < t1; ++t) {
          const VF v = load(r0 + (t - t0) * step + j);
          if constexpr (kMax) {
            nan = hn::Or(nan, hn::IsNaN(v));
            acc = hn::Max(acc, v);
          } else {
            acc = hn::Add(acc, v);
          }
        }
        return acc;
      };
      for (int64_t j = 0; j < full; j += L)
        hn::StoreU(fold([&](const float* p) { return hn::LoadU(d, p); }, j), d, ln + j);
      if (full < g.iw)
        TailStore(fold([&](const float* p) { return TailLoad(tail, d, p); }, full), tail, d,
                  ln + full);
    }
    for (int64_t l = 0; l < n; ++l) {
      const int64_t oy = oy0 + l;
      const float* ln = line + l * line_len;
      float* yr = y + oy * g.ow;
      const VF vs = hn::Set(d, row_scale ? row_scale[oy] : 1.0f);
      for (int64_t ox = 0; ox < g.ow; ox += L) {
        VF acc = window_vector<kMax, kStride, PlainFold<kMax>>(ln + ox * kStride, g.kw, g.dw);
        if (row_scale) acc = hn::Mul(acc, hn::Mul(vs, hn::LoadU(d, col_scale + ox)));
        if (ox + L <= g.ow)
          hn::StoreU(acc, d, yr + ox);
        else
          TailStore(acc, hn::FirstN(d, static_cast<size_t>(g.ow - ox)), d, yr + ox);
      }
    }
  }
  if constexpr (kMax) return hn::AllFalse(d, nan);
  return true;
}

/// 2x2 windows at stride 2 with every window inside the plane (no pads, no ceil_mode
/// overhang: VGG, UNet and digit-reader pools): each output vector is two deinterleaved
/// rows folded together, no padded lines and no second pass. Sums are scaled by 1/4 when
/// `avg`. The last partial vector of each row is done element by element.
template <bool kMax>
void pool_2x2s2_impl(const float* x, int64_t iw, float* y, int64_t oh, int64_t ow) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const VF quarter = hn::Set(d, 0.25f);
  for (int64_t oy = 0; oy < oh; ++oy) {
    const float* r0 = x + 2 * oy * iw;
    const float* r1 = r0 + iw;
    float* yr = y + oy * ow;
    int64_t ox = 0;
    // A vector reads 2L floats of each row from 2 ox: within the row while 2 (ox + L) <= iw.
    for (; 2 * (ox + L) <= iw; ox += L) {
      VF a0, a1, b0, b1;
      hn::LoadInterleaved2(d, r0 + 2 * ox, a0, a1);
      hn::LoadInterleaved2(d, r1 + 2 * ox, b0, b1);
      TapFold<kMax> fold;
      fold.add(a0);
      fold.add(a1);
      fold.add(b0);
      fold.add(b1);
      VF v = fold.result();
      if constexpr (!kMax) v = hn::Mul(v, quarter);
      hn::StoreU(v, d, yr + ox);
    }
    for (; ox < ow; ++ox) {
      const float t[4] = {r0[2 * ox], r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1]};
      if constexpr (kMax) {
        float m = t[0];
        for (int k = 1; k < 4; ++k) m = (m < t[k] || t[k] != t[k]) ? t[k] : m;  // MaxNaN
        yr[ox] = m;
      } else {
        yr[ox] = (t[0] + t[1] + (t[2] + t[3])) * 0.25f;
      }
    }
  }
}

/// Windows one column wide without a column stride or pad (the digit readers' 2x1 pools):
/// the input rows are already the horizontal pass's results, so only the vertical fold
/// runs, straight from X (no row buffer).
void PoolVertical(const PoolGeom& g, const float* x, float* y, bool max, const float* row_scale,
                  const float* col_scale) {
  if (max)
    fold_rows<true>(g, x, y, row_scale, col_scale);
  else
    fold_rows<false>(g, x, y, row_scale, col_scale);
}

void Pool2x2S2(const float* x, int64_t iw, float* y, int64_t oh, int64_t ow, bool max) {
  if (max)
    pool_2x2s2_impl<true>(x, iw, y, oh, ow);
  else
    pool_2x2s2_impl<false>(x, iw, y, oh, ow);
}

int64_t PoolLanes() {
  return static_cast<int64_t>(hn::Lanes(DF()));
}

void MaxPlanePadded(const PoolGeom& g, const float* x, float* y, float* rows, float* line,
                    int64_t line_len, int64_t owp) {
  if (g.sw == 1)
    max_plane_padded<1>(g, x, y, rows, line, line_len, owp);
  else
    max_plane_padded<2>(g, x, y, rows, line, line_len, owp);
}

bool PoolPlaneRowsFirst(const PoolGeom& g, const float* x, float* y, float* line, int64_t line_len,
                        bool max, const float* row_scale, const float* col_scale) {
  if (max)
    return g.sw == 1 ? pool_plane_rows_first<true, 1>(g, x, y, line, line_len, row_scale, col_scale)
                     : pool_plane_rows_first<true, 2>(g, x, y, line, line_len, row_scale, col_scale);
  return g.sw == 1 ? pool_plane_rows_first<false, 1>(g, x, y, line, line_len, row_scale, col_scale)
                   : pool_plane_rows_first<false, 2>(g, x, y, line, line_len, row_scale, col_scale);
}

void PoolPlane(const PoolGeom& g, const float* x, float* y, float* rows, bool max,
               const float* row_scale, const float* col_scale) {
  if (max)
    pool_plane_impl<true>(g, x, y, rows, row_scale, col_scale);
  else
    pool_plane_impl<false>(g, x, y, rows, row_scale, col_scale);
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::simd {

HWY_EXPORT(PoolPlane);
HWY_EXPORT(MaxPlanePadded);
HWY_EXPORT(PoolPlaneRowsFirst);
HWY_EXPORT(PoolLanes);
HWY_EXPORT(Pool2x2S2);
HWY_EXPORT(PoolVertical);


void pool_plane(const PoolGeom& g, const float* x, float* y, bool max, const float* row_scale,
                const float* col_scale) {
  // 2x2 windows at stride 2, all inside the plane: every window has its four taps, so an
  // average's divisors are 1/2 per axis whatever count_include_pad says.
  if (g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.dh == 1 && g.dw == 1 && g.ph == 0 &&
      g.pw == 0 && 2 * g.oh <= g.ih && 2 * g.ow <= g.iw) {
    HWY_DYNAMIC_DISPATCH(Pool2x2S2)(x, g.iw, y, g.oh, g.ow, max);
    return;
  }
  // One column per window, no column stride or pad: rows folded straight from X.
  if (g.kw == 1 && g.sw == 1 && g.pw == 0 && g.ow == g.iw) {
    HWY_DYNAMIC_DISPATCH(PoolVertical)(g, x, y, max, row_scale, col_scale);
    return;
  }
  thread_local std::vector<float> rows, line, cols;
  // (Not for windows or pads far beyond the row, whose line would be mostly fill.)
  const int64_t span = (g.kw - 1) * g.dw;
  if ((g.sw == 1 || g.sw == 2) && span <= 2 * g.iw + 64 && g.pw <= span) {
    // Strides 1 and 2: padded lines, whole vectors (pool_plane_rows_first).
    const int64_t L = HWY_DYNAMIC_DISPATCH(PoolLanes)();
    const int64_t owp = (g.ow + L - 1) / L * L;
    // The last vector of a row reads up to sw * owp + (kw - 1) * dw + L floats of the line.
    const int64_t line_len = std::max(g.pw + g.iw, g.sw * owp + (g.kw - 1) * g.dw + L);
    if (static_cast<int64_t>(line.size()) < kPoolLines * line_len) line.resize(static_cast<size_t>(kPoolLines * line_len));
    const float* cs = nullptr;
    if (col_scale) {
      if (static_cast<int64_t>(cols.size()) < owp) cols.resize(static_cast<size_t>(owp));
      std::copy(col_scale, col_scale + g.ow, cols.begin());
      std::fill(cols.begin() + g.ow, cols.begin() + owp, 1.0f);
      cs = cols.data();
    }
    // Rows first; a max over a plane with NaN (or infinities) again, NaN-exact (only a
    // max declines).
    if (HWY_DYNAMIC_DISPATCH(PoolPlaneRowsFirst)(g, x, y, line.data(), line_len, max, row_scale, cs))
      return;
    if (static_cast<int64_t>(rows.size()) < g.ih * owp) rows.resize(static_cast<size_t>(g.ih * owp));
    HWY_DYNAMIC_DISPATCH(MaxPlanePadded)(g, x, y, rows.data(), line.data(), line_len, owp);
    return;
  }
  if (static_cast<int64_t>(rows.size()) < g.ih * g.ow) rows.resize(static_cast<size_t>(g.ih * g.ow));
  HWY_DYNAMIC_DISPATCH(PoolPlane)(g, x, y, rows.data(), max, row_scale, col_scale);
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
