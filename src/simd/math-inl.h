// Float math on Highway vectors for the elementwise, activation and row kernels, included
// once per SIMD target (inside foreach_target.h's loop, like Highway's own -inl headers).
// Every function takes the whole float range, ±inf and NaN, and returns what the libm
// function would (NaN in, NaN out; overflow to ±inf; underflow to 0), within a few ulp;
// tests/unit/elementwise_kernels_test.cc sweeps them against double-precision libm.
//
// Log and Expm1 build on Highway's contrib/math kernels, which assume a bounded input range;
// the wrappers here clamp and fix up the special values. Exp, Tanh and Erf are our own:
//   e^x = 2^q (1 + r + r^2 Q(r)), r = x - q ln 2 in [-ln2/2, ln2/2], Q of degree 4
//   (x * sigmoid(u): e^r = P(r) instead, P of degree 6, two operations fewer)
//   |x| < 1:  erf(x) = x * P(2x^2 - 1), P of degree 6
//   a >= 0:   erfc(a) = exp(-a^2) * t * F(2t - 1), t = 2.5 / (2.5 + a), F of degree 10
//   tanh(x) = x * T(5.12 x^2 - 1) below |x| = 0.625, T of degree 5
// The coefficients are relative
// least-squares fits on Chebyshev nodes against mpmath (scripts/fit_math.py), rounded to
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

/// Horner's rule: c[0] + s * (c[1] + s * (...)).
template <class D, class V, size_t N>
HWY_INLINE V Poly(D d, V s, const float (&c)[N]) {
  V p = hn::Set(d, c[N - 1]);
  for (size_t i = N - 1; i-- > 0;) p = hn::MulAdd(p, s, hn::Set(d, c[i]));
  return p;
}

// e^r = 1 + r + r^2 Q(r) on r in [-ln2/2, ln2/2], Q of degree 4.
constexpr float kExpQ[] = {0.5f, 0.16666577756404877f, 0.041666943579912186f, 0.00836312584578991f,
                           0.0013893831055611372f};

/// e^x over all floats: 0 below -104 (where every float result underflows), +inf above
/// 88.72, NaN for NaN. e^x = 2^q e^r with q = round(x / ln 2) and r = x - q ln 2 (in two
/// parts, Cody and Waite); 2^q is added to the exponent bits of e^r, in two steps where the
/// result is subnormal.
template <class D, class V>
HWY_INLINE V ExpF(D d, V x) {
  const hn::RebindToSigned<D> di;
  const V hi = hn::Set(d, 88.72283935546875f);  // the largest float whose e^x is finite
  const V lo = hn::Set(d, -104.0f);
  const V magic = hn::Set(d, 12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  const V xc = hn::Min(hn::Max(x, lo), hi);
  const V t = hn::MulAdd(xc, hn::Set(d, 1.44269504088896341f), magic);
  const V q = hn::Sub(t, magic);
  V r = hn::NegMulAdd(q, hn::Set(d, 0.693359375f), xc);  // ln 2 = 0.693359375 - 2.12194440e-4
  r = hn::NegMulAdd(q, hn::Set(d, -2.12194440e-4f), r);
  const V p = hn::Add(hn::MulAdd(hn::Mul(r, r), Poly(d, r, kExpQ), r), hn::Set(d, 1.0f));
  auto qi = hn::Sub(hn::BitCast(di, t), hn::BitCast(di, magic));
  // Below q = -125 the exponent field would underflow: add 64 more, then scale by 2^-64.
  // At q = 128 (x just below log(FLT_MAX)) it would overflow: take 1 off, scale by 2.
  const auto tiny = hn::Lt(qi, hn::Set(di, -125));
  const auto big = hn::Gt(qi, hn::Set(di, 127));
  qi = hn::IfThenElse(tiny, hn::Add(qi, hn::Set(di, 64)), qi);
  qi = hn::IfThenElse(big, hn::Sub(qi, hn::Set(di, 1)), qi);
  V y = hn::BitCast(d, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(qi)));
  const V scale =
      hn::IfThenElse(hn::RebindMask(d, tiny), hn::Set(d, 5.421010862427522e-20f),
                     hn::IfThenElse(hn::RebindMask(d, big), hn::Set(d, 2.0f), hn::Set(d, 1.0f)));
  y = hn::Mul(y, scale);
  y = hn::IfThenElse(hn::Gt(x, hi), hn::Set(d, HUGE_VALF), y);
  y = hn::IfThenZeroElse(hn::Lt(x, lo), y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

/// e^x for x <= 0 (or -inf) only, with results below FLT_MIN (x < -87.34) flushed to 0:
/// ExpF without the overflow, subnormal and NaN handling, for the callers whose argument
/// is never positive and whose tiny results only ever meet larger terms (sigmoid, erfc,
/// softmax). A NaN argument gives an unspecified value: the callers fix it up.
template <class D, class V>
HWY_INLINE V ExpNonPosF(D d, V x) {
  const hn::RebindToSigned<D> di;
  const V lo = hn::Set(d, -87.3365478515625f);  // log(FLT_MIN)
  const V magic = hn::Set(d, 12582912.0f);
  const V xc = hn::Max(x, lo);
  const V t = hn::MulAdd(xc, hn::Set(d, 1.44269504088896341f), magic);
  const V q = hn::Sub(t, magic);
  V r = hn::NegMulAdd(q, hn::Set(d, 0.693359375f), xc);
  r = hn::NegMulAdd(q, hn::Set(d, -2.12194440e-4f), r);
  const V p = hn::Add(hn::MulAdd(hn::Mul(r, r), Poly(d, r, kExpQ), r), hn::Set(d, 1.0f));
  const auto qi = hn::Sub(hn::BitCast(di, t), hn::BitCast(di, magic));
  const V y = hn::BitCast(d, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(qi)));
  return hn::IfThenZeroElse(hn::Lt(x, lo), y);
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

// e^r = P(r) on r in [-ln2/2, ln2/2], degree 6 in r itself (SigmoidMulF's: Horner's rule
// straight to e^r, two operations short of ExpF's 1 + r + r^2 Q(r)).
constexpr float kExpP[] = {1.0f,
                           1.0f,
                           0.49999991059303284f,
                           0.1666642129421234f,
                           0.0416683591902256f,
                           0.008374771103262901f,
                           0.0013829420786350965f};

/// x * sigmoid(u) = x / (1 + e^-u), the SiLU / Swish / tanh-GELU body, in about 21
/// operations where x * SigmoidF(u) takes 28 (0.33 against 0.42 ns a float on one Zen 4
/// core, AVX-512; a third of efficientnet_b0's pointwise convolutions' time went to their
/// SiLU): with e = e^-|u| (kExpP, the scaling by 2^q added straight from the rounding
/// constant's bits), x / (1 + e) for
/// u >= 0 and x e / (1 + e) below, one division. A NaN x gives NaN; u must be NaN only
/// where x is (a NaN u leaves e some finite value: callers whose u can be NaN alone check
/// it); u = -inf gives x * 0; for |u| > 87.3 e is 0 (x or +-0 where the true value is
/// under 1e-36 from it).
template <class D, class V>
HWY_INLINE V SigmoidMulF(D d, V x, V u) {
  const hn::RebindToSigned<D> di;
  const V lo = hn::Set(d, -87.3365478515625f);  // log(FLT_MIN): q = -126 at most
  const V magic = hn::Set(d, 12582912.0f);       // 1.5 * 2^23
  const V a = hn::Or(u, hn::Set(d, -0.0f));      // -|u|
  const V ac = hn::Max(a, lo);
  const V t = hn::MulAdd(ac, hn::Set(d, 1.44269504088896341f), magic);
  const V q = hn::Sub(t, magic);
  V r = hn::NegMulAdd(q, hn::Set(d, 0.693359375f), ac);
  r = hn::NegMulAdd(q, hn::Set(d, -2.12194440e-4f), r);
  const V p = Poly(d, r, kExpP);
  // t's bits are magic's plus q, whose low 9 bits (magic's are 0) shifted by 23 are q in
  // the exponent field, modulo 2^32: 2^q times p without subtracting magic first.
  V e = hn::BitCast(d, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(hn::BitCast(di, t))));
  e = hn::IfThenZeroElse(hn::Lt(a, lo), e);
  const V num = hn::IfThenElse(hn::Lt(u, hn::Zero(d)), hn::Mul(e, x), x);
  return hn::Div(num, hn::Add(hn::Set(d, 1.0f), e));
}

/// 1 / (1 + e^-x), relatively accurate on both sides: with e = e^-|x|, 1 / (1 + e) for
/// x >= 0 and e / (1 + e) below.
template <class D, class V>
HWY_INLINE V SigmoidF(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V e = ExpNonPosF(d, hn::Neg(hn::Abs(x)));
  const V r = hn::Div(one, hn::Add(one, e));
  const V y = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(e, r), r);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

// tanh(x) / x on |x| < 0.625, in s = 5.12 x^2 - 1.
constexpr float kTanhSmall[] = {0.9396094679832458f,     -0.056022126227617264f,
                                0.004048358649015427f,   -0.00029648718191310763f,
                                2.1920439394307323e-05f, -1.6064959709183313e-06f};

/// tanh(x) over all floats; NaN for NaN. Below |x| = 0.625 a polynomial; above it
/// (1 - e) / (1 + e) with e = exp(-2|x|) <= 0.29 (no cancellation) and x's sign.
template <class D, class V>
HWY_INLINE V TanhF(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V a = hn::Abs(x);
  const V small = hn::Mul(
      x, Poly(d, hn::MulAdd(hn::Mul(x, x), hn::Set(d, 5.12f), hn::Set(d, -1.0f)), kTanhSmall));
  const V e = ExpNonPosF(d, hn::Mul(a, hn::Set(d, -2.0f)));
  const V large = hn::CopySignToAbs(hn::Div(hn::Sub(one, e), hn::Add(one, e)), x);
  const V y = hn::IfThenElse(hn::Lt(a, hn::Set(d, 0.625f)), small, large);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

// erf(x) / x on |x| < 1, in s = 2x^2 - 1.
constexpr float kErfSmall[] = {
    0.9654687643051147f,    -0.1405360996723175f,    0.019852494820952415f,  -0.002285419963300228f,
    0.0002175202389480546f, -1.766878631315194e-05f, 1.2261342590136337e-06f};
// erfc(a) exp(a^2) / t on t = 2.5 / (2.5 + a) in (0, 1] (all a >= 0), in s = 2t - 1.
constexpr float kErfc[] = {
    0.4216127395629883f,      0.32186076045036316f,    0.18156574666500092f,
    0.0684998631477356f,      0.011343231424689293f,   -0.003353494219481945f,
    -0.001920545706525445f,   0.00016589478764217347f, 0.0002655726857483387f,
    -1.0948157068924047e-05f, -2.8814874895033427e-05f};

/// erf(x) for |x| < 1 (the small-argument polynomial; any x gives a finite value).
template <class D, class V>
HWY_INLINE V ErfSmallF(D d, V x) {
  const V s = hn::MulAdd(hn::Mul(x, x), hn::Set(d, 2.0f), hn::Set(d, -1.0f));
  return hn::Mul(x, Poly(d, s, kErfSmall));
}

/// erfc(a) for a >= 0 (or +inf), relatively accurate everywhere, given a^2 as sq_hi +
/// sq_lo (sq_lo the rounding error of sq_hi): exp(-a^2) is taken as exp(-sq_hi) * (1 -
/// sq_lo), since a^2 rounded to float alone would cost up to 100 ulp in the tail.
template <class D, class V>
HWY_INLINE V ErfcF(D d, V a, V sq_hi, V sq_lo) {
  const V k = hn::Set(d, 2.5f);
  const V t = hn::Div(k, hn::Add(k, a));
  const V f = Poly(d, hn::MulAdd(t, hn::Set(d, 2.0f), hn::Set(d, -1.0f)), kErfc);
  const V e0 = ExpNonPosF(d, hn::Neg(sq_hi));
  // Past a^2 = 104 exp underflows to 0 (and sq_lo may be inf - inf).
  const V e = hn::IfThenZeroElse(hn::Gt(sq_hi, hn::Set(d, 104.0f)), hn::NegMulAdd(e0, sq_lo, e0));
  return hn::Mul(hn::Mul(e, t), f);
}

/// erf(x) over all floats; NaN for NaN. The small-argument polynomial below |x| = 1 (where
/// 1 - erfc would cancel), 1 - erfc(|x|) with x's sign above.
template <class D, class V>
HWY_INLINE V ErfF(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V a = hn::Abs(x);
  const auto small = hn::Lt(a, one);
  const V ys = ErfSmallF(d, x);
  if (hn::AllTrue(d, small)) return ys;
  const V sq = hn::Mul(a, a);
  const V large = hn::CopySignToAbs(hn::Sub(one, ErfcF(d, a, sq, hn::MulSub(a, a, sq))), x);
  const V y = hn::IfThenElse(small, ys, large);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

/// x * Phi(x) (ONNX Gelu, approximate = "none"): Phi(x) = 1 - erfc(z) / 2 for z = x /
/// sqrt(2) >= 0 and erfc(|z|) / 2 below, which keeps the relative accuracy that
/// 1 + erf(z) would lose for negative x.
template <class D, class V>
HWY_INLINE V GeluF(D d, V x) {
  const V half = hn::Set(d, 0.5f);
  const V a = hn::Abs(hn::Mul(x, hn::Set(d, 0.7071067811865476f)));
  // z^2 = x^2 / 2 from x itself: z carries the rounding of x / sqrt(2).
  const V x2 = hn::Mul(x, x);
  const V c = hn::Mul(half, ErfcF(d, a, hn::Mul(x2, half), hn::Mul(hn::MulSub(x, x, x2), half)));
  return hn::Mul(x, hn::IfThenElse(hn::Lt(x, hn::Zero(d)), c, hn::Sub(hn::Set(d, 1.0f), c)));
}

/// x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) (Gelu, approximate = "tanh"),
/// computed as x * sigmoid(2 * sqrt(2 / pi) * (x + 0.044715 x^3)), the same function.
template <class D, class V>
HWY_INLINE V GeluTanhF(D d, V x) {
  constexpr float k = 2.0f * 0.7978845608028654f;
  const V x2 = hn::Mul(x, x);
  const V u = hn::Mul(x, hn::MulAdd(x2, hn::Set(d, k * 0.044715f), hn::Set(d, k)));
  return SigmoidMulF(d, x, u);
}

/// log(1 + e^x) = max(x, 0) + log1p(e^-|x|).
template <class D, class V>
HWY_INLINE V SoftplusF(D d, V x) {
  const V y = hn::Add(hn::Max(x, hn::Zero(d)), Log1pNonNegF(d, ExpNonPosF(d, hn::Neg(hn::Abs(x)))));
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
