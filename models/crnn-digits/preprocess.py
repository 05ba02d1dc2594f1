"""Preprocessing of the digit reader, defined once.

This module is the reference definition; `src/image/` is its C++ twin (used by
`onyx ocr`, the bindings and the browser), and a test feeds the same PNG files through
both. Only numpy and PIL (for PNG decoding) are needed: no torch.

The steps, language-agnostic (MODEL.md states the same):
1. Decode to 8-bit RGBA (16-bit samples keep their high byte; palette, gray and
   gray+alpha are expanded; tRNS applied as the PNG specification says). PIL, used
   here, departs from the specification for tRNS on 1/2/4/16-bit gray and 16-bit RGB
   images; the C++ decoder follows the specification (tests/image/preprocess_test.py).
2. Gray = (299 R + 587 G + 114 B + 500) div 1000, in integers; then composite over
   white: v = (gray * A + 255 * (255 - A) + 127) div 255.
3. Resize to height 32 keeping the aspect ratio: width = round(w * 32 / h) with halves
   rounded up, i.e. (2 * w * 32 + h) div (2 * h), at least MIN_WIDTH.
   Separable triangle (linear) filter with half-pixel centres, widened by the scale
   factor when shrinking (antialiasing), taps outside the image dropped and the rest
   renormalised: output pixel o of an axis with n inputs and m outputs, s = m / n,
   support = max(1, 1 / s), centre c = (o + 0.5) / s, input pixel i (centre i + 0.5)
   weighs max(0, 1 - |i + 0.5 - c| / support), for i in [floor(c - support),
   ceil(c + support)) clipped to [0, n). The vertical pass (h -> 32) first, then the
   horizontal one, in float64.
4. Scale to [0, 1] (divide by 255), normalise (x - 0.5) / 0.5, float32.
5. Layout NCHW: [1, 1, 32, width].
"""
import numpy as np
from PIL import Image

HEIGHT = 32
MIN_WIDTH = 16
MEAN = 0.5
STD = 0.5


def decode_rgba(path):
    """PNG file -> uint8 [H, W, 4]."""
    with Image.open(path) as im:
        im.load()
        if im.mode in ("I;16", "I;16B", "I;16L", "I"):
            # 16-bit gray: keep the high byte, as the C++ decoder does.
            g = (np.asarray(im, dtype=np.uint32) >> 8).astype(np.uint8)
            return np.dstack([g, g, g, np.full_like(g, 255)])
        return np.asarray(im.convert("RGBA"), dtype=np.uint8)


def to_gray(rgba):
    """uint8 [H, W, 4] -> uint8 [H, W], alpha composited over white."""
    c = rgba.astype(np.int64)
    gray = (299 * c[..., 0] + 587 * c[..., 1] + 114 * c[..., 2] + 500) // 1000
    a = c[..., 3]
    return ((gray * a + 255 * (255 - a) + 127) // 255).astype(np.uint8)


def target_width(w, h):
    return max(MIN_WIDTH, (2 * w * HEIGHT + h) // (2 * h))


def resize_weights(n, m):
    """Dense [m, n] matrix of the filter taps of one axis."""
    s = m / n
    support = max(1.0, 1.0 / s)
    w = np.zeros((m, n), dtype=np.float64)
    for o in range(m):
        c = (o + 0.5) / s
        lo = max(0, int(np.floor(c - support)))
        hi = min(n, int(np.ceil(c + support)))
        i = np.arange(lo, hi)
        t = np.maximum(0.0, 1.0 - np.abs(i + 0.5 - c) / support)
        w[o, lo:hi] = t / t.sum()
    return w


def resize_gray(gray, width=None):
    """uint8 [h, w] -> float64 [32, width] in [0, 255]."""
    h, w = gray.shape
    if width is None:
        width = target_width(w, h)
    rows = resize_weights(h, HEIGHT) @ gray.astype(np.float64)  # [32, w]
    return rows @ resize_weights(w, width).T                      # [32, width]


def normalize(resized):
    return ((resized / 255.0 - MEAN) / STD).astype(np.float32)


def preprocess_gray(gray):
    """uint8 [h, w] -> float32 [1, 1, 32, W]."""
    return normalize(resize_gray(gray))[None, None]


def preprocess_file(path):
    """PNG path -> float32 [1, 1, 32, W]."""
    return preprocess_gray(to_gray(decode_rgba(path)))
