"""Synthetic crops of digit strings, like the cells of a measurement table.

Each crop is a grayscale uint8 image of a random height (18 to 72 px) holding a string of
1 to 10 digits in one of several fonts from Debian's font packages, with random size,
spacing, shift, slant, blur, noise, contrast and a textured background that may carry
parts of the cell's border lines. `make_crop(rng)` returns (image, text); the same seed
gives the same crops. Needs numpy and PIL only.
"""
import glob
import os

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

ALPHABET = "0123456789"
MAX_LEN = 10

FONT_DIRS = ["/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/truetype/liberation2",
             "/usr/share/fonts/truetype/roboto/unhinted/RobotoTTF",
             "/usr/share/fonts/truetype/roboto/unhinted"]
# Symbol fonts and hairline weights do not draw readable digits.
_SKIP = ("MathTeX", "ExtraLight", "Thin")


def font_files():
    files = []
    for d in FONT_DIRS:
        files += [f for f in sorted(glob.glob(os.path.join(d, "*.ttf"))) if not any(s in f for s in _SKIP)]
    files = sorted(set(files))
    if not files:
        raise SystemExit("synth.py: no fonts found; install fonts-dejavu-core fonts-liberation2 fonts-roboto-unhinted "
                         "(scripts/setup.sh does)")
    return files


_FONTS = None
_FONT_CACHE = {}


def _font(path, size):
    key = (path, size)
    if key not in _FONT_CACHE:
        _FONT_CACHE[key] = ImageFont.truetype(path, size)
    return _FONT_CACHE[key]


def random_text(rng):
    n = int(rng.integers(1, MAX_LEN + 1))
    return "".join(ALPHABET[i] for i in rng.integers(0, len(ALPHABET), n))


def _background(rng, h, w, level):
    """Float image around `level` with a gradient, blotches and pixel noise."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    g = level + rng.uniform(-25, 25) * (x / max(w - 1, 1) - 0.5) + rng.uniform(-20, 20) * (y / max(h - 1, 1) - 0.5)
    if rng.random() < 0.5:  # paper-like low-frequency texture
        small = rng.normal(0, rng.uniform(3, 12), (max(2, h // 8), max(2, w // 8))).astype(np.float32)
        g += np.asarray(Image.fromarray(small, mode="F").resize((w, h), Image.BILINEAR))
    return g


def make_crop(rng, text=None):
    """One synthetic crop: (uint8 [h, w], text)."""
    global _FONTS
    if _FONTS is None:
        _FONTS = font_files()
    if text is None:
        text = random_text(rng)
    path = _FONTS[int(rng.integers(len(_FONTS)))]
    size = int(rng.integers(22, 56))
    font = _font(path, size)
    spacing = rng.uniform(-0.04, 0.25) * size

    # Lay the characters out one by one so the spacing varies.
    advances = [font.getlength(c) for c in text]
    ascent, descent = font.getmetrics()
    text_w = int(np.ceil(sum(advances) + spacing * (len(text) - 1))) + 2
    text_h = ascent + descent
    pad = int(size * 0.4)
    layer = Image.new("L", (text_w + 2 * pad, text_h + 2 * pad), 0)
    draw = ImageDraw.Draw(layer)
    x = float(pad)
    for c, adv in zip(text, advances):
        draw.text((x + rng.uniform(-0.5, 0.5), pad + rng.uniform(-0.03, 0.03) * size), c, fill=255, font=font)
        x += adv + spacing

    # Slant (shear) and a small rotation.
    shear = rng.uniform(-0.25, 0.25)
    lw, lh = layer.size
    layer = layer.transform((lw + int(abs(shear) * lh), lh), Image.AFFINE,
                            (1, shear, -abs(shear) * lh if shear > 0 else 0, 0, 1, 0), resample=Image.BILINEAR)
    if rng.random() < 0.3:
        layer = layer.rotate(rng.uniform(-2.5, 2.5), resample=Image.BILINEAR, expand=True)

    # Crop to the ink with random margins (tight crops and generous ones).
    ink = np.asarray(layer)
    ys, xs = np.nonzero(ink > 40)
    if len(xs) == 0:
        ys, xs = np.array([0, lh - 1]), np.array([0, lw - 1])
    top, bottom, left, right = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    ih = bottom - top
    mt, mb = (int(rng.uniform(0.05, 0.45) * ih) for _ in range(2))
    ml, mr = (int(rng.uniform(0.0, 0.8) * ih) for _ in range(2))
    top, bottom = top - mt, bottom + mb
    left, right = left - ml, right + mr
    alpha = np.zeros((bottom - top, right - left), np.float32)
    sy0, sx0 = max(top, 0), max(left, 0)
    sy1, sx1 = min(bottom, lh), min(right, lw)
    alpha[sy0 - top:sy1 - top, sx0 - left:sx1 - left] = ink[sy0:sy1, sx0:sx1] / 255.0

    # Target height 18..72 px (the reader resizes to 32).
    h0, w0 = alpha.shape
    th = int(rng.integers(18, 73))
    tw = max(4, int(round(w0 * th / h0 * rng.uniform(0.85, 1.15))))
    alpha = np.asarray(Image.fromarray(alpha, mode="F").resize((tw, th), Image.BILINEAR))
    if rng.random() < 0.5:
        a8 = Image.fromarray(np.clip(alpha * 255 + 0.5, 0, 255).astype(np.uint8), mode="L")
        alpha = np.asarray(a8.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.3))), np.float32) / 255.0

    # Ink darker than the paper, with random contrast.
    paper = rng.uniform(150, 255)
    ink_level = rng.uniform(0, max(0.0, paper - 70))
    img = _background(rng, th, tw, paper)
    # Parts of the cell's border lines near the edges.
    for _ in range(int(rng.integers(0, 3))):
        shade = rng.uniform(0, paper - 40)
        t = int(rng.integers(1, 3))
        if rng.random() < 0.5:
            r = int(rng.integers(0, 3)) if rng.random() < 0.5 else th - 1 - int(rng.integers(0, 3))
            img[max(0, r - t + 1):r + 1, :] = shade
        else:
            c = int(rng.integers(0, 3)) if rng.random() < 0.5 else tw - 1 - int(rng.integers(0, 3))
            img[:, max(0, c - t + 1):c + 1] = shade
    img = img * (1 - alpha) + ink_level * alpha
    img += rng.normal(0, rng.uniform(0, 12), img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8), text
