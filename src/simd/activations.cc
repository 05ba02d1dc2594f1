// Elementwise float functions (see activations.h), compiled once per SIMD target through
// Highway's foreach_target.h; the math is in math-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/activations.cc"
#if defined(__EMSCRIPTEN__) && !defined(HWY_COMPILE_ONLY_STATIC)
#define HWY_COMPILE_ONLY_STATIC 1
#endif
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include "simd/math-inl.h"
#include "simd/tail-inl.h"
// clang-format on

#include "simd/activations.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// y[i] = fn(x[i]): two vectors a step, then one, then the tail through a masked load
/// (its lanes past n are zeros, never stored). In place is safe: each vector is stored
/// after it is loaded, at the same place.
template <typename F>
HWY_INLINE void map(const float* x, float* y, int64_t n, const F& fn) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const auto v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + L);
    hn::StoreU(fn(d, v0), d, y + i);
    hn::StoreU(fn(d, v1), d, y + i + L);
  }
  for (; i + L <= n; i += L) hn::StoreU(fn(d, hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {
    const auto m = hn::FirstN(d, static_cast<size_t>(n - i));
    TailStore(fn(d, TailLoad(m, d, x + i)), m, d, y + i);
  }
}

void UnaryImpl(int32_t op_id, float pa, float pb, const float* x, float* y, int64_t n) {
  using simd::Unary;
  const auto op = static_cast<Unary>(op_id);
  switch (op) {
    case Unary::kIdentity:
      if (x != y)
        for (int64_t i = 0; i < n; ++i) y[i] = x[i];
      return;
    case Unary::kRelu:
      return map(x, y, n,
                 [](auto d, auto v) { return hn::IfThenZeroElse(hn::Lt(v, hn::Zero(d)), v); });
    case Unary::kLeakyRelu:
      return map(x, y, n, [pa](auto d, auto v) {
        return hn::IfThenElse(hn::Lt(v, hn::Zero(d)), hn::Mul(v, hn::Set(d, pa)), v);
      });
    case Unary::kClip:
      return map(x, y, n, [pa, pb](auto d, auto v) {
        const auto lo = hn::Set(d, pa), hi = hn::Set(d, pb);
        v = hn::IfThenElse(hn::Lt(v, lo), lo, v);
        return hn::IfThenElse(hn::Gt(v, hi), hi, v);
      });
    case Unary::kSigmoid:
      return map(x, y, n, [](auto d, auto v) { return SigmoidF(d, v); });
    case Unary::kTanh:
      return map(x, y, n, [](auto d, auto v) { return TanhF(d, v); });
    case Unary::kHardSigmoid:
      return map(x, y, n, [pa, pb](auto d, auto v) {
        const auto one = hn::Set(d, 1.0f), zero = hn::Zero(d);
        const auto u = hn::MulAdd(v, hn::Set(d, pa), hn::Set(d, pb));
        const auto m = hn::IfThenElse(hn::Lt(u, one), u, one);  // std::min(1, u)
        return hn::IfThenElse(hn::Lt(zero, m), m, zero);        // std::max(0, m)
      });
    case Unary::kHardSwish:
      return map(x, y, n, [](auto d, auto v) {
        const auto one = hn::Set(d, 1.0f), zero = hn::Zero(d);
        const auto u = hn::MulAdd(v, hn::Set(d, 1.0f / 6.0f), hn::Set(d, 0.5f));
        const auto m = hn::IfThenElse(hn::Lt(u, one), u, one);
        return hn::Mul(v, hn::IfThenElse(hn::Lt(zero, m), m, zero));
      });
    case Unary::kSwish:
      return map(x, y, n, [pa](auto d, auto v) {
        // (u = alpha x is NaN for alpha 0 at x = inf: NaN, as x * sigmoid(u) gives.)
        const auto u = hn::Mul(v, hn::Set(d, pa));
        return hn::IfThenElse(hn::IsNaN(u), u, SigmoidMulF(d, v, u));
      });
    case Unary::kGelu:
      return map(x, y, n, [](auto d, auto v) { return GeluF(d, v); });
    case Unary::kGeluTanh:
      return map(x, y, n, [](auto d, auto v) { return GeluTanhF(d, v); });
    case Unary::kExp:
      return map(x, y, n, [](auto d, auto v) { return ExpF(d, v); });
    case Unary::kLog:
      return map(x, y, n, [](auto d, auto v) { return LogF(d, v); });
    case Unary::kSqrt:
      return map(x, y, n, [](auto, auto v) { return hn::Sqrt(v); });
    case Unary::kReciprocal:
      return map(x, y, n, [](auto d, auto v) { return hn::Div(hn::Set(d, 1.0f), v); });
    case Unary::kNeg:
      return map(x, y, n, [](auto, auto v) { return hn::Neg(v); });
    case Unary::kAbs:
      return map(x, y, n, [](auto, auto v) { return hn::Abs(v); });
    case Unary::kErf:
      return map(x, y, n, [](auto d, auto v) { return ErfF(d, v); });
    case Unary::kSoftplus:
      return map(x, y, n, [](auto d, auto v) { return SoftplusF(d, v); });
    case Unary::kMish:
      return map(x, y, n, [](auto d, auto v) { return MishF(d, v); });
    case Unary::kElu:
      return map(x, y, n, [pa](auto d, auto v) {
        return hn::IfThenElse(hn::Lt(v, hn::Zero(d)), hn::Mul(hn::Set(d, pa), Expm1F(d, v)), v);
      });
    case Unary::kSelu:
      return map(x, y, n, [pa, pb](auto d, auto v) {
        const auto neg = hn::Mul(hn::Set(d, pa * pb), Expm1F(d, v));
        return hn::IfThenElse(hn::Gt(v, hn::Zero(d)), hn::Mul(v, hn::Set(d, pb)), neg);
      });
    case Unary::kCelu:
      return map(x, y, n, [pa](auto d, auto v) {
        const auto zero = hn::Zero(d);
        const auto e = hn::Mul(hn::Set(d, pa), Expm1F(d, hn::Div(v, hn::Set(d, pa))));
        const auto pos = hn::IfThenElse(hn::Lt(zero, v), v, zero);  // std::max(0, x)
        return hn::Add(pos, hn::IfThenElse(hn::Lt(e, zero), e, zero));
      });
    case Unary::kThresholdedRelu:
      return map(x, y, n,
                 [pa](auto d, auto v) { return hn::IfThenElseZero(hn::Gt(v, hn::Set(d, pa)), v); });
    case Unary::kSoftsign:
      return map(x, y, n,
                 [](auto d, auto v) { return hn::Div(v, hn::Add(hn::Set(d, 1.0f), hn::Abs(v))); });
    case Unary::kFloor:
      return map(x, y, n, [](auto, auto v) { return hn::Floor(v); });
    case Unary::kCeil:
      return map(x, y, n, [](auto, auto v) { return hn::Ceil(v); });
    case Unary::kRound:
      return map(x, y, n, [](auto, auto v) { return hn::Round(v); });
    case Unary::kSign:
      return map(x, y, n, [](auto d, auto v) {
        const auto zero = hn::Zero(d);
        v = hn::IfThenElse(hn::Gt(v, zero), hn::Set(d, 1.0f), v);
        return hn::IfThenElse(hn::Lt(v, zero), hn::Set(d, -1.0f), v);
      });
    case Unary::kSquare:
      return map(x, y, n, [](auto, auto v) { return hn::Mul(v, v); });
    case Unary::kCube:
      return map(x, y, n, [](auto, auto v) { return hn::Mul(hn::Mul(v, v), v); });
    case Unary::kSqrtPow:
      return map(x, y, n, [](auto d, auto v) {
        const auto inf = hn::Set(d, HUGE_VALF);
        return hn::IfThenElse(hn::Eq(v, hn::Neg(inf)), inf, hn::Sqrt(v));
      });
    case Unary::kOne:
      return map(x, y, n, [](auto d, auto) { return hn::Set(d, 1.0f); });
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::simd {

HWY_EXPORT(UnaryImpl);

void unary(Unary op, UnaryParams p, const float* x, float* y, int64_t n) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(UnaryImpl)(static_cast<int32_t>(op), p.a, p.b, x, y, n);
}

void sigmoid_inplace(float* x, int64_t n) {
  unary(Unary::kSigmoid, {}, x, x, n);
}
void tanh_inplace(float* x, int64_t n) {
  unary(Unary::kTanh, {}, x, x, n);
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
