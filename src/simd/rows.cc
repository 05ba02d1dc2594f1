// Row microkernels (see rows.h), compiled once per SIMD target through Highway's
// foreach_target.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/rows.cc"
#if defined(__EMSCRIPTEN__) && !defined(HWY_COMPILE_ONLY_STATIC)
#define HWY_COMPILE_ONLY_STATIC 1
#endif
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include "simd/math-inl.h"
#include "simd/tail-inl.h"
// clang-format on

#include "simd/rows.h"

#include <algorithm>
#include <cmath>

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

/// Folds fold(acc, v) over the row with four vector accumulators started at `init`
/// (tail lanes past n read as `init`), then the four into one vector.
template <class Fold>
HWY_INLINE VF fold_row(const float* x, int64_t n, VF init, const Fold& fold) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  VF a0 = init, a1 = init, a2 = init, a3 = init;
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    a0 = fold(a0, hn::LoadU(d, x + i));
    a1 = fold(a1, hn::LoadU(d, x + i + L));
    a2 = fold(a2, hn::LoadU(d, x + i + 2 * L));
    a3 = fold(a3, hn::LoadU(d, x + i + 3 * L));
  }
  for (; i + L <= n; i += L) a0 = fold(a0, hn::LoadU(d, x + i));
  if (i < n) {
    const auto m = hn::FirstN(d, static_cast<size_t>(n - i));
    a1 = fold(a1, hn::IfThenElse(m, TailLoad(m, d, x + i), init));
  }
  return fold(fold(a0, a1), fold(a2, a3));
}

float RowSum(const float* x, int64_t n) {
  const DF d;
  const VF s = fold_row(x, n, hn::Zero(d), [](VF a, VF v) { return hn::Add(a, v); });
  return hn::GetLane(hn::SumOfLanes(d, s));
}

float RowSumSqDev(const float* x, int64_t n, float c, float* sum_dev) {
  const DF d;
  const VF vc = hn::Set(d, c);
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  VF q0 = hn::Zero(d), q1 = q0, s0 = q0, s1 = q0;
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const VF t0 = hn::Sub(hn::LoadU(d, x + i), vc), t1 = hn::Sub(hn::LoadU(d, x + i + L), vc);
    s0 = hn::Add(s0, t0);
    s1 = hn::Add(s1, t1);
    q0 = hn::MulAdd(t0, t0, q0);
    q1 = hn::MulAdd(t1, t1, q1);
  }
  for (; i + L <= n; i += L) {
    const VF t = hn::Sub(hn::LoadU(d, x + i), vc);
    s0 = hn::Add(s0, t);
    q0 = hn::MulAdd(t, t, q0);
  }
  if (i < n) {
    // Lanes past n are read as c: a deviation of 0.
    const auto m = hn::FirstN(d, static_cast<size_t>(n - i));
    const VF t = hn::Sub(hn::IfThenElse(m, TailLoad(m, d, x + i), vc), vc);
    s1 = hn::Add(s1, t);
    q1 = hn::MulAdd(t, t, q1);
  }
  *sum_dev = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(q0, q1)));
}

float RowExtreme(const float* x, int64_t n, bool max) {
  const DF d;
  if (max) {
    const VF m = fold_row(x, n, hn::Set(d, -HUGE_VALF), [](VF a, VF v) { return MaxNaN(a, v); });
    // Lanes folded by MaxNaN keep a NaN; the lane reduction must too.
    if (!hn::AllFalse(d, hn::IsNaN(m))) return NAN;
    return hn::GetLane(hn::MaxOfLanes(d, m));
  }
  const VF m = fold_row(x, n, hn::Set(d, HUGE_VALF), [](VF a, VF v) { return MinNaN(a, v); });
  if (!hn::AllFalse(d, hn::IsNaN(m))) return NAN;
  return hn::GetLane(hn::MinOfLanes(d, m));
}

/// y[i] = fn(x[i], i, ld, keep) a vector at a time, the tail through masked loads (in place
/// safe): ld(p) loads the vector of another row at p + i's lanes, keep(v) zeroes the lanes
/// past n (what a sum folded in fn must not see).
template <class F>
HWY_INLINE void map_row(const float* x, float* y, int64_t n, const F& fn) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const auto ld = [&](const float* p) { return hn::LoadU(d, p); };
  const auto keep = [](VF v) { return v; };
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(fn(hn::LoadU(d, x + i), i, ld, keep), d, y + i);
  if (i < n) {
    const auto m = hn::FirstN(d, static_cast<size_t>(n - i));
    const auto ldm = [&](const float* p) { return TailLoad(m, d, p); };
    const auto keepm = [&](VF v) { return hn::IfThenElseZero(m, v); };
    TailStore(fn(TailLoad(m, d, x + i), i, ldm, keepm), m, d, y + i);
  }
}

void RowAffine(const float* x, float* y, int64_t n, float c, float a, float b) {
  const DF d;
  const VF vc = hn::Set(d, c), va = hn::Set(d, a), vb = hn::Set(d, b);
  map_row(x, y, n, [&](VF v, int64_t, auto, auto) { return hn::MulAdd(hn::Sub(v, vc), va, vb); });
}

void RowGatherEven(const float* src, int64_t n, float* dst, int64_t readable) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + L <= n && 2 * (i + L) <= readable; i += L) {
    VF even, odd;
    hn::LoadInterleaved2(d, src + 2 * i, even, odd);
    hn::StoreU(even, d, dst + i);
  }
  for (; i < n; ++i) dst[i] = src[2 * i];
}

void RowNormalize(const float* x, float* y, int64_t n, float mean, float mean_lo, float inv,
                  const float* scale, const float* bias) {
  const DF d;
  const VF vm = hn::Set(d, mean), vl = hn::Set(d, mean_lo), vi = hn::Set(d, inv);
  if (bias)
    map_row(x, y, n, [&](VF v, int64_t i, auto ld, auto) {
      return hn::MulAdd(hn::Mul(hn::Sub(hn::Sub(v, vm), vl), vi), ld(scale + i), ld(bias + i));
    });
  else
    map_row(x, y, n, [&](VF v, int64_t i, auto ld, auto) {
      return hn::Mul(hn::Mul(hn::Sub(hn::Sub(v, vm), vl), vi), ld(scale + i));
    });
}

void RowAccumulate(float* acc, const float* x, int64_t n, int kind) {
  if (kind == 0)
    map_row(acc, acc, n, [&](VF a, int64_t i, auto ld, auto) { return hn::Add(a, ld(x + i)); });
  else if (kind == 1)
    map_row(acc, acc, n, [&](VF a, int64_t i, auto ld, auto) { return MaxNaN(a, ld(x + i)); });
  else
    map_row(acc, acc, n, [&](VF a, int64_t i, auto ld, auto) { return MinNaN(a, ld(x + i)); });
}

/// The largest value of the row, NaN if any is NaN.
HWY_INLINE float row_max_nan(const float* x, int64_t n) {
  const DF d;
  const VF m = fold_row(x, n, hn::Set(d, -HUGE_VALF), [](VF a, VF v) { return MaxNaN(a, v); });
  if (!hn::AllFalse(d, hn::IsNaN(m))) return NAN;
  return hn::GetLane(hn::MaxOfLanes(d, m));
}

/// One softmax row given its shift. With a finite largest value every x - shift is <= 0
/// (or -inf), which ExpNonPosF takes; a NaN or infinite one shifts by 0 (the reference's
/// rule against inf - inf) and takes the full-range exp, which passes NaN and inf on.
template <bool kFull>
HWY_INLINE void softmax_row_with(const float* x, float* y, int64_t n, bool log, float shift) {
  const DF d;
  const VF vs = hn::Set(d, shift);
  auto ex = [&](VF v) { return kFull ? ExpF(d, hn::Sub(v, vs)) : ExpNonPosF(d, hn::Sub(v, vs)); };
  VF acc = hn::Zero(d);
  if (log) {
    // Sum only (the row is read twice, written once).
    map_row(x, y, n, [&](VF v, int64_t, auto, auto keep) {
      acc = hn::Add(acc, keep(ex(v)));
      return v;
    });
    const VF off = hn::Set(d, shift + std::log(hn::GetLane(hn::SumOfLanes(d, acc))));
    map_row(y, y, n, [&](VF v, int64_t, auto, auto) { return hn::Sub(v, off); });
    return;
  }
  map_row(x, y, n, [&](VF v, int64_t, auto, auto keep) {
    const VF e = ex(v);
    acc = hn::Add(acc, keep(e));
    return e;
  });
  const VF inv = hn::Set(d, 1.0f / hn::GetLane(hn::SumOfLanes(d, acc)));
  map_row(y, y, n, [&](VF v, int64_t, auto, auto) { return hn::Mul(v, inv); });
}

void SoftmaxRow(const float* x, float* y, int64_t n, bool log) {
  const float m = row_max_nan(x, n);
  if (std::isfinite(m))
    softmax_row_with<false>(x, y, n, log, m);
  else
    softmax_row_with<true>(x, y, n, log, 0.0f);
}

void SoftmaxColumns(const float* x, float* y, int64_t n, int64_t stride, int64_t inner, bool log,
                    float* scratch) {
  const DF d;
  float* shift = scratch;
  float* sum = scratch + inner;
  for (int64_t j = 0; j < inner; ++j) shift[j] = -HUGE_VALF;
  for (int64_t k = 0; k < n; ++k) {
    const float* xk = x + k * stride;
    map_row(shift, shift, inner,
            [&](VF s, int64_t i, auto ld, auto) { return MaxNaN(s, ld(xk + i)); });
  }
  bool finite = true;
  for (int64_t j = 0; j < inner; ++j) {
    if (!std::isfinite(shift[j])) {
      shift[j] = 0.0f;
      finite = false;
    }
    sum[j] = 0.0f;
  }
  // As in softmax_row_with: finite shifts leave every argument of exp <= 0.
  auto ex = [&](VF v) { return finite ? ExpNonPosF(d, v) : ExpF(d, v); };
  for (int64_t k = 0; k < n; ++k) {
    const float* xk = x + k * stride;
    float* yk = y + k * stride;
    // y_k = exp(x_k - shift) (Softmax) and sum += it; LogSoftmax only sums.
    if (log)
      map_row(sum, sum, inner, [&](VF s, int64_t i, auto ld, auto) {
        return hn::Add(s, ex(hn::Sub(ld(xk + i), ld(shift + i))));
      });
    else
      map_row(xk, yk, inner,
              [&](VF v, int64_t i, auto ld, auto) { return ex(hn::Sub(v, ld(shift + i))); });
    if (!log) RowAccumulate(sum, yk, inner, 0);
  }
  if (log) {
    for (int64_t j = 0; j < inner; ++j) shift[j] += std::log(sum[j]);
    for (int64_t k = 0; k < n; ++k)
      map_row(x + k * stride, y + k * stride, inner,
              [&](VF v, int64_t i, auto ld, auto) { return hn::Sub(v, ld(shift + i)); });
    return;
  }
  for (int64_t j = 0; j < inner; ++j) sum[j] = 1.0f / sum[j];
  for (int64_t k = 0; k < n; ++k)
    map_row(y + k * stride, y + k * stride, inner,
            [&](VF v, int64_t i, auto ld, auto) { return hn::Mul(v, ld(sum + i)); });
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::simd {

HWY_EXPORT(RowSum);
HWY_EXPORT(RowSumSqDev);
HWY_EXPORT(RowExtreme);
HWY_EXPORT(RowAffine);
HWY_EXPORT(RowGatherEven);
HWY_EXPORT(RowNormalize);
HWY_EXPORT(RowAccumulate);
HWY_EXPORT(SoftmaxRow);
HWY_EXPORT(SoftmaxColumns);

float row_sum(const float* x, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(RowSum)(x, n);
}
float row_sum_sq_dev(const float* x, int64_t n, float c, float* sum_dev) {
  return HWY_DYNAMIC_DISPATCH(RowSumSqDev)(x, n, c, sum_dev);
}
bool row_mean_var(const float* x, int64_t n, float* mean, float* mean_lo, float* var) {
  const float m = row_sum(x, n) / static_cast<float>(n);
  float dev;
  const float sq = row_sum_sq_dev(x, n, m, &dev);
  // The corrected two-pass formula: the deviations' sum is the rounding error of m.
  *mean = m;
  *mean_lo = dev / static_cast<float>(n);
  *var = (sq - dev * dev / static_cast<float>(n)) / static_cast<float>(n);
  if (!std::isfinite(m) || !std::isfinite(*var)) return false;
  *var = std::max(0.0f, *var);
  return true;
}
float row_extreme(const float* x, int64_t n, bool max) {
  return HWY_DYNAMIC_DISPATCH(RowExtreme)(x, n, max);
}
void row_affine(const float* x, float* y, int64_t n, float c, float a, float b) {
  HWY_DYNAMIC_DISPATCH(RowAffine)(x, y, n, c, a, b);
}
void row_gather_even(const float* src, int64_t n, float* dst, int64_t readable) {
  HWY_DYNAMIC_DISPATCH(RowGatherEven)(src, n, dst, readable);
}
void row_normalize(const float* x, float* y, int64_t n, float mean, float mean_lo, float inv,
                   const float* scale, const float* bias) {
  HWY_DYNAMIC_DISPATCH(RowNormalize)(x, y, n, mean, mean_lo, inv, scale, bias);
}
void row_accumulate(float* acc, const float* x, int64_t n, int kind) {
  HWY_DYNAMIC_DISPATCH(RowAccumulate)(acc, x, n, kind);
}
void softmax_row(const float* x, float* y, int64_t n, bool log) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRow)(x, y, n, log);
}
void softmax_columns(const float* x, float* y, int64_t n, int64_t stride, int64_t inner, bool log,
                     float* scratch) {
  HWY_DYNAMIC_DISPATCH(SoftmaxColumns)(x, y, n, stride, inner, log, scratch);
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
