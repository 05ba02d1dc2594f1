// Per-target vector code of the fused convolution epilogue (see conv_epilogue.h). Included
// by each src/simd/ file that foreach_target.h compiles for several targets, after
// <hwy/highway.h>; the include guard toggles once per target as Highway's -inl headers do.
#if defined(ONYX_SIMD_CONV_EPILOGUE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ONYX_SIMD_CONV_EPILOGUE_INL_H_
#undef ONYX_SIMD_CONV_EPILOGUE_INL_H_
#else
#define ONYX_SIMD_CONV_EPILOGUE_INL_H_
#endif

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "simd/conv_epilogue.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// erf(x) by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7).
template <class D, class V>
HWY_INLINE V ErfApprox(D d, V x) {
  const V ax = hn::Abs(x);
  const V t = hn::Div(hn::Set(d, 1.0f), hn::MulAdd(hn::Set(d, 0.3275911f), ax, hn::Set(d, 1.0f)));
  V poly = hn::Set(d, 1.061405429f);
  poly = hn::MulAdd(poly, t, hn::Set(d, -1.453152027f));
  poly = hn::MulAdd(poly, t, hn::Set(d, 1.421413741f));
  poly = hn::MulAdd(poly, t, hn::Set(d, -0.284496736f));
  poly = hn::MulAdd(poly, t, hn::Set(d, 0.254829592f));
  poly = hn::Mul(poly, t);
  const V e = hn::CallExp(d, hn::Neg(hn::Mul(ax, ax)));
  const V y = hn::NegMulAdd(poly, e, hn::Set(d, 1.0f));  // 1 - poly * e
  return hn::CopySign(y, x);
}

/// 1 / (1 + exp(-x)). Highway's Exp takes arguments up to 104 only: -x is capped at 88
/// (exp(88) ~ 1.7e38 is finite), which gives 6e-39 instead of 0 below x = -88.
template <class D, class V>
HWY_INLINE V SigmoidV(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  return hn::Div(one, hn::Add(one, hn::CallExp(d, hn::Min(hn::Neg(x), hn::Set(d, 88.0f)))));
}

/// The activation of `a` on one vector.
template <class D, class V>
HWY_INLINE V ApplyAct(D d, V v, const Activation& a) {
  switch (a.kind) {
    case Act::kNone:
      return v;
    case Act::kRelu:
      return hn::IfThenElse(hn::Lt(v, hn::Zero(d)), hn::Zero(d), v);
    case Act::kClip: {
      const V lo = hn::Set(d, a.alpha), hi = hn::Set(d, a.beta);
      v = hn::IfThenElse(hn::Lt(v, lo), lo, v);
      return hn::IfThenElse(hn::Gt(v, hi), hi, v);
    }
    case Act::kLeakyRelu:
      return hn::IfThenElse(hn::Lt(v, hn::Zero(d)), hn::Mul(v, hn::Set(d, a.alpha)), v);
    case Act::kHardSigmoid: {
      const V t = hn::MulAdd(v, hn::Set(d, a.alpha), hn::Set(d, a.beta));
      return hn::Max(hn::Zero(d), hn::Min(hn::Set(d, 1.0f), t));
    }
    case Act::kHardSwish: {
      const V t = hn::MulAdd(v, hn::Set(d, 1.0f / 6.0f), hn::Set(d, 0.5f));
      return hn::Mul(v, hn::Max(hn::Zero(d), hn::Min(hn::Set(d, 1.0f), t)));
    }
    case Act::kSigmoid:
      return SigmoidV(d, v);
    case Act::kTanh:
      return hn::CallTanh(d, v);
    case Act::kSiLU:
      return hn::Mul(v, SigmoidV(d, v));
    case Act::kGelu: {
      const V e = ErfApprox(d, hn::Mul(v, hn::Set(d, 0.70710678118654752f)));
      return hn::Mul(hn::Mul(hn::Set(d, 0.5f), v), hn::Add(hn::Set(d, 1.0f), e));
    }
    case Act::kGeluTanh: {
      const V v3 = hn::Mul(hn::Mul(v, v), v);
      const V inner =
          hn::Mul(hn::Set(d, 0.7978845608028654f), hn::MulAdd(hn::Set(d, 0.044715f), v3, v));
      return hn::Mul(hn::Mul(hn::Set(d, 0.5f), v),
                     hn::Add(hn::Set(d, 1.0f), hn::CallTanh(d, inner)));
    }
  }
  return v;
}

/// True for the activations that are a few vector operations (kept inside the GEMM
/// microkernel's store); the others (exp, tanh, erf) run on each stored tile instead, so
/// the microkernel's loop stays small.
inline bool CheapAct(Act k) {
  return k == Act::kNone || k == Act::kRelu || k == Act::kClip || k == Act::kLeakyRelu ||
         k == Act::kHardSigmoid || k == Act::kHardSwish;
}

/// Applies the activation to n floats in place (any n; the tail through a padded buffer).
HWY_INLINE void ActRow(float* x, int64_t n, const Activation& a) {
  if (a.kind == Act::kNone) return;
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(ApplyAct(d, hn::LoadU(d, x + i), a), d, x + i);
  if (i < n) {
    HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)] = {};
    for (int64_t k = i; k < n; ++k) tmp[k - i] = x[k];
    hn::Store(ApplyAct(d, hn::Load(d, tmp), a), d, tmp);
    for (int64_t k = i; k < n; ++k) x[k] = tmp[k - i];
  }
}

/// y[j] = act(y[j] + bias + z[j]) for j < n (z may be null).
HWY_INLINE void EpilogueRow(float* y, const float* z, int64_t n, float bias, const Activation& a) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const auto vb = hn::Set(d, bias);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    auto v = hn::Add(hn::LoadU(d, y + i), vb);
    if (z) v = hn::Add(v, hn::LoadU(d, z + i));
    hn::StoreU(ApplyAct(d, v, a), d, y + i);
  }
  if (i < n) {
    HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)] = {};
    for (int64_t k = i; k < n; ++k) tmp[k - i] = y[k] + (z ? z[k] : 0.0f);
    hn::Store(ApplyAct(d, hn::Add(hn::Load(d, tmp), vb), a), d, tmp);
    for (int64_t k = i; k < n; ++k) y[k] = tmp[k - i];
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#endif  // ONYX_SIMD_CONV_EPILOGUE_INL_H_ toggle
