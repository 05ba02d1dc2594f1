#!/usr/bin/python3
"""Exports the trained digit reader to ONNX and writes everything that ships with it.

    /usr/bin/python3 models/crnn-digits/export.py [--onyx build/onyx]
    /usr/bin/python3 models/crnn-digits/export.py --version 2   # v2, into v2/

v2 (crnn-digits-v2.pt from `train.py --version 2`) goes to v2/ with the same files
(crnn-digits-v2-opset17.onnx, T = W div 2, reference crops from synth_v2.py seed 7), and
its accuracy is measured on the independent sets (eval_printed.py, eval_drawn.py) for v2
and for v1 side by side, instead of evaluate.py's fresh synth.py crops.

Reads crnn-digits.pt (train.py) and writes, next to this file:
- crnn-digits-v1-opset17.onnx   torch.onnx.export at opset 17; input `input` [N, 1, 32, W],
                                output `logits` [N, T, 11] with N, W (and T = W div 4) dynamic
- reference/images/NNNN.png     200 crops (seed 7, not used in training)
- reference/torch/NNNN.npz      PyTorch's logits for each crop (key `logits`), computed
                                from preprocess.py's tensor of the PNG as written
- reference/labels.tsv          file, true string, PyTorch greedy and beam-search decodings
- meta.json                     the contract (preprocessing, alphabet, versions, date)
- parity.json                   `onyx parity` of onyx against the PyTorch logits
- MODEL.md                      `onyx card` of the model, with the accuracy measured by
                                evaluate.py (1,000 fresh crops read by `onyx ocr`)
- v2 only: parity-onnxruntime.json, `onyx parity` against onnxruntime-node (node and
  node_modules/onnxruntime-node, as tests/models/crnn_digits_test.py uses them)
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import ctc_decode  # noqa: E402
import preprocess  # noqa: E402
import synth  # noqa: E402
import synth_v2  # noqa: E402
from train import BLANK, CRNN, CRNN2  # noqa: E402

MODEL_FILE = "crnn-digits-v1-opset17.onnx"
# Per version: network, generator, weights, output folder, model file.
VERSIONS = {
    1: (CRNN, synth, "crnn-digits.pt", HERE, MODEL_FILE),
    2: (CRNN2, synth_v2, "crnn-digits-v2.pt", os.path.join(HERE, "v2"), "crnn-digits-v2-opset17.onnx"),
}
VERSION = 1
REFERENCE_SEED = 7
REFERENCE_COUNT = 200
BEAM_WIDTH = 8


def run(cmd, **kw):
    """Runs a command from the repository root (so reports name paths relative to it)."""
    shown = [c for c in cmd if not c.endswith(".png")]
    more = len(cmd) - len(shown)
    print("+ " + " ".join(shown) + (f" ... ({more} PNG files)" if more else ""), flush=True)
    return subprocess.run(cmd, check=True, cwd=ROOT, **kw)


def rel(path):
    return os.path.relpath(path, ROOT)


def export(model, path):
    dummy = torch.zeros(1, 1, preprocess.HEIGHT, 96)
    torch.onnx.export(model, dummy, path, opset_version=17, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N", 3: "W"}, "logits": {0: "N", 1: "T"}}, do_constant_folding=True)
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    return m


def write_reference(model, ref_dir):
    """200 PNG crops, PyTorch logits and decodings."""
    if os.path.isdir(ref_dir):
        shutil.rmtree(ref_dir)
    os.makedirs(os.path.join(ref_dir, "images"))
    os.makedirs(os.path.join(ref_dir, "torch"))
    rows = ["file\ttruth\ttorch_greedy\ttorch_beam"]
    right = 0
    for i in range(REFERENCE_COUNT):
        img, text = VERSIONS[VERSION][1].make_crop(np.random.default_rng([REFERENCE_SEED, i]))
        name = f"{i:04d}"
        png = os.path.join(ref_dir, "images", name + ".png")
        Image.fromarray(img, mode="L").save(png, optimize=True)
        x = preprocess.preprocess_file(png)  # from the file as written: what every reader sees
        with torch.no_grad():
            logits = model(torch.from_numpy(x)).numpy().astype(np.float32)
        np.savez_compressed(os.path.join(ref_dir, "torch", name + ".npz"), logits=logits)
        g = ctc_decode.labels_to_text(ctc_decode.greedy_decode(logits[0], BLANK), synth.ALPHABET, BLANK)
        b = ctc_decode.labels_to_text(ctc_decode.beam_decode(logits[0], BLANK, BEAM_WIDTH), synth.ALPHABET, BLANK)
        right += g == text
        rows.append(f"images/{name}.png\t{text}\t{g}\t{b}")
    with open(os.path.join(ref_dir, "labels.tsv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    print(f"reference: {REFERENCE_COUNT} crops, PyTorch reads {right} of them right", flush=True)


def write_meta(path, opset):
    if VERSION == 2:
        return write_meta_v2(path, opset)
    meta = {
        "name": "crnn-digits v1",
        "description": "Reads a string of 1 to 10 digits from a crop of one cell of a measurement table (dark "
                       "digits on a light background, any height, any width). A CRNN (conv stack, BiLSTM, linear) "
                       "trained with CTC loss on synthetic crops (models/crnn-digits/synth.py).",
        "version": "1",
        "license": "Apache-2.0",
        "intended_use": "Reading printed digit strings from tightly cropped table cells; the end-to-end example of "
                        "onyx (PyTorch -> ONNX -> onyx on CPU, in Python and in the browser).",
        "limitations": "Digits only (no decimal point, minus sign, letters or handwriting); one line of text per "
                       "crop; dark ink on light paper (invert light-on-dark crops first); trained on synthetic "
                       "renderings of DejaVu, Liberation and Roboto fonts only.",
        "preprocessing": {
            "input": "input",
            "resize": {"policy": "height", "height": preprocess.HEIGHT, "min_width": preprocess.MIN_WIDTH,
                       "width": "round(w * 32 / h), halves up, at least 16",
                       "filter": "triangle (linear), half-pixel centres, widened by the scale factor when shrinking "
                                 "(antialiasing), taps outside the image dropped and renormalised; vertical pass "
                                 "first, float64"},
            "scale": "1/255",
            "mean": [preprocess.MEAN],
            "std": [preprocess.STD],
            "channel_order": "grayscale: (299 R + 587 G + 114 B + 500) div 1000, alpha composited over white",
            "layout": "NCHW",
            "dtype": "float32",
            "notes": "Reference implementation: models/crnn-digits/preprocess.py; C++ twin: src/image/ "
                     "(onyx ocr, bindings, browser)."
        },
        "postprocessing": {
            "type": "ctc",
            "output": "logits",
            "alphabet": synth.ALPHABET,
            "blank": BLANK,
            "layout": "[N, T, C], T = W div 4 frames",
            "decoder": f"greedy (default) or prefix beam search (width {BEAM_WIDTH}); src/post/ctc.h",
        },
        "outside_graph": [
            "PNG decoding, gray conversion, resize to height 32 and normalisation (preprocessing above)",
            "softmax over the classes (the graph gives logits)",
            "CTC decoding: collapse repeats, drop the blank, map class k > 0 to digit k - 1",
        ],
        "export": {
            "exporter": "torch.onnx.export",
            "torch": torch.__version__,
            "onnx": onnx.__version__,
            "opset": opset,
            "date": datetime.date.today().isoformat(),
            "script": "models/crnn-digits/export.py",
            "command": "/usr/bin/python3 models/crnn-digits/train.py && /usr/bin/python3 models/crnn-digits/export.py",
        },
    }
    with open(path, "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    return meta


def write_meta_v2(path, opset):
    """v1's contract with v2's network, data and frame rate."""
    meta = json.load(open(os.path.join(HERE, "meta.json")))
    meta.pop("evaluation", None)
    meta["name"] = "crnn-digits v2"
    meta["version"] = "2"
    meta["description"] = ("Reads a string of 1 to 10 digits from a crop of one table cell or of a drawing canvas (dark "
                           "digits on a light background, any height, any width). A CRNN (conv stack, BiLSTM, linear) "
                           "with twice v1's frames per pixel of width, trained with CTC loss on synthetic printed and "
                           "pen-drawn crops (models/crnn-digits/synth_v2.py).")
    meta["intended_use"] = ("Reading printed digit strings from cropped table cells and digits drawn with a mouse or a "
                            "finger; the end-to-end example of onyx (PyTorch -> ONNX -> onyx on CPU, in Python and in "
                            "the browser).")
    meta["limitations"] = ("Digits only (no decimal point, minus sign or letters); one line of text per crop; dark ink "
                           "on light paper (invert light-on-dark crops first); trained on synthetic crops only (fonts "
                           "from Debian's font packages and a stroke model of pen-drawn digits), never on scans or "
                           "real people's drawings. Drawn digits are read less reliably than printed ones "
                           "(MODEL.md's evaluation: the drawn set against the printed one).")
    meta["postprocessing"]["layout"] = "[N, T, C], T = W div 2 frames"
    meta["export"].update({"torch": torch.__version__, "onnx": onnx.__version__, "opset": opset,
                           "date": datetime.date.today().isoformat(),
                           "command": "/usr/bin/python3 models/crnn-digits/train.py --version 2 && "
                                      "/usr/bin/python3 models/crnn-digits/export.py --version 2"})
    with open(path, "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    return meta


def evaluate_independent(onyx, model_path):
    """v2's evaluation: both independent sets read by `onyx ocr`, v2 and v1 side by side."""
    import eval_drawn
    import eval_printed
    import evalkit
    v1 = os.path.join(HERE, MODEL_FILE)
    ev = {"dataset": f"independent sets: {eval_printed.DEFAULT_COUNT} printed crops (eval_printed.py, Cairo, seed "
                     f"{eval_printed.SEED}, font families not used in training) and {eval_drawn.DEFAULT_COUNT} drawn "
                     f"crops (eval_drawn.py, Cairo, pointer-event stroke model, seed {eval_drawn.SEED})",
          "samples": eval_printed.DEFAULT_COUNT + eval_drawn.DEFAULT_COUNT}
    with tempfile.TemporaryDirectory() as tmp:
        for name, mod in (("printed", eval_printed), ("drawn", eval_drawn)):
            d = os.path.join(tmp, name)
            mod.build(d, mod.DEFAULT_COUNT)
            for tag, m in (("v2", model_path), ("v1", v1)):
                _, res = evalkit.evaluate(onyx, m, d)
                line = (f"{evalkit.pct(res['all'])}, CER {100 * res['all']['cer']:.2f}%; "
                        + ", ".join(f"{k} {evalkit.pct(t)}" for k, t in res["subsets"].items()))
                ev[f"{name}, {tag}"] = line
                print(f"{name} set, {tag}: {line}", flush=True)
    ev["runtime"] = "onyx ocr (C++ preprocessing from the PNG files, greedy CTC decoding)"
    ev["script"] = "models/crnn-digits/eval_printed.py, models/crnn-digits/eval_drawn.py (via export.py --version 2)"
    ev["date"] = datetime.date.today().isoformat()
    return ev


def parity(onyx, model_path, ref_dir, out_json, ort_json=None):
    """onyx (C++ preprocessing of the PNGs, then the model) against PyTorch's logits, and,
    with `ort_json`, against onnxruntime-node's on the same input tensors."""
    with tempfile.TemporaryDirectory() as tmp:
        pngs = sorted(os.listdir(os.path.join(ref_dir, "images")))
        inputs = os.path.join(tmp, "inputs")
        run([onyx, "ocr", rel(model_path), "--meta", rel(os.path.join(os.path.dirname(model_path), "meta.json")), "--save-inputs", inputs]
            + [rel(os.path.join(ref_dir, "images", p)) for p in pngs], stdout=subprocess.DEVNULL)
        ds = os.path.join(tmp, "dataset")
        os.makedirs(ds)
        for p in pngs:
            stem = os.path.splitext(p)[0]
            np.savez(os.path.join(ds, stem + ".npz"), input=np.load(os.path.join(inputs, stem + ".npy")))
        run([onyx, "parity", rel(model_path), "--inputs", ds, "--reference", rel(os.path.join(ref_dir, "torch")),
             "--rtol", "1e-3", "--atol", "1e-4", "--decode", "ctc", "--alphabet", rel(os.path.join(os.path.dirname(model_path), "alphabet.txt")),
             "--blank", str(BLANK), "--json"], stdout=open(out_json, "w"))
        if ort_json:
            ort = os.path.join(tmp, "ort")
            run(["node", os.path.join(ROOT, "tests", "models", "ort_reference.js"), rel(model_path), "--inputs", ds,
                 "--output", ort])
            run([onyx, "parity", rel(model_path), "--inputs", ds, "--reference", ort, "--rtol", "1e-3", "--atol",
                 "1e-4", "--decode", "ctc", "--alphabet", rel(os.path.join(os.path.dirname(model_path), "alphabet.txt")),
                 "--blank", str(BLANK), "--json"], stdout=open(ort_json, "w"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onyx", default=os.path.join(ROOT, "build", "onyx"), help="the onyx binary (default build/onyx)")
    ap.add_argument("--version", type=int, choices=sorted(VERSIONS), default=1)
    ap.add_argument("--weights", help="default crnn-digits.pt (v1), crnn-digits-v2.pt (v2), next to this file")
    ap.add_argument("--skip-evaluation", action="store_true", help="keep the evaluation already in meta.json")
    a = ap.parse_args()
    a.onyx = os.path.abspath(a.onyx)
    if not os.path.exists(a.onyx):
        sys.exit(f"export.py: {a.onyx} not found; build onyx first (make build)")
    global VERSION
    VERSION = a.version
    net, gen, weights, out_dir, model_file = VERSIONS[a.version]
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    model = net()
    model.load_state_dict(torch.load(a.weights or os.path.join(HERE, weights)))
    model.eval()

    model_path = os.path.join(out_dir, model_file)
    m = export(model, model_path)
    opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
    print(f"wrote {model_path} ({os.path.getsize(model_path)} bytes, opset {opset})", flush=True)
    with open(os.path.join(out_dir, "alphabet.txt"), "w") as f:
        f.write(gen.ALPHABET + "\n")

    ref_dir = os.path.join(out_dir, "reference")
    write_reference(model, ref_dir)
    meta_path = os.path.join(out_dir, "meta.json")
    old_eval = None
    if a.skip_evaluation and os.path.exists(meta_path):
        old_eval = json.load(open(meta_path)).get("evaluation")
    meta = write_meta(meta_path, opset)
    parity_json = os.path.join(out_dir, "parity.json")
    ort_json = os.path.join(out_dir, "parity-onnxruntime.json") if a.version == 2 else None
    parity(a.onyx, model_path, ref_dir, parity_json, ort_json)
    p = json.load(open(parity_json))
    print(f"parity with PyTorch: {p.get('passed')}/{p.get('samples')} samples within rtol 1e-3, atol 1e-4", flush=True)
    if ort_json:
        p = json.load(open(ort_json))
        print(f"parity with onnxruntime-node: {p.get('passed')}/{p.get('samples')} samples within rtol 1e-3, "
              f"atol 1e-4", flush=True)

    if old_eval is None and a.version == 2:
        old_eval = evaluate_independent(a.onyx, model_path)
    if old_eval is None:
        out = subprocess.run([sys.executable, os.path.join(HERE, "evaluate.py"), "--onyx", a.onyx, "--json"],
                             check=True, stdout=subprocess.PIPE, text=True).stdout
        old_eval = json.loads(out)
    meta["evaluation"] = old_eval
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    if a.version == 1:
        print(f"accuracy read by onyx ocr on {old_eval['samples']} fresh crops: {old_eval['exact_string_accuracy']}, "
              f"character error rate {old_eval['character_error_rate']}", flush=True)
    run([a.onyx, "card", rel(model_path), "--meta", rel(meta_path), "--parity", rel(parity_json), "-o",
         rel(os.path.join(out_dir, "MODEL.md"))])
    run([a.onyx, "card", "--verify", rel(os.path.join(out_dir, "MODEL.md")), rel(model_path)])


if __name__ == "__main__":
    main()
