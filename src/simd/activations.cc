// Activation microkernels (see activations.h), compiled once per SIMD target through
// Highway's foreach_target.h; Highway's contrib/math supplies Exp and Tanh.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/activations.cc"
#if defined(__EMSCRIPTEN__) && !defined(HWY_COMPILE_ONLY_STATIC)
#define HWY_COMPILE_ONLY_STATIC 1
#endif
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include "simd/activations.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Applies fn to full vectors, then to the tail through a padded buffer.
template <typename F>
HWY_INLINE void apply(float* x, int64_t n, const F& fn) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(fn(d, hn::LoadU(d, x + i)), d, x + i);
  if (i < n) {
    HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)] = {};
    for (int64_t k = i; k < n; ++k) tmp[k - i] = x[k];
    const auto v = fn(d, hn::Load(d, tmp));
    hn::Store(v, d, tmp);
    for (int64_t k = i; k < n; ++k) x[k] = tmp[k - i];
  }
}

void SigmoidInplace(float* x, int64_t n) {
  apply(x, n, [](auto d, auto v) {
    const auto one = hn::Set(d, 1.0f);
    // exp(-v) overflows to inf for v < -88, giving 1 / inf = 0 as the limit should.
    return hn::Div(one, hn::Add(one, hn::CallExp(d, hn::Neg(v))));
  });
}

void TanhInplace(float* x, int64_t n) {
  apply(x, n, [](auto d, auto v) { return hn::CallTanh(d, v); });
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::simd {

HWY_EXPORT(SigmoidInplace);
HWY_EXPORT(TanhInplace);

void sigmoid_inplace(float* x, int64_t n) {
  HWY_DYNAMIC_DISPATCH(SigmoidInplace)(x, n);
}
void tanh_inplace(float* x, int64_t n) {
  HWY_DYNAMIC_DISPATCH(TanhInplace)(x, n);
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
