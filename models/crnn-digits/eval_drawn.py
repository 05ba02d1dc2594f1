#!/usr/bin/python3
"""The independent drawn-strokes evaluation set of the digit reader: digit strings as a
person draws them with a mouse or a finger on a web page's canvas, rendered by Cairo
(python3-cairo) with a stroke model of its own, not the one of the training generator
(synth_v2.py).

    /usr/bin/python3 models/crnn-digits/eval_drawn.py --out /tmp/drawn \
        [--count 300] [--model models/crnn-digits/v2/crnn-digits-v2-opset17.onnx ...]

The model: each digit is a few pen strokes made of cubic Bezier curves and lines (two or
three ways of writing most digits: 1 with and without flag and foot, open and closed 4,
7 with and without crossbar, round or flat-topped 3, 8 as one figure-eight or two loops,
9 with a straight or curved tail). A stroke is followed by the pointer as a hand moves:
a minimum-jerk speed profile along the path (slow at the ends, fast in the middle),
sampled as pointer events at 60 or 120 Hz, so fast curves become visible polygon corners;
a slow tremor wanders the pointer off the path, and a mouse reports whole pixels. The
events are joined with line segments of one constant width, round caps and joins, as a
canvas app draws them. Digits go left to right with their own size, slant, gap (from
touching to wide) and a drifting baseline. A crop is either the whole canvas (much white
around the ink) or the ink's bounding box with a small margin, as a page could send it.
"""
import math
import os
import sys

import cairo
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import evalkit  # noqa: E402
import preprocess  # noqa: E402

SEED = 21
DEFAULT_COUNT = 300


def L(*pts):
    return ("L",) + pts


def C(*pts):
    return ("C",) + pts


def ellipse(cx, cy, rx, ry):
    k = 0.5523
    return [C((cx, cy - ry), (cx + k * rx, cy - ry), (cx + rx, cy - k * ry), (cx + rx, cy)),
            C((cx + rx, cy), (cx + rx, cy + k * ry), (cx + k * rx, cy + ry), (cx, cy + ry)),
            C((cx, cy + ry), (cx - k * rx, cy + ry), (cx - rx, cy + k * ry), (cx - rx, cy)),
            C((cx - rx, cy), (cx - rx, cy - k * ry), (cx - k * rx, cy - ry), (cx + 0.04 * rx, cy - ry * 1.02))]


# Ways of writing each digit: a list of strokes, each a list of segments, in a unit box
# (x right, y down, height 1, the width the digit's own).
GLYPHS = {
    "0": [[ellipse(0.5, 0.5, 0.42, 0.49)]],
    "1": [[[L((0.5, 0.0), (0.5, 1.0))]],
          [[L((0.2, 0.24), (0.52, 0.0)), L((0.52, 0.0), (0.52, 1.0))]],
          [[L((0.2, 0.24), (0.52, 0.0)), L((0.52, 0.0), (0.52, 1.0))], [L((0.18, 1.0), (0.86, 1.0))]]],
    "2": [[[C((0.1, 0.25), (0.15, -0.06), (0.9, -0.08), (0.86, 0.32)),
            C((0.86, 0.32), (0.8, 0.56), (0.3, 0.76), (0.07, 1.0)), L((0.07, 1.0), (0.95, 0.98))]],
          [[C((0.12, 0.2), (0.3, -0.06), (0.98, 0.0), (0.78, 0.42)), L((0.78, 0.42), (0.1, 1.0)),
            L((0.1, 1.0), (0.92, 1.0))]]],
    "3": [[[C((0.12, 0.12), (0.45, -0.1), (1.02, 0.15), (0.42, 0.47)),
            C((0.42, 0.47), (1.12, 0.45), (1.0, 1.12), (0.08, 0.88))]],
          [[L((0.12, 0.02), (0.86, 0.02)), L((0.86, 0.02), (0.4, 0.42)),
            C((0.4, 0.42), (1.06, 0.38), (1.06, 1.12), (0.08, 0.88))]]],
    "4": [[[L((0.62, 0.0), (0.04, 0.68)), L((0.04, 0.68), (0.96, 0.68))], [L((0.72, 0.3), (0.72, 1.0))]],
          [[L((0.14, 0.0), (0.1, 0.6)), L((0.1, 0.6), (0.92, 0.6))], [L((0.72, 0.02), (0.72, 1.0))]]],
    "5": [[[L((0.25, 0.02), (0.2, 0.45)), C((0.2, 0.45), (0.6, 0.28), (1.06, 0.45), (0.9, 0.75)),
            C((0.9, 0.75), (0.78, 1.06), (0.3, 1.06), (0.07, 0.86))], [L((0.25, 0.02), (0.88, 0.02))]],
          [[L((0.88, 0.02), (0.25, 0.02)), L((0.25, 0.02), (0.2, 0.45)),
            C((0.2, 0.45), (0.6, 0.28), (1.06, 0.45), (0.9, 0.75)),
            C((0.9, 0.75), (0.78, 1.06), (0.3, 1.06), (0.07, 0.86))]]],
    "6": [[[C((0.82, 0.05), (0.35, -0.06), (0.04, 0.35), (0.1, 0.7)),
            C((0.1, 0.7), (0.15, 1.06), (0.86, 1.06), (0.88, 0.7)),
            C((0.88, 0.7), (0.9, 0.4), (0.3, 0.35), (0.11, 0.62))]]],
    "7": [[[L((0.05, 0.02), (0.93, 0.02)), L((0.93, 0.02), (0.36, 1.0))]],
          [[L((0.05, 0.02), (0.93, 0.02)), L((0.93, 0.02), (0.36, 1.0))], [L((0.3, 0.52), (0.82, 0.5))]],
          [[L((0.05, 0.02), (0.93, 0.02)), C((0.93, 0.02), (0.6, 0.35), (0.45, 0.6), (0.42, 1.0))]]],
    "8": [[[C((0.8, 0.15), (0.6, -0.06), (0.08, 0.0), (0.2, 0.26)), C((0.2, 0.26), (0.3, 0.46), (0.92, 0.55), (0.88, 0.78)),
            C((0.88, 0.78), (0.85, 1.06), (0.14, 1.06), (0.12, 0.78)), C((0.12, 0.78), (0.1, 0.55), (0.72, 0.45), (0.8, 0.25)),
            L((0.8, 0.25), (0.8, 0.14))]],
          [ellipse(0.5, 0.25, 0.3, 0.25), ellipse(0.5, 0.74, 0.38, 0.26)]],
    "9": [[[C((0.86, 0.25), (0.8, -0.06), (0.1, -0.06), (0.12, 0.28)), C((0.12, 0.28), (0.15, 0.56), (0.8, 0.56), (0.86, 0.25)),
            L((0.86, 0.25), (0.8, 1.0))]],
          [[C((0.86, 0.25), (0.8, -0.06), (0.1, -0.06), (0.12, 0.28)), C((0.12, 0.28), (0.15, 0.56), (0.8, 0.56), (0.86, 0.25)),
            C((0.86, 0.25), (0.92, 0.7), (0.6, 1.02), (0.18, 0.95))]]],
}
def path_points(stroke, n=64):
    """Dense points along a stroke (its segments in order)."""
    pts = []
    for seg in stroke:
        if seg[0] == "L":
            a, b = np.array(seg[1]), np.array(seg[2])
            t = np.linspace(0, 1, 8)[:, None]
            pts.append(a * (1 - t) + b * t)
        else:
            p0, p1, p2, p3 = (np.array(p) for p in seg[1:])
            t = np.linspace(0, 1, n)[:, None]
            pts.append(((1 - t) ** 3) * p0 + 3 * ((1 - t) ** 2) * t * p1 + 3 * (1 - t) * t * t * p2 + t ** 3 * p3)
    return np.concatenate(pts)


def pointer_events(path, rng, hz, speed, tremor):
    """What a pointer reports while a hand follows `path` (pixels): a minimum-jerk speed
    profile, one event per 1/hz s, with a slow tremor added."""
    seg = np.linalg.norm(np.diff(path, axis=0), axis=1)
    s = np.concatenate([[0], np.cumsum(seg)])
    length = s[-1]
    duration = max(length / speed, 0.06)
    n = max(2, int(duration * hz) + 1)
    tau = np.linspace(0, 1, n)
    along = length * (10 * tau ** 3 - 15 * tau ** 4 + 6 * tau ** 5)
    x = np.interp(along, s, path[:, 0])
    y = np.interp(along, s, path[:, 1])
    # Tremor: a random walk, smoothed, scaled to `tremor` pixels.
    walk = np.cumsum(rng.normal(0, 1, (n, 2)), axis=0)
    k = max(1, n // 6)
    walk = np.array([np.convolve(walk[:, j], np.ones(k) / k, mode="same") for j in range(2)]).T
    walk -= walk.mean(axis=0)
    walk *= tremor / max(np.abs(walk).max(), 1e-6)
    return np.stack([x, y], axis=1) + walk


def make_crop(rng):
    n = int(rng.integers(1, 9))
    text = "".join(str(d) for d in rng.integers(0, 10, n))
    device = "touch" if rng.random() < 0.35 else "mouse"
    canvas_h = int(rng.integers(80, 301))
    digit_h = canvas_h * rng.uniform(0.45, 0.85)
    lw = canvas_h * (rng.uniform(0.05, 0.1) if device == "touch" else rng.uniform(0.025, 0.07))
    hz = 60 if device == "touch" or rng.random() < 0.5 else 120
    slant_all = rng.uniform(-0.25, 0.15)
    x = canvas_h * rng.uniform(0.1, 0.6)
    base = canvas_h * 0.5 + digit_h * 0.5 + rng.uniform(-0.1, 0.1) * canvas_h
    strokes = []
    for d in text:
        ways = GLYPHS[d]
        glyph = ways[int(rng.integers(len(ways)))]
        h = digit_h * rng.uniform(0.88, 1.12)
        w = h * rng.uniform(0.45, 0.72) * (0.5 if d == "1" and len(glyph[0]) == 1 else 1.0)
        slant = slant_all + rng.uniform(-0.08, 0.08)
        base += rng.normal(0, 0.03) * digit_h
        for stroke in glyph:
            p = path_points(stroke)
            px = x + p[:, 0] * w + (1 - p[:, 1]) * h * -slant
            py = base - h + p[:, 1] * h
            strokes.append(np.stack([px, py], axis=1))
        x += w + h * max(rng.normal(0.18, 0.14), -0.08) + lw
    speed = canvas_h * rng.uniform(2.5, 8.0)  # px per second
    tremor = lw * rng.uniform(0.1, 0.6)
    events = []
    for p in strokes:
        e = pointer_events(p, rng, hz, speed, tremor)
        if device == "mouse":
            e = np.floor(e) + 0.5
        events.append(e)
    allp = np.concatenate(events)
    lo = allp.min(axis=0) - lw
    hi = allp.max(axis=0) + lw
    width = int(max(hi[0], canvas_h * 1.2) + canvas_h * rng.uniform(0.1, 1.0))
    height = int(max(canvas_h, hi[1] + 2))
    surf = cairo.ImageSurface(cairo.FORMAT_A8, width, height)
    ctx = cairo.Context(surf)
    ctx.set_line_width(lw)
    ctx.set_line_cap(cairo.LINE_CAP_ROUND)
    ctx.set_line_join(cairo.LINE_JOIN_ROUND)
    ctx.set_source_rgba(0, 0, 0, 1)
    for e in events:
        ctx.move_to(*e[0])
        for q in e[1:]:
            ctx.line_to(*q)
        ctx.stroke()
    surf.flush()
    a = np.ndarray((height, surf.get_stride()), np.uint8, surf.get_data())[:, :width].astype(np.float32) / 255.0
    crop = "canvas" if rng.random() < 0.5 else "ink"
    if crop == "ink":
        ys, xs = np.nonzero(a > 0.1)
        m = int(round(rng.uniform(0.02, 0.2) * (ys.max() - ys.min())))
        y0, y1 = max(0, ys.min() - m), min(height, ys.max() + 1 + m)
        x0, x1 = max(0, xs.min() - m), min(width, xs.max() + 1 + m)
        a = a[y0:y1, x0:x1]
    ink = rng.choice([0.0, 30.0, 60.0])  # black, dark blue (gray 29), dark gray
    img = 255.0 * (1 - a) + ink * a
    out = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    h_, w_ = out.shape
    row = {"truth": text, "subset": f"{device}-{crop}", "device": device, "crop": crop, "crop_h": h_, "crop_w": w_,
           "stroke_w32": lw * 32.0 / h_, "events_hz": hz, "w32": preprocess.target_width(w_, h_),
           "frames_per_char4": (preprocess.target_width(w_, h_) // 4) / len(text)}
    return out, row


def build(out_dir, count):
    samples = []
    for i in range(count):
        img, row = make_crop(np.random.default_rng([SEED, i]))
        samples.append((img, {"file": f"images/{i:05d}.png", **row}))
    evalkit.write_set(out_dir, samples)


if __name__ == "__main__":
    evalkit.main_cli(__doc__, build, DEFAULT_COUNT)
