// Float math on Highway vectors for the elementwise, activation and row kernels, included
// once per SIMD target (inside foreach_target.h's loop, like Highway's own -inl headers).
// Every function takes the whole float range, ±inf and NaN, and returns what the libm
// function would (NaN in, NaN out; overflow to ±inf; underflow to 0), within a few ulp;
// tests/unit/elementwise_kernels_test.cc sweeps them against double-precision libm.
//
// Exp, Log, Expm1 and Tanh build on Highway's contrib/math kernels, which assume a bounded
// input range; the wrappers here clamp and fix up the special values. Erf is our own:
//   |x| < 1:  erf(x) = x * P(2x^2 - 1), P of degree 6
//   |x| >= 1: erfc(|x|) = exp(-x^2) * t * F(t) / sqrt(pi), t = 1 / |x|, with F of degree 9 in
//             (t - 0.625) / 0.375 on t in [0.25, 1] and of degree 5 in (t - 0.125) / 0.125 on
//             t in [0, 0.25)
// (F(t) = sqrt(pi) z erfc(z) exp(z^2), z = 1 / t). The coefficients are relative
// least-squares fits on Chebyshev nodes against mpmath (scripts/fit_erf.py), rounded to
// float; the fits themselves are within 4e-8 relative (below half a float ulp).
#if defined(ONYX_SIMD_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ONYX_SIMD_MATH_INL_H_
#undef ONYX_SIMD_MATH_INL_H_
#else
#define ONYX_SIMD_MATH_INL_H_
#endif

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// max(m, v) where a NaN on either side gives NaN (folding a window or a row: once m is
/// NaN it stays).
template <class V>
HWY_INLINE V MaxNaN(V m, V v) {
  return hn::IfThenElse(hn::Or(hn::Lt(m, v), hn::IsNaN(v)), v, m);
}

/// min(m, v) where a NaN on either side gives NaN.
template <class V>
HWY_INLINE V MinNaN(V m, V v) {
  return hn::IfThenElse(hn::Or(hn::Lt(v, m), hn::IsNaN(v)), v, m);
}

/// e^x over all floats: 0 below -104 (where every float result underflows), +inf above
/// 88.72, NaN for NaN.
template <class D, class V>
HWY_INLINE V ExpF(D d, V x) {
  const V hi = hn::Set(d, 88.7228394f);  // log(FLT_MAX)
  const V lo = hn::Set(d, -104.0f);
  const V xc = hn::Min(hn::Max(x, lo), hi);
  V y = hn::Exp(d, xc);
  y = hn::IfThenElse(hn::Gt(x, hi), hn::Set(d, HUGE_VALF), y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

/// e^x - 1 over all floats (-1 below -104, +inf above 88.72, NaN for NaN).
template <class D, class V>
HWY_INLINE V Expm1F(D d, V x) {
  const V hi = hn::Set(d, 88.7228394f);
  const V lo = hn::Set(d, -104.0f);
  const V xc = hn::Min(hn::Max(x, lo), hi);
  V y = hn::Expm1(d, xc);
  y = hn::IfThenElse(hn::Gt(x, hi), hn::Set(d, HUGE_VALF), y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

/// Natural logarithm: NaN below 0 and for NaN, -inf at ±0, +inf at +inf.
template <class D, class V>
HWY_INLINE V LogF(D d, V x) {
  const V zero = hn::Zero(d);
  const V inf = hn::Set(d, HUGE_VALF);
  // Highway's Log takes (0, FLT_MAX]; 1 stands in for the special values until fixed up.
  const auto special = hn::Not(hn::And(hn::Gt(x, zero), hn::Lt(x, inf)));
  V y = hn::Log(d, hn::IfThenElse(special, hn::Set(d, 1.0f), x));
  y = hn::IfThenElse(hn::Eq(x, zero), hn::Neg(inf), y);
  y = hn::IfThenElse(hn::Eq(x, inf), inf, y);
  return hn::IfThenElse(hn::Or(hn::Lt(x, zero), hn::IsNaN(x)), hn::Set(d, NAN), y);
}

/// log(1 + x) for x >= 0 (what softplus needs); NaN for NaN.
template <class D, class V>
HWY_INLINE V Log1pNonNegF(D d, V x) {
  const V inf = hn::Set(d, HUGE_VALF);
  const auto big = hn::Ge(x, inf);
  V y = hn::Log1p(d, hn::IfThenZeroElse(big, x));
  y = hn::IfThenElse(big, inf, y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

/// 1 / (1 + e^-x), relatively accurate on both sides: with e = e^-|x|, 1 / (1 + e) for
/// x >= 0 and e / (1 + e) below.
template <class D, class V>
HWY_INLINE V SigmoidF(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V e = ExpF(d, hn::Neg(hn::Abs(x)));
  const V r = hn::Div(one, hn::Add(one, e));
  const V y = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(e, r), r);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

/// tanh(x) over all floats; NaN for NaN.
template <class D, class V>
HWY_INLINE V TanhF(D d, V x) {
  const V y = hn::Tanh(d, x);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

/// Horner's rule: c[0] + s * (c[1] + s * (...)).
template <class D, class V, size_t N>
HWY_INLINE V Poly(D d, V s, const float (&c)[N]) {
  V p = hn::Set(d, c[N - 1]);
  for (size_t i = N - 1; i-- > 0;) p = hn::MulAdd(p, s, hn::Set(d, c[i]));
  return p;
}

// erf(x) / x on |x| < 1, in s = 2x^2 - 1.
constexpr float kErfSmall[] = {
    0.9654687643051147f,    -0.1405360996723175f,    0.019852494820952415f,  -0.002285419963300228f,
    0.0002175202389480546f, -1.766878631315194e-05f, 1.2261342590136337e-06f};
// F(t) on t = 1/|x| in [0.25, 1], in s = (t - 0.625) / 0.375.
constexpr float kErfcMid[] = {0.8676601052284241f,      -0.11404786258935928f,
                              -0.00032289198134094477f, 0.006739198230206966f,
                              -0.002733442233875394f,   0.0006525281351059675f,
                              -5.528678229893558e-05f,  -4.604436253430322e-05f,
                              3.8028367271181196e-05f,  -1.217650333273923e-05f};
// F(t) on t in [0, 0.25), in s = (t - 0.125) / 0.125.
constexpr float kErfcTail[] = {0.9923638105392456f,     -0.014932500198483467f,
                               -0.0068109952844679356f, 0.0006075032288208604f,
                               9.764656715560704e-05f,  -2.4586512154201046e-05f};

/// erf(x) for |x| < 1 (the small-argument polynomial; any x gives a finite value).
template <class D, class V>
HWY_INLINE V ErfSmallF(D d, V x) {
  const V s = hn::MulAdd(hn::Mul(x, x), hn::Set(d, 2.0f), hn::Set(d, -1.0f));
  return hn::Mul(x, Poly(d, s, kErfSmall));
}

/// erfc(a) for a = |x| >= 1 (finite or +inf; values below 1 give garbage, blended away),
/// given a^2 as sq_hi + sq_lo (sq_lo the rounding error of sq_hi): exp(-a^2) is taken as
/// exp(-sq_hi) * (1 - sq_lo), since a^2 rounded to float alone would cost up to 100 ulp of
/// relative error in the tail.
template <class D, class V>
HWY_INLINE V ErfcLargeF(D d, V a, V sq_hi, V sq_lo) {
  const V one = hn::Set(d, 1.0f);
  const V t = hn::Div(one, hn::Max(a, one));
  const V mid =
      Poly(d, hn::Mul(hn::Sub(t, hn::Set(d, 0.625f)), hn::Set(d, 1.0f / 0.375f)), kErfcMid);
  const V tail = Poly(d, hn::Mul(hn::Sub(t, hn::Set(d, 0.125f)), hn::Set(d, 8.0f)), kErfcTail);
  const V f = hn::IfThenElse(hn::Lt(t, hn::Set(d, 0.25f)), tail, mid);
  const V e0 = ExpF(d, hn::Neg(sq_hi));
  // Past a^2 = 104 exp underflows to 0 (and sq_lo may be inf - inf).
  const V e = hn::IfThenZeroElse(hn::Gt(sq_hi, hn::Set(d, 104.0f)), hn::NegMulAdd(e0, sq_lo, e0));
  return hn::Mul(hn::Mul(e, t), hn::Mul(f, hn::Set(d, 0.56418958354775628f)));  // 1/sqrt(pi)
}

/// erf(x) over all floats; NaN for NaN.
template <class D, class V>
HWY_INLINE V ErfF(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V a = hn::Abs(x);
  const V sq = hn::Mul(a, a);
  const V sq_lo = hn::MulSub(a, a, sq);
  const V large = hn::CopySignToAbs(hn::Sub(one, ErfcLargeF(d, a, sq, sq_lo)), x);
  const V y = hn::IfThenElse(hn::Lt(a, one), ErfSmallF(d, x), large);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

/// x * Phi(x) = x / 2 * (1 + erf(x / sqrt(2))) (ONNX Gelu, approximate = "none"). Below
/// x = -sqrt(2) it is x / 2 * erfc(|x| / sqrt(2)), which keeps the relative accuracy
/// that 1 + erf would lose.
template <class D, class V>
HWY_INLINE V GeluF(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V half = hn::Set(d, 0.5f);
  const V z = hn::Mul(x, hn::Set(d, 0.7071067811865476f));
  const V a = hn::Abs(z);
  // z^2 = x^2 / 2 from x itself: z carries the rounding of x / sqrt(2).
  const V x2 = hn::Mul(x, x);
  const V x2_lo = hn::MulSub(x, x, x2);
  const V c = hn::Mul(half, ErfcLargeF(d, a, hn::Mul(x2, half), hn::Mul(x2_lo, half)));
  const V large = hn::IfThenElse(hn::Lt(z, hn::Zero(d)), c, hn::Sub(one, c));
  const V small = hn::MulAdd(half, ErfSmallF(d, z), half);
  return hn::Mul(x, hn::IfThenElse(hn::Lt(a, one), small, large));
}

/// x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) (Gelu, approximate = "tanh"),
/// computed as x * sigmoid(2 * sqrt(2 / pi) * (x + 0.044715 x^3)), the same function.
template <class D, class V>
HWY_INLINE V GeluTanhF(D d, V x) {
  constexpr float k = 2.0f * 0.7978845608028654f;
  const V x2 = hn::Mul(x, x);
  const V u = hn::Mul(x, hn::MulAdd(x2, hn::Set(d, k * 0.044715f), hn::Set(d, k)));
  return hn::Mul(x, SigmoidF(d, u));
}

/// log(1 + e^x) = max(x, 0) + log1p(e^-|x|).
template <class D, class V>
HWY_INLINE V SoftplusF(D d, V x) {
  const V y = hn::Add(hn::Max(x, hn::Zero(d)), Log1pNonNegF(d, ExpF(d, hn::Neg(hn::Abs(x)))));
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

/// x * tanh(softplus(x)) = x * n / (n + 2) with n = e^x (e^x + 2); above x = 20 the factor
/// is 1 in float, so e^x is taken of min(x, 20).
template <class D, class V>
HWY_INLINE V MishF(D d, V x) {
  const V two = hn::Set(d, 2.0f);
  const V e = ExpF(d, hn::Min(x, hn::Set(d, 20.0f)));
  const V n = hn::Mul(e, hn::Add(e, two));
  return hn::Mul(x, hn::Div(n, hn::Add(n, two)));
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#endif  // ONYX_SIMD_MATH_INL_H_
