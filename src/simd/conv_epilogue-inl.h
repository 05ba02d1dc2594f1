// Per-target vector code of the fused convolution epilogue (see conv_epilogue.h). Included
// by each src/simd/ file that foreach_target.h compiles for several targets, after
// <hwy/highway.h>; the include guard toggles once per target as Highway's -inl headers do.
#if defined(ONYX_SIMD_CONV_EPILOGUE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ONYX_SIMD_CONV_EPILOGUE_INL_H_
#undef ONYX_SIMD_CONV_EPILOGUE_INL_H_
#else
#define ONYX_SIMD_CONV_EPILOGUE_INL_H_
#endif

#include <hwy/highway.h>

#include "simd/conv_epilogue.h"
#include "simd/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// The activation of kind K (a's parameters) on one vector.
template <Act K, class D, class V>
HWY_INLINE V ActAs(D d, V v, const Activation& a) {
  if constexpr (K == Act::kRelu) {
    return hn::IfThenElse(hn::Lt(v, hn::Zero(d)), hn::Zero(d), v);
  } else if constexpr (K == Act::kClip) {
    const V lo = hn::Set(d, a.alpha), hi = hn::Set(d, a.beta);
    v = hn::IfThenElse(hn::Lt(v, lo), lo, v);
    return hn::IfThenElse(hn::Gt(v, hi), hi, v);
  } else if constexpr (K == Act::kLeakyRelu) {
    return hn::IfThenElse(hn::Lt(v, hn::Zero(d)), hn::Mul(v, hn::Set(d, a.alpha)), v);
  } else if constexpr (K == Act::kHardSigmoid) {
    const V t = hn::MulAdd(v, hn::Set(d, a.alpha), hn::Set(d, a.beta));
    return hn::Max(hn::Zero(d), hn::Min(hn::Set(d, 1.0f), t));
  } else if constexpr (K == Act::kHardSwish) {
    const V t = hn::MulAdd(v, hn::Set(d, 1.0f / 6.0f), hn::Set(d, 0.5f));
    return hn::Mul(v, hn::Max(hn::Zero(d), hn::Min(hn::Set(d, 1.0f), t)));
  // The math-inl.h functions: inlined polynomials within a few ulp over all floats
  // (Highway's CallExp/CallTanh were 17% of efficientnet_b0's time in its SiLUs).
  } else if constexpr (K == Act::kSigmoid) {
    return SigmoidF(d, v);
  } else if constexpr (K == Act::kTanh) {
    return TanhF(d, v);
  } else if constexpr (K == Act::kSiLU) {
    return SigmoidMulF(d, v, v);
  } else if constexpr (K == Act::kGelu) {
    return GeluF(d, v);
  } else if constexpr (K == Act::kGeluTanh) {
    return GeluTanhF(d, v);
  } else {
    (void)d;
    (void)a;
    return v;
  }
}

/// The activation of `a` on one vector.
template <class D, class V>
HWY_INLINE V ApplyAct(D d, V v, const Activation& a) {
  switch (a.kind) {
#define ONYX_ACT_CASE(k) \
  case Act::k:           \
    return ActAs<Act::k>(d, v, a);
    ONYX_ACT_CASE(kNone)
    ONYX_ACT_CASE(kRelu)
    ONYX_ACT_CASE(kClip)
    ONYX_ACT_CASE(kLeakyRelu)
    ONYX_ACT_CASE(kHardSigmoid)
    ONYX_ACT_CASE(kHardSwish)
    ONYX_ACT_CASE(kSigmoid)
    ONYX_ACT_CASE(kTanh)
    ONYX_ACT_CASE(kSiLU)
    ONYX_ACT_CASE(kGelu)
    ONYX_ACT_CASE(kGeluTanh)
#undef ONYX_ACT_CASE
  }
  return v;
}

/// One activation as a functor f(d, v): of kind K fixed at compile time, or any kind
/// (kAny: a switch per vector, the cheap kinds inline and the others through one call,
/// ApplyCheapAct: WithAct's own kinds, SiLU among them, never take this path).
constexpr int kAnyAct = -1;
template <int K>
struct ActFn {
  const Activation& a;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V v) const;
};

/// body(ActFn<K>{a}) with K = a.kind for the activations of the depthwise layers of
/// MobileNet and EfficientNet (none, ReLU, ReLU6 as Clip, SiLU), so their loops have no
/// switch per vector (with one, the row loops kept their sums and pointers in memory: a
/// 3x3 depthwise of 144 channels at 56x56 with ReLU took 0.354 ms, 0.284 ms without, one
/// Zen 3 core); body(ActFn<kAnyAct>{a}) for the others.
template <class Body>
HWY_INLINE void WithAct(const Activation& a, const Body& body) {
  switch (a.kind) {
    case Act::kNone:
      return body(ActFn<int(Act::kNone)>{a});
    case Act::kRelu:
      return body(ActFn<int(Act::kRelu)>{a});
    case Act::kClip:
      return body(ActFn<int(Act::kClip)>{a});
    case Act::kSiLU:
      return body(ActFn<int(Act::kSiLU)>{a});
    default:
      return body(ActFn<kAnyAct>{a});
  }
}

/// True for the activations that are a few vector operations (kept inside the GEMM
/// microkernel's store); the others (exp, tanh, erf) run on each stored tile instead, so
/// the microkernel's loop stays small.
inline bool CheapAct(Act k) {
  return k == Act::kNone || k == Act::kRelu || k == Act::kClip || k == Act::kLeakyRelu ||
         k == Act::kHardSigmoid || k == Act::kHardSwish;
}

/// ApplyAct, out of line.
template <class D, class V>
HWY_NOINLINE V ApplyActCall(D d, V v, const Activation& a) {
  return ApplyAct(d, v, a);
}

/// ApplyAct with the CheapAct kinds inline. kFallback: the others (exp, tanh, erf
/// polynomials) go through one out-of-line call; this is ActFn<kAnyAct>, the path of the
/// kinds WithAct does not specialize. Every polynomial inlined at each store made the GEMM
/// microkernel 3.6x the code (16.7 KB of wasm against 4.6) and WinoOutput 5x: more for a
/// JIT to compile, more instruction cache. Without kFallback (the GEMM microkernel's
/// stores, which Micro gives only CheapAct kinds; the others run on the stored tile,
/// ActRow) any other kind is returned unchanged: a call site in Micro, even one never
/// taken, made the reader's warm runs 1.5-2% slower in V8 (paired A/B in one page).
template <bool kFallback, class D, class V>
HWY_INLINE V ApplyCheapAct(D d, V v, const Activation& a) {
  switch (a.kind) {
    case Act::kNone:
      return v;
    case Act::kRelu:
      return ActAs<Act::kRelu>(d, v, a);
    case Act::kClip:
      return ActAs<Act::kClip>(d, v, a);
    case Act::kLeakyRelu:
      return ActAs<Act::kLeakyRelu>(d, v, a);
    case Act::kHardSigmoid:
      return ActAs<Act::kHardSigmoid>(d, v, a);
    case Act::kHardSwish:
      return ActAs<Act::kHardSwish>(d, v, a);
    default:
      if constexpr (kFallback) {
        return ApplyActCall(d, v, a);
      } else {
        HWY_DASSERT(false && "not a CheapAct kind");
        return v;
      }
  }
}

template <int K>
template <class D, class V>
HWY_INLINE V ActFn<K>::operator()(D d, V v) const {
  if constexpr (K == kAnyAct)
    return ApplyCheapAct<true>(d, v, a);
  else
    return ActAs<static_cast<Act>(K)>(d, v, a);
}

/// x[0, n) = f(x) in place (any n; the tail through a padded buffer), two vectors at a time.
template <class F>
HWY_INLINE void ActLoop(float* x, int64_t n, const F& f) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const auto v0 = f(hn::LoadU(d, x + i)), v1 = f(hn::LoadU(d, x + i + L));
    hn::StoreU(v0, d, x + i);
    hn::StoreU(v1, d, x + i + L);
  }
  for (; i + L <= n; i += L) hn::StoreU(f(hn::LoadU(d, x + i)), d, x + i);
  if (i < n) {
    HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)] = {};
    for (int64_t k = i; k < n; ++k) tmp[k - i] = x[k];
    hn::Store(f(hn::Load(d, tmp)), d, tmp);
    for (int64_t k = i; k < n; ++k) x[k] = tmp[k - i];
  }
}

/// Applies the activation to n floats in place (any n). One loop per activation: with the
/// switch inside the loop (ApplyAct per vector) the compiler kept an indirect jump per
/// vector, and the exp-based activations' independent vectors did not overlap.
static HWY_NOINLINE HWY_MAYBE_UNUSED void ActRow(float* x, int64_t n, const Activation& a) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  switch (a.kind) {
    case Act::kNone:
      return;
    case Act::kSigmoid:
      return ActLoop(x, n, [&](V v) { return SigmoidF(d, v); });
    case Act::kTanh:
      return ActLoop(x, n, [&](V v) { return TanhF(d, v); });
    case Act::kSiLU:
      return ActLoop(x, n, [&](V v) { return SigmoidMulF(d, v, v); });
    case Act::kGelu:
      return ActLoop(x, n, [&](V v) { return GeluF(d, v); });
    case Act::kGeluTanh:
      return ActLoop(x, n, [&](V v) { return GeluTanhF(d, v); });
    default:
      return ActLoop(x, n, [&](V v) { return ApplyAct(d, v, a); });
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
