#!/usr/bin/python3
"""Breaks a model's misreadings on an evaluation set down by the properties of the crops
recorded in its labels.tsv (eval_printed.py, eval_drawn.py): the tables of README.md's
"Why v1 misses" section.

    /usr/bin/python3 models/crnn-digits/analyze.py --set /tmp/printed \
        --model models/crnn-digits/crnn-digits-v1-opset17.onnx [--model ...]

For every numeric column (text height ratio, character width after the resize to height
32, frames per character...) the crops are split into bins; for every text column (face,
spacing, antialiasing...) into its values. Each row shows exact-string accuracy and the
share of misreadings that dropped characters (read shorter than the truth).
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import evalkit  # noqa: E402

BINS = {
    "text_ratio": [0.40, 0.50, 0.60, 0.70, 0.80, 0.90, 0.96],
    "char_w32": [0, 6, 8, 10, 12, 14, 17, 20, 100],
    "frames_per_char4": [0, 1.5, 2, 2.5, 3, 3.5, 4, 5, 100],
    "frames_per_char2": [0, 3, 4, 5, 6, 7, 8, 10, 200],
    "crop_h": [0, 24, 32, 48, 64, 128, 200, 10000],
    "tracking_em": [-1, -0.03, -0.0001, 0.0001, 0.1, 0.2, 1],
    "stroke_w32": [0, 1.5, 2.5, 3.5, 5, 100],
}
SKIP = {"file", "truth", "font_file", "w32", "crop_w", "path", "read"}


def breakdown(rows, key):
    vals = [r[key] for r in rows]
    try:
        nums = np.array([float(v) for v in vals])
    except ValueError:
        nums = None
    groups = []
    if nums is not None and len(set(vals)) > 6:
        edges = BINS.get(key) or list(np.quantile(nums, np.linspace(0, 1, 7)))
        for lo, hi in zip(edges[:-1], edges[1:]):
            sel = [r for r, v in zip(rows, nums) if lo <= v < hi or (hi == edges[-1] and v == hi)]
            if sel:
                groups.append((f"{lo:.3g} - {hi:.3g}", sel))
    else:
        for v in sorted(set(vals), key=lambda x: (len(x), x)):
            groups.append((v, [r for r in rows if r[key] == v]))
    return groups


def table(rows, key):
    lines = [f"| {key} | crops | exact | dropped chars | other errors |", "|---|---|---|---|---|"]
    for label, sel in breakdown(rows, key):
        wrong = [r for r in sel if r["read"] != r["truth"]]
        dropped = sum(len(r["read"]) < len(r["truth"]) for r in wrong)
        right = len(sel) - len(wrong)
        lines.append(f"| {label} | {len(sel)} | {100.0 * right / len(sel):.1f}% | {dropped} | {len(wrong) - dropped} |")
    return "\n".join(lines)


def has_repeat(t):
    return any(a == b for a, b in zip(t, t[1:]))


def sweep(a):
    """Clean crops (eval_printed.py, seed SWEEP_SEED) with one property forced: the text
    height ratio, then the width alone (the crop squeezed or stretched after rendering,
    which changes the frames per character but not the glyphs' height)."""
    import tempfile
    import eval_printed
    from PIL import Image
    fs = eval_printed.faces()
    conditions = [(f"ratio {r:.2f}", r, 1.0) for r in (0.40, 0.45, 0.50, 0.60, 0.70, 0.80, 0.90, 0.95)]
    conditions += [(f"ratio 0.45, width x{s}", 0.45, s) for s in (1.5, 2.0)]
    conditions += [(f"ratio 0.75, width x{s}", 0.75, s) for s in (0.5, 0.6, 0.75)]
    print("| crops | chars/crop | char width at h32 (px) | frames/char (W/4) | " +
          " | ".join(os.path.basename(m) for m in a.model) + " | no repeats | with repeats |")
    print("|---|---|---|---|" + "---|" * len(a.model) + "---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, ratio, stretch in conditions:
            d = os.path.join(tmp, name.replace(" ", "_").replace(",", ""))
            samples = []
            for i in range(a.count):
                img, row = eval_printed.make_crop(np.random.default_rng([SWEEP_SEED, i]), fs, ratio=ratio, clean=True,
                                                  stretch=stretch)
                samples.append((img, {"file": f"images/{i:05d}.png", **row}))
            evalkit.write_set(d, samples)
            cells, rep = [], ""
            for m in a.model:
                rows, res = evalkit.evaluate(a.onyx, m, d)
                cells.append(f"{100 * res['all']['accuracy']:.1f}%")
                if m == a.model[0]:
                    nr = [r for r in rows if not has_repeat(r["truth"])]
                    wr = [r for r in rows if has_repeat(r["truth"])]
                    acc = lambda rs: 100.0 * sum(r["read"] == r["truth"] for r in rs) / max(len(rs), 1)
                    rep = f"{acc(nr):.1f}% ({len(nr)}) | {acc(wr):.1f}% ({len(wr)})"
            cw = np.mean([float(s[1]["char_w32"]) for s in samples])
            fpc = np.mean([s[1]["frames_per_char4"] for s in samples])
            print(f"| {name} | {np.mean([len(s[1]['truth']) for s in samples]):.1f} | {cw:.1f} | {fpc:.2f} | "
                  + " | ".join(cells) + f" | {rep} |", flush=True)


SWEEP_SEED = 12


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", help="a written set (eval_printed.py / eval_drawn.py --out)")
    ap.add_argument("--sweep", action="store_true", help="the controlled sweep instead (see sweep())")
    ap.add_argument("--count", type=int, default=300, help="crops per condition of --sweep")
    ap.add_argument("--onyx", default=os.path.join(evalkit.ROOT, "build", "onyx"))
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--keys", help="comma-separated columns (default: all)")
    a = ap.parse_args()
    if a.sweep:
        return sweep(a)
    for m in a.model:
        rows, res = evalkit.evaluate(a.onyx, m, a.set)
        for r in rows:
            if "w32" in r:
                r["frames_per_char2"] = str(int(r["w32"]) // 2 / len(r["truth"]))
        print(f"## {os.path.basename(m)}: {evalkit.pct(res['all'])}\n")
        keys = a.keys.split(",") if a.keys else [k for k in rows[0] if k not in SKIP]
        for k in keys:
            print(table(rows, k) + "\n")


if __name__ == "__main__":
    main()
