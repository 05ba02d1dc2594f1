#!/usr/bin/python3
"""Measures the exported digit reader as users run it: 1,000 fresh synthetic crops
(seed 3; training used seed 1, the held-out set 2024, the reference set 7) are written as
PNG files and read by `onyx ocr`; prints the exact-string accuracy and the character
error rate. Needs numpy, PIL and the fonts (scripts/setup.sh), not torch.

    /usr/bin/python3 models/crnn-digits/evaluate.py [--onyx build/onyx] [--count 1000] [--json]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import synth  # noqa: E402

SEED = 3


def edit_distance(a, b):
    d = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(b) + 1):
            cur = min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] != b[j - 1]))
            prev, d[j] = d[j], cur
    return d[len(b)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onyx", default=os.path.join(ROOT, "build", "onyx"))
    ap.add_argument("--model", default=os.path.join(HERE, "crnn-digits-v1-opset17.onnx"))
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--json", action="store_true", help="print the result as JSON (for meta.json)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        truth = {}
        files = []
        for i in range(a.count):
            img, text = synth.make_crop(np.random.default_rng([a.seed, i]))
            p = os.path.join(tmp, f"{i:05d}.png")
            Image.fromarray(img, mode="L").save(p)
            truth[p] = text
            files.append(p)
        out = subprocess.run([a.onyx, "ocr", a.model, "--meta", os.path.join(HERE, "meta.json"), "--json"] + files,
                             check=True, stdout=subprocess.PIPE, text=True).stdout
    res = json.loads(out)
    right, errs, chars, wrong = 0, 0, 0, []
    for r in res["images"]:
        t = truth[r["file"]]
        right += r["text"] == t
        errs += edit_distance(r["text"], t)
        chars += len(t)
        if r["text"] != t:
            wrong.append((os.path.basename(r["file"]), t, r["text"]))
    if len(res["images"]) != a.count:
        sys.exit(f"evaluate.py: onyx ocr read {len(res['images'])} of {a.count} crops")
    result = {
        "dataset": f"{a.count} fresh synthetic crops (synth.py, seed {a.seed}; not seen in training)",
        "samples": a.count,
        "exact_string_accuracy": f"{100.0 * right / a.count:.1f}% ({right}/{a.count})",
        "character_error_rate": f"{100.0 * errs / max(chars, 1):.2f}%",
        "runtime": "onyx ocr (C++ preprocessing from the PNG files, greedy CTC decoding)",
        "script": "models/crnn-digits/evaluate.py",
        "date": datetime.date.today().isoformat(),
    }
    if a.json:
        print(json.dumps(result))
    else:
        for f, t, g in wrong[:20]:
            print(f"  {f}: true {t!r}, read {g!r}")
        print(f"exact-string accuracy {result['exact_string_accuracy']}, character error rate "
              f"{result['character_error_rate']}")
    sys.exit(0)


if __name__ == "__main__":
    main()
