#!/usr/bin/env bash
# The main job: the digit reader (models/crnn-digits), a CRNN trained and exported from
# PyTorch, reads the 200 bundled reference crops with onyx (PNG decoding, preprocessing,
# model and CTC decoding all in C++), and the result is compared with what PyTorch read
# and the logits it gave for the same files.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
onyx="$build/onyx"
# v2 (models/crnn-digits/v2): the default reader since it reads printed and drawn digits
# alike (its card); v1 stays beside it with its own card.
dir=models/crnn-digits/v2
model=$dir/crnn-digits-v2-opset17.onnx
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== The digit reader: $model"
"$onyx" card --verify "$dir/MODEL.md" "$model"
echo
echo "== onyx ocr $model $dir/reference/images/000{0..7}.png"
"$onyx" ocr "$model" "$dir"/reference/images/000{0..7}.png
echo
echo "== onyx ocr on all 200 reference crops, compared with PyTorch"
"$onyx" ocr "$model" "$dir"/reference/images/*.png --json --save-logits "$out/logits" > "$out/ocr.json"
/usr/bin/python3 - "$out" "$dir" <<'PY'
import json, os, sys
import numpy as np
out, d = sys.argv[1], sys.argv[2]
res = json.load(open(os.path.join(out, "ocr.json")))
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(d, "reference", "labels.tsv"))][1:]
ref = {os.path.basename(r[0]): r for r in rows}
same = truth = 0
err = 0.0
print(f"  {'crop':10} {'onyx':12} {'PyTorch':12} {'truth':12}")
for i, im in enumerate(res["images"]):
    name = os.path.basename(im["file"])
    _, t, torch_text, _ = ref[name]
    same += im["text"] == torch_text
    truth += im["text"] == t
    stem = os.path.splitext(name)[0]
    got = np.load(os.path.join(out, "logits", stem + ".npy"))
    want = np.load(os.path.join(d, "reference", "torch", stem + ".npz"))["logits"]
    err = max(err, float(np.max(np.abs(got - want))))
    if i % 25 == 0 or im["text"] != torch_text or im["text"] != t:
        mark = ("   <- differs from PyTorch" if im["text"] != torch_text else
                "   <- misread by both" if im["text"] != t else "")
        print(f"  {name:10} {im['text']:12} {torch_text:12} {t:12}{mark}")
s = res["summary"]
n = len(res["images"])
print()
print(f"strings matching PyTorch:   {same}/{n}")
print(f"strings matching the truth: {truth}/{n}  (the reference crops are the training generator's mixture,"
      " blur, low contrast and noise included; the card gives the independent sets' accuracy)")
print(f"max |logit onyx - PyTorch|: {err:.2e}")
print(f"cold load (model to session): {s['cold_load_ms']:.2f} ms; first crop {s['first_run_ms']:.2f} ms")
print(f"warm time per crop: {s['warm_ms']['median']:.2f} ms median, {s['warm_ms']['mean']:.2f} ms mean "
      f"over {s['warm_ms']['crops']} crops")
print(f"threads: {s['threads']}, provider: {s['provider']}")
ok = same == n and err <= 1e-3
print("onyx reads what PyTorch reads" if ok else "MISMATCH with PyTorch")
sys.exit(0 if ok else 1)
PY
echo
echo "Read your own crop: $onyx ocr $model YOUR.png   (details: models/crnn-digits/README.md)"
