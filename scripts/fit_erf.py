#!/usr/bin/env python3
"""Fits the erf/erfc polynomials of src/simd/math-inl.h (run with Debian's python3: numpy, mpmath).

Relative least squares on Chebyshev nodes, each polynomial in a variable s centred on its
interval, against mpmath at 30 digits; prints the coefficients rounded to float and the
largest relative error of the fit (in double) on a dense grid.
  erf(x) / x           = P(s),  s = 2 x^2 - 1,           x in [0, 1]
  F(t) = sqrt(pi) z erfc(z) exp(z^2), t = 1 / z:
                       = Q(s),  s = (t - 0.625) / 0.375,  t in [0.25, 1]
                       = R(s),  s = (t - 0.125) / 0.125,  t in [0, 0.25]
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 30


def erf_over_x(u):
    x = mp.sqrt(mp.mpf(u))
    return float(mp.erf(x) / x) if x > 0 else float(2 / mp.sqrt(mp.pi))


def erfc_scaled(t):
    if t == 0:
        return 1.0
    z = 1 / mp.mpf(t)
    return float(mp.sqrt(mp.pi) * z * mp.erfc(z) * mp.exp(z * z))


def fit(fun, a, b, deg, nodes=1500):
    k = np.arange(nodes)
    x = (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / nodes)
    f = np.array([fun(v) for v in x])
    s = (x - (a + b) / 2) / ((b - a) / 2)
    vander = np.vander(s, deg + 1, increasing=True)
    c, *_ = np.linalg.lstsq(vander / f[:, None], np.ones_like(f), rcond=None)
    grid = np.linspace(a, b, 2001)
    ref = np.array([fun(v) for v in grid])
    got = np.polyval(c[::-1], (grid - (a + b) / 2) / ((b - a) / 2))
    return [float(np.float32(v)) for v in c], float(np.max(np.abs(got / ref - 1)))


for name, fun, a, b, deg in (("kErfSmall", erf_over_x, 0.0, 1.0, 6),
                             ("kErfcMid", erfc_scaled, 0.25, 1.0, 9),
                             ("kErfcTail", erfc_scaled, 0.0, 0.25, 5)):
    coeffs, err = fit(fun, a, b, deg)
    print(f"{name}: max relative error {err:.3g}")
    print("  " + ", ".join(f"{c!r}f" for c in coeffs))
