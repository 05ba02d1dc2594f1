"""Synthetic training crops of the digit reader v2: printed digit strings and drawn ones.

Wider than v1's synth.py in every direction README.md's analysis found v1 to miss:
- Printed (50%): 1 to 10 digits (a quarter with runs of repeats) in about 150 faces
  from Debian's font packages, drawn by PIL one character at a time, grouped as sans,
  serif, monospace, condensed and handwriting-style (dkg, Breip, Rufscript, Humor Sans,
  SJ fonts, Kristi, BWHT) and sampled by group; bold by stroking, italic by shear.
  The ink fills 35-98% of the crop's height; each side's margin is tight, normal or
  loose on its own; spacing dense (touching), natural or sparse; the crop squeezed or
  stretched horizontally (0.65-1.4) to cover narrow and wide digits.
- Drawn (50%): digits as a person draws them on a canvas (handwriting.py: random
  allographs of each digit, a hand following them, pointer events, a canvas app's
  lines), cropped with the ink filling 30-99% of the height and margins of their own,
  three quarters on a plain white canvas.
- Finishing, for both: paper and ink levels (a fifth at low contrast), uneven lighting
  (gradients, vignettes, shadow bands), paper texture, underlines, cell borders and grid
  lines, blur, noise, pixelation, binarisation and JPEG compression (less blur, JPEG and
  low contrast on the plain canvases).

The font families of eval_printed.py and the stroke model of eval_drawn.py are used
nowhere here. `make_crop(rng)` returns (uint8 [h, w], text); the same seed and fonts
give the same crops. Needs numpy and PIL only.
"""
import glob
import io
import os

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

import handwriting

ALPHABET = "0123456789"
MAX_LEN = 10
DRAWN_SHARE = 0.5

# (glob, group or None to tell from the file name). Not here, being held out for
# eval_printed.py: Open Sans, Go, Karla, Cabin, Linux Libertine and Biolinum, Charis
# SIL, JetBrains Mono, mononoki, Yanone Kaffeesatz, Comic Neue (and Hack; Lato is left out of
# eval_printed.py instead, Carlito here being Lato with other metrics).
FONT_GLOBS = [
    ("/usr/share/fonts/truetype/dejavu/*.ttf", None),
    ("/usr/share/fonts/truetype/liberation2/*.ttf", None),
    ("/usr/share/fonts/truetype/liberation/LiberationSansNarrow-*.ttf", "condensed"),
    ("/usr/share/fonts/truetype/roboto/unhinted/RobotoTTF/*.ttf", None),
    ("/usr/share/fonts/truetype/roboto/unhinted/*.ttf", None),
    ("/usr/share/fonts/truetype/freefont/*.ttf", None),
    ("/usr/share/fonts/truetype/noto/NotoMono-Regular.ttf", "mono"),
    ("/usr/share/fonts/truetype/noto/NotoSansMono-*.ttf", "mono"),
    ("/usr/share/fonts/truetype/inconsolata/*.otf", "mono"),
    ("/usr/share/fonts/truetype/crosextra/Carlito-*.ttf", "sans"),
    ("/usr/share/fonts/truetype/crosextra/Caladea-*.ttf", "serif"),
    ("/usr/share/fonts/opentype/urw-base35/*.otf", None),
    ("/usr/share/fonts/opentype/cantarell/*.otf", "sans"),
    ("/usr/share/fonts/opentype/roboto/slab/*.otf", "serif"),
    ("/usr/share/fonts/truetype/firacode/*.ttf", "mono"),
    ("/usr/share/fonts/opentype/ebgaramond/*.otf", "serif"),
    ("/usr/share/fonts/truetype/gnutypewriter/*.ttf", "mono"),
    ("/usr/share/fonts/truetype/fifthhorseman/*.ttf", "handwriting"),
    ("/usr/share/fonts/truetype/breip/*.ttf", "handwriting"),
    ("/usr/share/fonts/truetype/rufscript/*.ttf", "handwriting"),
    ("/usr/share/fonts/truetype/humor-sans/*.ttf", "handwriting"),
    ("/usr/share/fonts/truetype/sjfonts/*.ttf", "handwriting"),
    ("/usr/share/fonts/truetype/kristi/*.ttf", "handwriting"),
    ("/usr/share/fonts/opentype/bwht/*.otf", "handwriting"),
]
PACKAGES = ("fonts-dejavu-core fonts-liberation2 fonts-liberation fonts-roboto-unhinted fonts-freefont-ttf "
            "fonts-noto-mono fonts-inconsolata fonts-crosextra-carlito fonts-crosextra-caladea fonts-urw-base35 "
            "fonts-cantarell fonts-roboto-slab fonts-firacode fonts-ebgaramond fonts-gnutypewriter "
            "fonts-dkg-handwriting fonts-breip fonts-rufscript fonts-humor-sans fonts-sjfonts fonts-kristi fonts-bwht")
# Symbol fonts and hairline weights do not draw readable digits.
_SKIP = ("MathTeX", "ExtraLight", "Thin", "Hairline", "D050000L", "StandardSymbolsPS")
GROUPS = ("sans", "serif", "mono", "condensed", "handwriting")
GROUP_SHARE = (0.27, 0.17, 0.2, 0.16, 0.2)


def _group_of(path):
    name = os.path.basename(path)
    if "Condensed" in name or "Narrow" in name:
        return "condensed"
    if "Mono" in name:
        return "mono"
    if any(s in name for s in ("Serif", "Roman", "C059", "P052", "Bookman", "Z003")):
        return "serif"
    return "sans"


def font_files():
    """{group: sorted font paths}; exits naming the packages when a group is empty."""
    groups = {g: set() for g in GROUPS}
    for pattern, group in FONT_GLOBS:
        for f in glob.glob(pattern):
            if not any(s in f for s in _SKIP):
                groups[group or _group_of(f)].add(f)
    out = {g: sorted(v) for g, v in groups.items()}
    empty = [g for g, v in out.items() if not v]
    if empty:
        raise SystemExit(f"synth_v2.py: no fonts for {', '.join(empty)}; install {PACKAGES} (scripts/setup.sh does)")
    return out


_FONTS = None
_FONT_CACHE = {}


def _font(path, size):
    key = (path, size)
    if key not in _FONT_CACHE:
        _FONT_CACHE[key] = ImageFont.truetype(path, size)
    return _FONT_CACHE[key]


def random_text(rng):
    n = int(rng.integers(1, MAX_LEN + 1))
    digits = [int(d) for d in rng.integers(0, len(ALPHABET), n)]
    if n > 1 and rng.random() < 0.25:
        for k in range(1, n):
            if rng.random() < 0.5:
                digits[k] = digits[k - 1]
    return "".join(ALPHABET[d] for d in digits)


def _crop_around_ink(rng, layer, ratio_range, side_loose):
    """Crops a float alpha layer around its ink: the ink fills `ratio_range` of the height,
    each side margin tight, normal or loose (up to `side_loose` ink heights)."""
    ys, xs = np.nonzero(layer > 0.15)
    if len(xs) == 0:
        return layer
    top, bottom, left, right = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    ih = bottom - top
    ratio = rng.uniform(*ratio_range)
    spare = ih * (1.0 / ratio - 1.0)
    mt = int(round(rng.uniform(0, 1) * spare))
    mb = int(round(spare)) - mt
    side = []
    for _ in range(2):
        m = rng.choice(3, p=[0.35, 0.4, 0.25])
        side.append(int(round([rng.uniform(0, 0.06), rng.uniform(0.06, 0.6), rng.uniform(0.6, side_loose)][m] * ih)))
    y0, y1, x0, x1 = top - mt, bottom + mb, left - side[0], right + side[1]
    pad = max(0, -y0, -x0, y1 - layer.shape[0], x1 - layer.shape[1])
    if pad:
        layer = np.pad(layer, pad)
        y0, y1, x0, x1 = y0 + pad, y1 + pad, x0 + pad, x1 + pad
    return layer[y0:y1, x0:x1]


def _printed(rng, text):
    """Float alpha [h, w] of the text in a font, cropped with margins (before the final resize)."""
    group = GROUPS[int(rng.choice(len(GROUPS), p=GROUP_SHARE))]
    paths = _FONTS[group]
    path = paths[int(rng.integers(len(paths)))]
    size = int(rng.integers(24, 64))
    font = _font(path, size)
    mode = rng.choice(3, p=[0.3, 0.35, 0.35])
    spacing = [rng.uniform(-0.12, 0.0), rng.uniform(-0.02, 0.04), rng.uniform(0.08, 0.7)][mode] * size
    bold = int(round(size * rng.uniform(0.02, 0.05))) if rng.random() < 0.15 else 0
    advances = [font.getlength(c) for c in text]
    ascent, descent = font.getmetrics()
    text_w = int(np.ceil(sum(advances) + max(spacing, 0) * (len(text) + 1) + size * 0.2 * len(text))) + 2 * bold + 4
    pad = int(size * 0.5)
    layer = Image.new("L", (text_w + 2 * pad, ascent + descent + 2 * pad), 0)
    draw = ImageDraw.Draw(layer)
    x = float(pad)
    for c, adv in zip(text, advances):
        draw.text((x + rng.uniform(-0.5, 0.5), pad + rng.uniform(-0.03, 0.03) * size), c, fill=255, font=font,
                  stroke_width=bold, stroke_fill=255)
        x += adv + bold + spacing + rng.normal(0, 0.02) * size
    shear = rng.uniform(-0.35, 0.35) if rng.random() < 0.4 else rng.uniform(-0.05, 0.05)
    lw, lh = layer.size
    layer = layer.transform((lw + int(abs(shear) * lh), lh), Image.AFFINE,
                            (1, shear, -abs(shear) * lh if shear > 0 else 0, 0, 1, 0), resample=Image.BILINEAR)
    if rng.random() < 0.25:
        layer = layer.rotate(rng.uniform(-3, 3), resample=Image.BILINEAR, expand=True)
    return _crop_around_ink(rng, np.asarray(layer, np.float32) / 255.0, (0.35, 0.98), 2.5)


def _drawn(rng, text):
    """Float alpha [h, w] of the digits drawn as pen strokes (handwriting.py), cropped with margins."""
    return _crop_around_ink(rng, handwriting.draw(rng, text), (0.3, 0.99), 3.0)


def _background(rng, h, w, level):
    """Float paper around `level`: gradients, a vignette or a shadow band, texture."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    xn, yn = x / max(w - 1, 1) - 0.5, y / max(h - 1, 1) - 0.5
    g = level + rng.uniform(-25, 25) * xn + rng.uniform(-20, 20) * yn
    light = rng.random()
    if light < 0.12:  # strong gradient
        g += rng.uniform(-70, 70) * xn + rng.uniform(-50, 50) * yn
    elif light < 0.22:  # vignette
        g -= rng.uniform(20, 70) * (xn ** 2 + yn ** 2) * 2
    elif light < 0.3:  # a shadow band across part of the crop
        edge = rng.uniform(0.2, 0.8) * w
        z = np.clip((x - edge) / max(1.0, rng.uniform(0.5, 6)) * rng.choice([-1, 1]), -50, 50)
        g -= rng.uniform(15, 55) / (1 + np.exp(-z))
    if rng.random() < 0.5:  # paper-like texture
        small = rng.normal(0, rng.uniform(3, 12), (max(2, h // 8), max(2, w // 8))).astype(np.float32)
        g += np.asarray(Image.fromarray(small, mode="F").resize((w, h), Image.BILINEAR))
    return g


def _finish(rng, alpha, drawn):
    """Resizes an alpha crop to its final size and prints it on paper: uint8 [h, w]."""
    h0, w0 = alpha.shape
    plain = drawn and rng.random() < 0.75  # a canvas: white, nothing else
    if drawn and h0 >= 14 and rng.random() < 0.5:
        th = h0  # the canvas's own pixels
    else:
        th = int(rng.integers(14, 129 if drawn else 97))
    wf = float(np.exp(rng.uniform(np.log(0.8), np.log(1.25)) if drawn else rng.uniform(np.log(0.65), np.log(1.4))))
    tw = max(4, int(round(w0 * th / h0 * wf)))
    alpha = np.asarray(Image.fromarray(alpha, mode="F").resize((tw, th), Image.BILINEAR))
    if rng.random() < (0.15 if plain else 0.4):
        a8 = Image.fromarray(np.clip(alpha * 255 + 0.5, 0, 255).astype(np.uint8), mode="L")
        alpha = np.asarray(a8.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.4))), np.float32) / 255.0
    alpha = np.clip(alpha, 0, 1)

    low = rng.random() < (0.1 if plain else 0.2)
    paper = 255.0 if plain else rng.uniform(170, 255)
    if low:
        ink = paper - rng.uniform(35, 90)
    else:
        ink = rng.uniform(0, 130) if plain else rng.uniform(0, max(0.0, paper - 90))
    img = np.full((th, tw), paper, np.float32) if plain else _background(rng, th, tw, paper)
    if not plain:
        ys, xs = np.nonzero(alpha > 0.3)
        if len(ys) and rng.random() < 0.12:  # underline
            t = int(rng.integers(1, 4))
            r = min(th - 1, ys.max() + int(rng.integers(0, 4)))
            c0, c1 = max(0, xs.min() - int(rng.integers(0, 6))), min(tw, xs.max() + int(rng.integers(0, 6)))
            img[max(0, r - t + 1):r + 1, c0:c1] = rng.uniform(0, paper - 40)
        for _ in range(int(rng.integers(1, 5)) if rng.random() < 0.3 else 0):  # cell borders
            shade = rng.uniform(0, paper - 40)
            t = int(rng.integers(1, 3))
            off = int(rng.integers(0, 4))
            side = int(rng.integers(4))
            if side == 0:
                img[off:off + t, :] = shade
            elif side == 1:
                img[max(0, th - off - t):th - off, :] = shade
            elif side == 2:
                img[:, off:off + t] = shade
            else:
                img[:, max(0, tw - off - t):tw - off] = shade
    img = img * (1 - alpha) + ink * alpha
    if not plain:
        img += rng.normal(0, rng.uniform(0, 10), img.shape) if rng.random() < 0.6 else 0
    out = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    k = rng.random()
    if k < 0.08 and th > 20:  # pixelated: reduced and enlarged again
        f = rng.uniform(0.35, 0.7)
        small = Image.fromarray(out).resize((max(2, int(tw * f)), max(2, int(th * f))), Image.BILINEAR)
        out = np.asarray(small.resize((tw, th), Image.NEAREST if rng.random() < 0.5 else Image.BILINEAR))
    elif k < 0.13:  # binarised
        out = np.where(out < (paper + ink) / 2, int(ink), int(paper)).astype(np.uint8)
    if rng.random() < (0.1 if plain else 0.3):
        buf = io.BytesIO()
        Image.fromarray(out).save(buf, format="JPEG", quality=int(rng.integers(15, 91)))
        out = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("L"))
    return out


def make_crop(rng, text=None, kind=None):
    """One synthetic crop: (uint8 [h, w], text). `kind` forces "printed" or "drawn"."""
    global _FONTS
    if _FONTS is None:
        _FONTS = font_files()
    if text is None:
        text = random_text(rng)
    drawn = rng.random() < DRAWN_SHARE if kind is None else kind == "drawn"
    alpha = _drawn(rng, text) if drawn else _printed(rng, text)
    return _finish(rng, alpha, drawn), text
