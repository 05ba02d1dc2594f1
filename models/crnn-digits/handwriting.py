"""The stroke model of synth_v2.py's drawn digits: digit strings as people draw them with
a mouse, a finger or a stylus on a canvas.

Three stages, each random within what people and canvas apps do:
1. Shapes. Every digit is a function that draws one of its allographs with its own
   proportions: 1 bare, with a flag, with a flag and a base; 2 with a curved or straight
   neck, with a flat base or a curl; 3 round with a pointed or a smooth waist, or
   flat-topped; 4 closed or open, the stem crossing the bar or starting on it; 5 in one
   stroke or with the bar added after; 6 with a curved or a straight back; 7 with a flat
   or a tilted bar, a straight or curved stem, a hooked top, a crossbar; 8 as one
   figure-eight or two loops; 9 with a straight, slanted or curved tail, in one stroke or
   two; 0 closed, overlapping or left open. A stroke is a list of runs of control points;
   each run is a smooth (Catmull-Rom) curve and runs meet at sharp corners.
2. The hand. Control points wander, the digit is slanted, rotated and sized on its own,
   and the pen follows the path at a speed that drops at the stroke's ends and, by a
   random degree from not at all to the two-thirds power law of hand movement, in tight
   curves and corners, with a slow tremor (a few sines of 1-10 Hz).
3. The pointer and the app. The pointer reports positions at 30-240 Hz (fast strokes
   become polygons), a mouse in whole pixels; the app joins them with one constant width
   (round caps, or separate butt-ended segments as a naive canvas app draws them) or
   with a width that follows the speed.

`draw(rng, text)` returns a float alpha layer [h, w] (1 = ink) at the canvas's own scale
with some margin around the ink. The shapes and parameters are this file's own, not
eval_drawn.py's (which models drawing its own way, with Bezier paths, a minimum-jerk
speed profile and Cairo). Needs numpy and PIL only.
"""
import numpy as np
from PIL import Image, ImageDraw


def _arc(cx, cy, rx, ry, a0, a1, n=None):
    """Points along an ellipse from angle a0 to a1 in degrees (0 = right, 90 = down)."""
    n = n or max(3, int(abs(a1 - a0) / 30) + 1)
    t = np.radians(np.linspace(a0, a1, n))
    return [(cx + rx * np.cos(a), cy + ry * np.sin(a)) for a in t]


def _digit0(r):
    w = r.uniform(0.45, 0.85)
    start = -90 + r.uniform(-35, 35)
    sweep = 360 + r.uniform(-25, 35)
    d = -1 if r.random() < 0.75 else 1  # most people go round counterclockwise
    pts = _arc(w / 2, 0.5, w / 2, 0.5, start, start + d * sweep, 14)
    egg = r.uniform(-0.25, 0.25)  # narrower at the top or the bottom
    return [[[(w / 2 + (x - w / 2) * (1 + egg * (y - 0.5)), y) for x, y in pts]]]


def _digit1(r):
    kind = r.choice(3, p=[0.35, 0.4, 0.25])
    top = r.uniform(0.0, 0.03)
    lean = r.uniform(-0.04, 0.04)
    if kind == 0:
        return [[[(0.0, top), (lean, 1.0)]]]
    # The flag stays short and steep (45-75 degrees below the horizontal): a longer,
    # flatter one is a 7's bar.
    fl, ang = r.uniform(0.1, 0.3), np.radians(r.uniform(45, 75))
    sx = fl * np.cos(ang)
    flag = [(0.0, top + fl * np.sin(ang))]
    if r.random() < 0.3:  # a slightly bowed flag
        flag.append((sx * 0.5 + r.uniform(-0.02, 0.02), top + fl * np.sin(ang) * 0.5 - r.uniform(0, 0.03)))
    strokes = [[flag + [(sx, top)], [(sx, top), (sx + lean, 1.0)]]]
    if kind == 2:
        bl, br = r.uniform(0.1, 0.3), r.uniform(0.1, 0.3)
        y = 1.0 + r.uniform(-0.02, 0.02)
        strokes.append([[(sx + lean - bl, y), (sx + lean + br, y + r.uniform(-0.03, 0.03))]])
    return strokes


def _digit2(r):
    w = r.uniform(0.5, 0.82)
    y0 = r.uniform(0.12, 0.35)
    top = [(r.uniform(0.0, 0.15) * w, y0), (r.uniform(0.25, 0.4) * w, r.uniform(0.0, 0.06)),
           (r.uniform(0.6, 0.75) * w, 0.0), (r.uniform(0.88, 1.0) * w, r.uniform(0.15, 0.3))]
    kind = r.choice(3, p=[0.45, 0.35, 0.2])
    foot = (r.uniform(0.0, 0.1) * w, 1.0)
    base_end = (r.uniform(0.85, 1.05) * w, 1.0 + r.uniform(-0.04, 0.03))
    if kind == 0:  # curved neck, flat base
        neck = top + [(r.uniform(0.7, 0.85) * w, r.uniform(0.4, 0.5)), (r.uniform(0.3, 0.45) * w, r.uniform(0.68, 0.8)),
                      foot]
        return [[neck, [foot, base_end]]]
    if kind == 1:  # straight neck from the top's end to the foot
        neck = top + [(r.uniform(0.75, 0.9) * w, r.uniform(0.35, 0.45))]
        return [[neck, [neck[-1], foot], [foot, base_end]]]
    # a curl at the foot, then the base
    neck = top + [(r.uniform(0.7, 0.85) * w, r.uniform(0.4, 0.5)), (r.uniform(0.25, 0.4) * w, r.uniform(0.72, 0.82)),
                  (r.uniform(0.05, 0.15) * w, 0.97), (r.uniform(0.2, 0.3) * w, r.uniform(0.84, 0.9)),
                  (r.uniform(0.32, 0.42) * w, 0.97), (r.uniform(0.55, 0.7) * w, 1.0), base_end]
    return [[neck]]


def _bowl(r, w, y0, left_end):
    """The lower bowl of 3 and 5: from the waist at height y0 round the right to the bottom left."""
    ym = (y0 + 1.0) / 2
    return [(r.uniform(0.55, 0.75) * w, y0 - r.uniform(0.0, 0.05)), (r.uniform(0.88, 1.0) * w, ym - 0.04),
            (r.uniform(0.85, 1.0) * w, ym + 0.12), (r.uniform(0.55, 0.7) * w, 0.98), (r.uniform(0.3, 0.4) * w, 1.0),
            (left_end * w, r.uniform(0.8, 0.92))]


def _digit3(r):
    w = r.uniform(0.48, 0.78)
    m = r.uniform(0.38, 0.52)  # the waist
    waist = (r.uniform(0.28, 0.5) * w, m)
    if r.random() < 0.3:  # flat top: bar, diagonal down to the waist, bowl
        bar = [(r.uniform(0.0, 0.15) * w, r.uniform(0.0, 0.04)), (r.uniform(0.85, 1.0) * w, r.uniform(0.0, 0.04))]
        return [[bar, [bar[-1], waist], [waist] + _bowl(r, w, m, r.uniform(0.0, 0.1))]]
    tw = r.uniform(0.75, 1.0)  # the top bowl's share of the width
    upper = [(r.uniform(0.0, 0.15) * w, r.uniform(0.08, 0.25)), (r.uniform(0.3, 0.45) * w, 0.0),
             (r.uniform(0.7, 0.85) * tw * w, r.uniform(0.0, 0.06)), (tw * w, m * r.uniform(0.4, 0.55)),
             (r.uniform(0.6, 0.75) * tw * w, m - r.uniform(0.02, 0.07)), waist]
    lower = [waist] + _bowl(r, w, m, r.uniform(0.0, 0.1))
    if r.random() < 0.5:  # pointed waist
        return [[upper, lower]]
    return [[upper + lower[1:]]]


def _digit4(r):
    w = r.uniform(0.55, 0.88)
    b = r.uniform(0.55, 0.75)  # the bar
    sx = r.uniform(0.58, 0.8) * w
    lean = r.uniform(-0.05, 0.05)
    bar_end = (w, b + r.uniform(-0.04, 0.03))
    kind = r.choice(3, p=[0.45, 0.35, 0.2])
    if kind == 0:  # closed: diagonal from the stem's top
        apex = (sx + r.uniform(-0.08, 0.03), r.uniform(0.0, 0.05))
        first = [[apex, (0.0, b)], [(0.0, b), bar_end]]
        stem_top = r.uniform(0.0, 0.4)
    elif kind == 1:  # open: a short stroke down, the bar, a full stem
        first = [[(r.uniform(0.1, 0.35) * w, 0.0), (r.uniform(0.0, 0.1) * w, b)], [(r.uniform(0.0, 0.1) * w, b), bar_end]]
        stem_top = r.uniform(0.0, 0.1)
    else:  # one stroke: stem first, then the diagonal and the bar
        apex = (sx - lean, r.uniform(0.0, 0.04))
        return [[[(sx, 1.0), apex], [apex, (0.0, b)], [(0.0, b), bar_end]]]
    return [first, [[(sx - lean * stem_top, stem_top), (sx + lean, 1.0)]]]


def _digit5(r):
    w = r.uniform(0.5, 0.8)
    st = (r.uniform(0.1, 0.3) * w, r.uniform(0.0, 0.04))
    sb = (r.uniform(0.05, 0.25) * w, r.uniform(0.38, 0.52))
    bowl = _bowl(r, w, sb[1], r.uniform(0.0, 0.12))
    bar_end = (r.uniform(0.75, 1.0) * w, r.uniform(-0.03, 0.05))
    smooth = r.random() < 0.25  # the stem runs into the bowl without a corner
    body = [[st, sb] + bowl] if smooth else [[st, sb], [sb] + bowl]
    if r.random() < 0.45:  # one stroke: the bar right to left first
        return [[[bar_end, st]] + body]
    return [body, [[st, bar_end]]]


def _digit6(r):
    w = r.uniform(0.5, 0.8)
    lt = r.uniform(0.35, 0.55)  # the loop's top
    start = (r.uniform(0.6, 0.95) * w, r.uniform(0.0, 0.1))
    if r.random() < 0.35:  # a straight back
        back = [start, (r.uniform(0.05, 0.2) * w, r.uniform(0.6, 0.75))]
    else:
        back = [start, (r.uniform(0.3, 0.5) * w, r.uniform(0.05, 0.15)), (r.uniform(0.05, 0.15) * w, r.uniform(0.4, 0.5)),
                (r.uniform(0.0, 0.08) * w, r.uniform(0.68, 0.75))]
    loop = [(r.uniform(0.2, 0.35) * w, 0.97), (r.uniform(0.6, 0.7) * w, 1.0), (r.uniform(0.9, 1.0) * w, r.uniform(0.7, 0.8)),
            (r.uniform(0.7, 0.85) * w, lt + 0.05), (r.uniform(0.35, 0.5) * w, lt), (r.uniform(0.02, 0.15) * w, lt + r.uniform(0.12, 0.25))]
    return [[back + loop]]


def _digit7(r):
    bl = r.uniform(0.38, 0.8)  # the bar's length
    y0 = r.uniform(0.0, 0.04)
    corner = (bl, y0 + r.uniform(-0.05, 0.05))  # the bar flat or a little tilted
    foot = (bl - r.uniform(0.1, 0.6), 1.0)
    bend = r.uniform(-0.1, 0.12)  # the stem straight or curved
    mid = ((corner[0] + foot[0]) / 2 + bend, (corner[1] + foot[1]) / 2)
    bar = [(0.0, y0), corner]
    if r.random() < 0.2:  # a hooked top: a tick down at the bar's start
        bar = [[(r.uniform(-0.02, 0.04), y0 + r.uniform(0.1, 0.25)), (0.0, y0)], bar]
    else:
        bar = [bar]
    strokes = [bar + [[corner, mid, foot] if abs(bend) > 0.03 else [corner, foot]]]
    if r.random() < 0.25:  # a crossbar through the stem
        t = r.uniform(0.4, 0.6)
        cx = corner[0] + (foot[0] - corner[0]) * t + bend * 0.5
        half = r.uniform(0.12, 0.25)
        cy = t + r.uniform(-0.03, 0.03)
        strokes.append([[(cx - half, cy), (cx + half, cy + r.uniform(-0.03, 0.03))]])
    return strokes


def _digit8(r):
    w = r.uniform(0.45, 0.78)
    m = r.uniform(0.4, 0.52)  # the waist
    tw = r.uniform(0.6, 0.95) * w  # the top loop's width
    cx = w / 2 + r.uniform(-0.05, 0.05)
    if r.random() < 0.35:  # two loops
        top = _arc(cx, m / 2, tw / 2, m / 2, 90 + r.uniform(-20, 20), 90 - 360 - r.uniform(0, 30), 12)
        bottom = _arc(w / 2, (1 + m) / 2, w / 2, (1 - m) / 2, -90 + r.uniform(-20, 20), -90 + 360 + r.uniform(0, 30), 12)
        if r.random() < 0.5:
            return [[top], [bottom]]
        return [[top + bottom]]
    s = [(cx + tw * r.uniform(0.3, 0.45), r.uniform(0.08, 0.18)), (cx, 0.0), (cx - tw / 2, m * 0.4),
         (cx, m), (w * r.uniform(0.9, 1.0), (1 + m) / 2 + 0.05), (w / 2, 1.0), (w * r.uniform(0.0, 0.1), (1 + m) / 2 + 0.05),
         (cx, m), (cx + tw / 2, m * 0.45), (cx + tw * r.uniform(0.3, 0.45), r.uniform(0.02, 0.15))]
    return [[s]]


def _digit9(r):
    w = r.uniform(0.5, 0.8)
    lb = r.uniform(0.4, 0.6)  # the loop's bottom
    join = (r.uniform(0.85, 1.0) * w, r.uniform(0.15, 0.3))
    loop = [join, (r.uniform(0.5, 0.7) * w, 0.0), (r.uniform(0.1, 0.25) * w, r.uniform(0.03, 0.1)),
            (r.uniform(0.0, 0.08) * w, lb * 0.55), (r.uniform(0.25, 0.4) * w, lb), (r.uniform(0.65, 0.8) * w, lb - 0.04), join]
    kind = r.choice(4, p=[0.4, 0.25, 0.2, 0.15])
    if kind == 0:  # straight tail
        return [[loop, [join, (join[0] + r.uniform(-0.12, 0.03), 1.0)]]]
    if kind == 1:  # curved tail
        return [[loop + [(r.uniform(0.8, 0.98) * w, 0.7), (r.uniform(0.55, 0.7) * w, 0.96),
                         (r.uniform(0.1, 0.3) * w, r.uniform(0.9, 1.0))]]]
    if kind == 2:  # the tail slanting to the left, as in a quick 9
        return [[loop, [join, (join[0] - r.uniform(0.15, 0.35), 1.0)]]]
    # two strokes: a closed loop, then the stem down its right side
    return [[loop[1:] + loop[1:2]], [[(join[0] + r.uniform(-0.03, 0.03), r.uniform(0.0, 0.1)), (join[0], 1.0)]]]


DIGITS = {"0": _digit0, "1": _digit1, "2": _digit2, "3": _digit3, "4": _digit4, "5": _digit5, "6": _digit6,
          "7": _digit7, "8": _digit8, "9": _digit9}


def _catmull_rom(p, per_segment=8):
    """A smooth curve through the points of one run."""
    p = np.asarray(p, np.float64)
    if len(p) < 3:
        t = np.linspace(0, 1, per_segment)[:, None]
        return p[0] * (1 - t) + p[-1] * t
    ext = np.concatenate([2 * p[:1] - p[1:2], p, 2 * p[-1:] - p[-2:-1]])
    t = np.linspace(0, 1, per_segment, endpoint=False)[:, None]
    out = []
    for i in range(len(p) - 1):
        a, b, c, d = ext[i], ext[i + 1], ext[i + 2], ext[i + 3]
        out.append(0.5 * (2 * b + (c - a) * t + (2 * a - 5 * b + 4 * c - d) * t ** 2 + (3 * b - a - 3 * c + d) * t ** 3))
    out.append(p[-1:])
    return np.concatenate(out)


def _stroke_path(runs, r, wander):
    """Dense points of one stroke: each run jittered and smoothed, runs joined at corners."""
    pts = []
    shift = {}
    for run in runs:
        q = []
        for x, y in run:
            key = (round(x, 6), round(y, 6))  # a corner shared by two runs moves once
            if key not in shift:
                shift[key] = r.normal(0, wander, 2)
            q.append((x + shift[key][0], y + shift[key][1]))
        c = _catmull_rom(q)
        pts.append(c if not pts else c[1:])
    return np.concatenate(pts)


def _pointer(path, r, speed, hz, tremor, mouse, beta):
    """Pointer events of a hand following `path` (canvas pixels) at about `speed` px/s,
    slower at the ends and, by the power `beta` of the curve's radius (1/3 for the
    two-thirds power law, 0 for a hand that does not slow down), in tight curves and
    corners; returns (events [n, 2], speed at each)."""
    seg = np.linalg.norm(np.diff(path, axis=0), axis=1)
    keep = np.concatenate([[True], seg > 1e-6])
    path = path[keep]
    if len(path) < 2:
        return path, np.full(len(path), speed)
    seg = np.linalg.norm(np.diff(path, axis=0), axis=1)
    s = np.concatenate([[0], np.cumsum(seg)])
    length = s[-1]
    d = np.diff(path, axis=0)
    heading = np.arctan2(d[:, 1], d[:, 0])
    turn = np.abs(np.angle(np.exp(1j * np.diff(heading))))
    curv = np.concatenate([[0], turn / np.maximum((seg[:-1] + seg[1:]) / 2, 1e-3), [0]])
    radius = 1.0 / np.maximum(curv, 1e-4)
    ref = max(length / 6, 1.0)
    v = speed * np.clip((radius / ref) ** beta, 0.3, 1.4)
    ramp = max(length * r.uniform(0.08, 0.25), 1.0)
    v *= np.clip(np.minimum(s, length - s) / ramp, 0.2, 1.0) ** 0.5
    dt = seg / ((v[:-1] + v[1:]) / 2)
    t = np.concatenate([[0], np.cumsum(dt)])
    n = int(t[-1] * hz / 0.8) + 2
    times = np.concatenate([[0], np.cumsum(r.uniform(0.8, 1.2, n) / hz)])  # events come a little irregularly
    times = np.append(times[times < t[-1]], t[-1])
    along = np.interp(times, t, s)
    ev = np.stack([np.interp(along, s, path[:, 0]), np.interp(along, s, path[:, 1])], axis=1)
    if tremor > 0:  # a slow wobble of the hand: a few sines of 1-10 Hz in time
        for axis in range(2):
            amp = r.dirichlet(np.ones(3)) * tremor
            for a_k in amp:
                ev[:, axis] += a_k * np.sin(2 * np.pi * r.uniform(1, 10) * times + r.uniform(0, 2 * np.pi))
    if mouse:
        ev = np.floor(ev) + 0.5
    return ev, np.interp(along, s, v)


def draw(rng, text):
    """Float alpha [h, w] of `text` drawn on a canvas, with a margin around the ink."""
    r = rng
    dh = float(np.exp(r.uniform(np.log(22), np.log(130))))  # digit height on the canvas, px
    device = r.choice(3, p=[0.5, 0.35, 0.15])  # mouse, finger, stylus
    mouse = device == 0 and r.random() < 0.8
    band = r.choice(3, p=[0.3, 0.45, 0.25])
    lw = dh * [r.uniform(0.02, 0.06), r.uniform(0.06, 0.13), r.uniform(0.13, 0.24)][band]
    lw = max(lw, 1.0)
    hz = float(r.choice([30, 60, 60, 60, 90, 120, 120, 144, 240]))
    speed = dh * float(np.exp(r.uniform(np.log(2), np.log(16))))  # px/s
    tremor = lw * r.uniform(0.0, 0.3) + r.uniform(0, 0.5)
    beta = r.uniform(0, 1 / 3)
    wander = r.uniform(0.01, 0.045)
    slant = r.uniform(-0.2, 0.35)  # forward (tops to the right) when positive
    size = r.uniform(0.85, 1.15)
    tilt = r.uniform(-0.05, 0.05)  # the writing line's slope
    style = r.choice(3, p=[0.7, 0.1, 0.2])  # round-capped polyline, butt-ended segments, width from speed
    gap_mode = r.choice(3, p=[0.2, 0.6, 0.2])
    x, base = dh, 2 * dh
    strokes = []
    for d in text:
        h = dh * size * r.uniform(0.88, 1.12)
        s = slant + r.uniform(-0.08, 0.08)
        rot = np.radians(r.uniform(-6, 6))
        sx = r.uniform(0.88, 1.12)
        base += r.normal(0, 0.035) * dh
        digit = []
        for runs in DIGITS[d](r):
            p = _stroke_path(runs, r, wander)
            px, py = p[:, 0] * sx, p[:, 1] - 1.0  # the baseline at y = 0
            px, py = px - py * s, py
            px, py = px * np.cos(rot) - py * np.sin(rot), px * np.sin(rot) + py * np.cos(rot)
            digit.append(np.stack([px * h, py * h], axis=1))
        lo = min(p[:, 0].min() for p in digit)
        hi = max(p[:, 0].max() for p in digit)
        for p in digit:
            p[:, 0] += x - lo
            p[:, 1] += base + tilt * (x - dh)
            strokes.append(p)
        gap = [r.uniform(-0.06, 0.03), r.uniform(0.03, 0.32), r.uniform(0.32, 0.9)][gap_mode] + r.normal(0, 0.04)
        x += hi - lo + gap * dh + lw
    events = [_pointer(p, r, speed, hz, tremor, mouse, beta) for p in strokes]
    allp = np.concatenate([e for e, _ in events])
    ss = 2  # drawn at twice the size, then reduced (antialiasing)
    off = allp.min(axis=0) - 2 * lw - 2
    wh = allp.max(axis=0) - off + 2 * lw + 2
    layer = Image.new("L", (int(wh[0] * ss) + 1, int(wh[1] * ss) + 1), 0)
    g = ImageDraw.Draw(layer)
    for e, v in events:
        q = [((a - off[0]) * ss, (b - off[1]) * ss) for a, b in e]
        if style == 2:  # the width follows the speed (slower: wider), as ink-like apps do
            width = lw * ss * np.clip((v / speed) ** -0.5, 0.6, 1.6)
            if len(width) > 4:
                width = np.convolve(np.pad(width, 2, mode="edge"), np.ones(5) / 5, mode="valid")
            for (ax, ay), (bx, by), wd in zip(q[:-1], q[1:], width[1:]):
                g.line([(ax, ay), (bx, by)], fill=255, width=max(1, int(round(wd))))
            for (ax, ay), wd in zip(q, width):
                g.ellipse([ax - wd / 2, ay - wd / 2, ax + wd / 2, ay + wd / 2], fill=255)
            continue
        wd = max(1, int(round(lw * ss)))
        if style == 0:  # round caps and joins: a disc at every event
            if len(q) > 1:
                g.line(q, fill=255, width=wd)
            for ax, ay in q:
                g.ellipse([ax - wd / 2, ay - wd / 2, ax + wd / 2, ay + wd / 2], fill=255)
        else:
            for a, b in zip(q[:-1], q[1:]):
                g.line([a, b], fill=255, width=wd)
            if len(q) == 1:
                g.ellipse([q[0][0] - wd / 2, q[0][1] - wd / 2, q[0][0] + wd / 2, q[0][1] + wd / 2], fill=255)
    layer = layer.resize((max(1, layer.size[0] // ss), max(1, layer.size[1] // ss)), Image.BOX)
    return np.asarray(layer, np.float32) / 255.0
