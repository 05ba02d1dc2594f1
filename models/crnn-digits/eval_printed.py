#!/usr/bin/python3
"""The independent printed evaluation set of the digit reader: clean crops of printed
digit strings drawn by Cairo (python3-cairo), not by PIL as the training generators
(synth.py, synth_v2.py) are, in font families that no training generator uses.

    /usr/bin/python3 models/crnn-digits/eval_printed.py --out /tmp/printed \
        [--count 1200] [--model models/crnn-digits/v2/crnn-digits-v2-opset17.onnx ...]

Each crop: a string of 1 to 10 digits (a quarter of them with runs of repeated digits),
one held-out face (Open Sans, Go, Karla, Cabin, Linux Biolinum, Charis SIL, Linux
Libertine, Go Mono, JetBrains Mono, mononoki, Open Sans Condensed, Yanone
Kaffeesatz, Comic Neue; regular, bold, italic where the family has them), the ink 40-95%
of the crop's height, crop heights 16-96 px, tight, normal or loose side margins set
independently, natural, tight or loose letter spacing, Cairo's own antialiasing and
hinting (a few crops binary, unantialiased), dark ink on light paper with a fifth of
them at low contrast, and a few with cell borders, a slight blur or JPEG compression.
The same seed and fonts give the same crops. labels.tsv records per crop the face, the
text height ratio, the character width after the resize to height 32, the spacing and
the CTC frames per character, for the analysis in README.md.
"""
import io
import os
import subprocess
import sys

import cairo
import numpy as np
from PIL import Image, ImageFilter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import evalkit  # noqa: E402
import preprocess  # noqa: E402

SEED = 11
DEFAULT_COUNT = 1200

# (fontconfig family, group, styles the family has). None of these families is used in training,
# nor one derived from a training family: not Hack (a Bitstream Vera derivative like DejaVu), not
# Lato (Carlito, in synth_v2.py, is Lato with Calibri's metrics). Open Sans shares its designer and
# origin (Droid) with Noto Mono, a training face, but not its glyphs: Noto Mono is monospaced.
FACES = [
    ("Open Sans", "sans", ("regular", "bold", "italic", "bold-italic")),
    ("Go", "sans", ("regular", "bold", "italic", "bold-italic")),
    ("Karla", "sans", ("regular", "bold", "italic")),
    ("Cabin", "sans", ("regular", "bold", "italic")),
    ("Linux Biolinum O", "sans", ("regular", "bold", "italic")),
    ("Charis SIL", "serif", ("regular", "bold", "italic", "bold-italic")),
    ("Linux Libertine O", "serif", ("regular", "bold", "italic", "bold-italic")),
    ("Go Mono", "mono", ("regular", "bold", "italic")),
    ("JetBrains Mono", "mono", ("regular", "bold", "italic")),
    ("mononoki", "mono", ("regular", "bold", "italic")),
    ("Open Sans Condensed", "condensed", ("bold",)),
    ("Yanone Kaffeesatz", "condensed", ("regular", "bold")),
    ("Comic Neue", "informal", ("regular", "bold", "italic")),
]
PACKAGES = "fonts-open-sans fonts-go fonts-karla fonts-cabin fonts-linuxlibertine fonts-sil-charis " \
           "fonts-jetbrains-mono fonts-mononoki fonts-yanone-kaffeesatz fonts-comic-neue"


def resolve(family, style):
    """The file fontconfig gives for the face; exits if the family is not installed (fc-match
    would silently give another one)."""
    pattern = family + {"regular": "", "bold": ":bold", "italic": ":italic", "bold-italic": ":bold:italic"}[style]
    out = subprocess.run(["fc-match", "-f", "%{family}\t%{file}", pattern], check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    fams, path = out.split("\t")
    if family.lower() not in [f.lower() for f in fams.split(",")]:
        sys.exit(f"eval_printed.py: font family {family!r} is not installed (fc-match gives {fams!r}); "
                 f"install {PACKAGES} (scripts/setup.sh does)")
    return path


def random_text(rng):
    n = int(rng.integers(1, 11))
    digits = [int(d) for d in rng.integers(0, 10, n)]
    if n > 1 and rng.random() < 0.25:  # runs of repeats: 1100, 7772, 5555
        for k in range(1, n):
            if rng.random() < 0.5:
                digits[k] = digits[k - 1]
    return "".join(str(d) for d in digits)


def _render(text, family, style, size, tracking, rng, clean=False):
    """Cairo A8 coverage of the text on a roomy canvas, origin at a random sub-pixel offset."""
    slant = cairo.FONT_SLANT_ITALIC if "italic" in style else cairo.FONT_SLANT_NORMAL
    weight = cairo.FONT_WEIGHT_BOLD if "bold" in style else cairo.FONT_WEIGHT_NORMAL
    opts = cairo.FontOptions()
    aa = "none" if rng.random() < 0.06 and not clean else "gray"
    opts.set_antialias(cairo.ANTIALIAS_NONE if aa == "none" else cairo.ANTIALIAS_GRAY)
    opts.set_hint_style([cairo.HINT_STYLE_NONE, cairo.HINT_STYLE_SLIGHT, cairo.HINT_STYLE_FULL][int(rng.integers(3))])
    opts.set_hint_metrics(cairo.HINT_METRICS_ON if rng.random() < 0.5 else cairo.HINT_METRICS_OFF)
    w = int(size * (len(text) * (1.2 + max(tracking, 0)) + 2)) + 8
    h = int(size * 2.2) + 8
    surf = cairo.ImageSurface(cairo.FORMAT_A8, w, h)
    ctx = cairo.Context(surf)
    ctx.select_font_face(family, slant, weight)
    ctx.set_font_size(size)
    ctx.set_font_options(opts)
    ctx.set_source_rgba(0, 0, 0, 1)
    x = size * 0.5 + rng.random()
    y = size * 1.4 + rng.random()
    advances = []
    for c in text:
        ctx.move_to(x, y)
        ctx.show_text(c)
        adv = ctx.text_extents(c).x_advance + tracking * size
        advances.append(adv)
        x += adv
    surf.flush()
    a = np.ndarray((h, surf.get_stride()), np.uint8, surf.get_data())[:, :w].astype(np.float32) / 255.0
    return a, aa, float(np.mean(advances))


def make_crop(rng, faces, ratio=None, clean=False, stretch=1.0):
    """One crop: (uint8 [h, w], row). `ratio` fixes the text height ratio; `clean` keeps
    full contrast, antialiasing, no borders and no blur or JPEG; `stretch` widens the
    finished crop (for the frame-rate experiment of analyze.py)."""
    text = random_text(rng)
    family, group, style, path = faces[int(rng.integers(len(faces)))]
    crop_h = int(rng.integers(16, 97))
    r = rng.uniform(0.40, 0.95)
    ratio = r if ratio is None else ratio
    mode = rng.choice(["natural", "tight", "loose"], p=[0.4, 0.3, 0.3])
    tracking = {"natural": 0.0, "tight": rng.uniform(-0.06, 0.0), "loose": rng.uniform(0.05, 0.4)}[mode]
    # A probe at size 100 gives the digits' ink height per unit of font size.
    probe, _, _ = _render("0123456789", family, style, 100.0, 0.0, np.random.default_rng(0))
    ys = np.nonzero(probe.max(axis=1) > 0.2)[0]
    size = ratio * crop_h / ((ys.max() - ys.min() + 1) / 100.0)
    alpha, aa, adv = _render(text, family, style, size, tracking, rng, clean)
    ys, xs = np.nonzero(alpha > 0.2)
    top, bottom, left, right = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    ink_h = bottom - top
    crop_h = max(crop_h, ink_h)
    spare = crop_h - ink_h
    mt = int(round(rng.uniform(0, 1) * spare))
    side = []
    for _ in range(2):
        m = rng.choice(["tight", "normal", "loose"], p=[0.35, 0.4, 0.25])
        side.append(int(round({"tight": rng.uniform(0, 0.08), "normal": rng.uniform(0.08, 0.6),
                               "loose": rng.uniform(0.6, 2.0)}[m] * crop_h)))
    y0, x0 = top - mt, left - side[0]
    y1, x1 = y0 + crop_h, right + side[1]
    pad = max(0, -y0, -x0, y1 - alpha.shape[0], x1 - alpha.shape[1])
    if pad:
        alpha = np.pad(alpha, pad)
        y0, y1, x0, x1 = y0 + pad, y1 + pad, x0 + pad, x1 + pad
    a = alpha[y0:y1, x0:x1]

    low = rng.random() < 0.2 and not clean
    paper = rng.uniform(175, 235) if low else rng.uniform(215, 255)
    ink = paper - rng.uniform(60, 110) if low else rng.uniform(0, 70)
    img = np.full(a.shape, paper, np.float32)
    border = rng.random() < 0.15 and not clean
    if border:  # cell borders on one to four sides, at the very edge
        shade = rng.uniform(0, paper - 60)
        for s in range(4):
            if rng.random() < 0.6:
                if s == 0:
                    img[0, :] = shade
                elif s == 1:
                    img[-1, :] = shade
                elif s == 2:
                    img[:, 0] = shade
                else:
                    img[:, -1] = shade
    img = img * (1 - a) + ink * a
    out = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    finish = rng.choice(["none", "blur", "jpeg"], p=[0.8, 0.1, 0.1])
    finish = "none" if clean else finish
    if finish == "blur":
        out = np.asarray(Image.fromarray(out).filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 0.7))))
    elif finish == "jpeg":
        buf = io.BytesIO()
        Image.fromarray(out).save(buf, format="JPEG", quality=int(rng.integers(70, 96)))
        out = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("L"))
    if stretch != 1.0:
        out = np.asarray(Image.fromarray(out).resize((int(round(out.shape[1] * stretch)), out.shape[0]),
                                                     Image.BILINEAR))
    h, w = out.shape
    w32 = preprocess.target_width(w, h)
    row = {"truth": text, "subset": group, "face": f"{family} {style}", "font_file": os.path.basename(path),
           "crop_h": h, "crop_w": w, "text_ratio": ink_h / h, "char_w32": adv * stretch * 32.0 / h,
           "spacing": mode, "tracking_em": tracking, "w32": w32, "frames_per_char4": (w32 // 4) / len(text),
           "antialias": aa, "contrast": "low" if low else "normal", "border": int(border), "finish": finish}
    return out, row


def faces():
    out = []
    for family, group, styles in FACES:
        for style in styles:
            out.append((family, group, style, resolve(family, style)))
    return out


def build(out_dir, count):
    fs = faces()
    samples = []
    for i in range(count):
        img, row = make_crop(np.random.default_rng([SEED, i]), fs)
        samples.append((img, {"file": f"images/{i:05d}.png", **row}))
    evalkit.write_set(out_dir, samples)


if __name__ == "__main__":
    evalkit.main_cli(__doc__, build, DEFAULT_COUNT)
