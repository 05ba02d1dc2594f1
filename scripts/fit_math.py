#!/usr/bin/env python3
"""Fits the polynomials of src/simd/math-inl.h (run with Debian's python3: numpy, mpmath).

Relative least squares on Chebyshev nodes, each polynomial in a variable s centred on its
interval, against mpmath at 30 digits; prints the coefficients rounded to float and the
largest relative error of the fit (in double) on a dense grid.
  erf(x) / x                   = P(s),  s = 2 x^2 - 1,  x in [0, 1]
  erfc(a) exp(a^2) / t         = F(s),  s = 2 t - 1,    t = 2.5 / (2.5 + a) in (0, 1], a >= 0
  (e^r - 1 - r) / r^2          = Q(r),  in r itself,    r in [-ln2/2, ln2/2]
  e^r                          = P(r),  in r itself,    r in [-ln2/2, ln2/2] (SigmoidMulF)
  tanh(x) / x                  = T(s),  s = 5.12 x^2 - 1,  x in [0, 0.625]
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 30


def erf_over_x(u):
    x = mp.sqrt(mp.mpf(u))
    return float(mp.erf(x) / x) if x > 0 else float(2 / mp.sqrt(mp.pi))


def erfc_scaled(t):
    t = mp.mpf(t)
    if t == 0:
        return float(1 / (mp.mpf(2.5) * mp.sqrt(mp.pi)))
    a = mp.mpf(2.5) / t - mp.mpf(2.5)
    return float(mp.erfc(a) * mp.exp(a * a) / t)


def tanh_over_x(u):
    x = mp.sqrt(mp.mpf(u))
    return float(mp.tanh(x) / x) if x > 0 else 1.0


def exp_rest(r):
    r = mp.mpf(r)
    return 0.5 if r == 0 else float((mp.exp(r) - 1 - r) / (r * r))


def exp_r(r):
    return float(mp.exp(mp.mpf(r)))


def fit(fun, a, b, deg, centred=True, nodes=1500):
    k = np.arange(nodes)
    x = (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / nodes)
    f = np.array([fun(v) for v in x])
    mid, half = ((a + b) / 2, (b - a) / 2) if centred else (0.0, 1.0)
    s = (x - mid) / half
    vander = np.vander(s, deg + 1, increasing=True)
    c, *_ = np.linalg.lstsq(vander / f[:, None], np.ones_like(f), rcond=None)
    grid = np.linspace(a, b, 2001)
    ref = np.array([fun(v) for v in grid])
    got = np.polyval(c[::-1], (grid - mid) / half)
    return [float(np.float32(v)) for v in c], float(np.max(np.abs(got / ref - 1)))


half_ln2 = float(mp.log(2) / 2)
for name, fun, a, b, deg, centred in (("kErfSmall", erf_over_x, 0.0, 1.0, 6, True),
                                      ("kErfc", erfc_scaled, 0.0, 1.0, 10, True),
                                      ("kExpQ", exp_rest, -half_ln2, half_ln2, 4, False),
                                      ("kExpP", exp_r, -half_ln2, half_ln2, 6, False),
                                      ("kTanhSmall", tanh_over_x, 0.0, 0.390625, 5, True)):
    coeffs, err = fit(fun, a, b, deg, centred)
    print(f"{name}: max relative error {err:.3g}")
    print("  " + ", ".join(f"{c!r}f" for c in coeffs))
