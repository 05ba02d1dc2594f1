// Attention row primitives (see attention.h), compiled once per SIMD target through
// Highway's foreach_target.h; Highway's contrib/math supplies Exp and Tanh.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/attention.cc"
#if defined(__EMSCRIPTEN__) && !defined(HWY_COMPILE_ONLY_STATIC)
#define HWY_COMPILE_ONLY_STATIC 1
#endif
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include "simd/attention.h"

#include <cmath>
#include <limits>

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = decltype(hn::Zero(DF()));

float AttentionScores(float* s, int64_t n, float scale, float softcap, const float* bias) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const VF vs = hn::Set(d, softcap > 0 ? scale / softcap : scale);
  const VF vc = hn::Set(d, softcap);
  auto one = [&](VF x, const float* b) {
    x = hn::Mul(x, vs);
    if (softcap > 0) x = hn::Mul(vc, hn::Tanh(d, x));
    return b ? hn::Add(x, hn::LoadU(d, b)) : x;
  };
  VF mx = hn::Set(d, -std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + L <= n; j += L) {
    const VF x = one(hn::LoadU(d, s + j), bias ? bias + j : nullptr);
    hn::StoreU(x, d, s + j);
    mx = hn::Max(mx, x);
  }
  float m = hn::GetLane(hn::MaxOfLanes(d, mx));
  for (; j < n; ++j) {
    float x = s[j] * (softcap > 0 ? scale / softcap : scale);
    if (softcap > 0) x = softcap * std::tanh(x);
    if (bias) x += bias[j];
    s[j] = x;
    m = x > m ? x : m;
  }
  return m;
}

float AttentionExpSum(float* s, int64_t n, float m) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const VF vm = hn::Set(d, m);
  VF sum = hn::Zero(d);
  int64_t j = 0;
  for (; j + L <= n; j += L) {
    const VF e = hn::Exp(d, hn::Sub(hn::LoadU(d, s + j), vm));
    hn::StoreU(e, d, s + j);
    sum = hn::Add(sum, e);
  }
  if (j < n) {  // the tail through a padded vector; -inf pads give exp 0
    HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)];
    for (int64_t k = 0; k < L; ++k)
      tmp[k] = j + k < n ? s[j + k] : -std::numeric_limits<float>::infinity();
    const VF e = hn::Exp(d, hn::Sub(hn::Load(d, tmp), vm));
    hn::Store(e, d, tmp);
    sum = hn::Add(sum, e);
    for (int64_t k = 0; j + k < n; ++k) s[j + k] = tmp[k];
  }
  return hn::GetLane(hn::SumOfLanes(d, sum));
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::simd {

HWY_EXPORT(AttentionScores);
HWY_EXPORT(AttentionExpSum);

float attention_scores(float* s, int64_t n, float scale, float softcap, const float* bias) {
  return HWY_DYNAMIC_DISPATCH(AttentionScores)(s, n, scale, softcap, bias);
}

float attention_exp_sum(float* s, int64_t n, float m) {
  return HWY_DYNAMIC_DISPATCH(AttentionExpSum)(s, n, m);
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
