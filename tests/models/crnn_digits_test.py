#!/usr/bin/python3
"""The digit reader against its committed references, without torch.

1. `onyx ocr` reads the 200 reference PNGs (C++ preprocessing) and gives the same
   strings as PyTorch (greedy and beam search, labels.tsv), 200/200.
2. `onyx parity` of onyx's logits against PyTorch's (reference/torch/*.npz): every
   sample within rtol 1e-3, atol 1e-4, and the CTC strings equal.
3. onnxruntime-node on the same input tensors (tests/models/ort_reference.js), then
   `onyx parity` against those: every sample within rtol 1e-3, atol 1e-4, strings equal.
4. `onyx card --verify` passes on the committed card and model.

    tests/models/crnn_digits_test.py --onyx build/onyx --work build/crnn_digits_test
        [--model models/crnn-digits/v2/crnn-digits-v2-opset17.onnx]

The model's folder holds its MODEL.md, meta.json, alphabet.txt and reference/ (v1 by default).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL_DIR = os.path.join(ROOT, "models", "crnn-digits")
MODEL = os.path.join(MODEL_DIR, "crnn-digits-v1-opset17.onnx")
REF = os.path.join(MODEL_DIR, "reference")

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if r.returncode != 0:
        print(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def main():
    global MODEL, MODEL_DIR, REF
    ap = argparse.ArgumentParser()
    ap.add_argument("--onyx", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--model", default=MODEL, help="the model; its folder has MODEL.md, alphabet.txt, reference/")
    a = ap.parse_args()
    MODEL = os.path.abspath(a.model)
    MODEL_DIR = os.path.dirname(MODEL)
    REF = os.path.join(MODEL_DIR, "reference")
    try:
        import numpy as np
    except ImportError:
        print("numpy is not installed (scripts/setup.sh installs it): skipped")
        return 77
    if shutil.which("node") is None or not os.path.isdir(os.path.join(ROOT, "node_modules", "onnxruntime-node")):
        print("node or onnxruntime-node is missing (scripts/setup.sh installs them): skipped")
        return 77
    if os.path.isdir(a.work):
        shutil.rmtree(a.work)
    os.makedirs(a.work)

    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(REF, "labels.tsv"))][1:]
    pngs = [os.path.join(REF, r[0]) for r in rows]
    check(len(rows) == 200, f"labels.tsv lists 200 reference crops ({len(rows)})")

    # 1. onyx ocr on the PNG files, greedy and beam, against PyTorch's strings.
    inputs, logits = os.path.join(a.work, "inputs"), os.path.join(a.work, "logits")
    r = run([a.onyx, "ocr", MODEL, "--json", "--save-inputs", inputs, "--save-logits", logits] + pngs)
    if r.returncode != 0:
        check(False, "onyx ocr runs on the reference crops")
        return 1
    greedy = {os.path.basename(x["file"]): x["text"] for x in json.loads(r.stdout)["images"]}
    r = run([a.onyx, "ocr", MODEL, "--json", "--decoder", "beam", "--beam-width", "8"] + pngs)
    beam = {os.path.basename(x["file"]): x["text"] for x in json.loads(r.stdout)["images"]} if r.returncode == 0 else {}
    same_g = sum(greedy.get(os.path.basename(r[0])) == r[2] for r in rows)
    same_b = sum(beam.get(os.path.basename(r[0])) == r[3] for r in rows)
    truth = sum(greedy.get(os.path.basename(r[0])) == r[1] for r in rows)
    check(same_g == len(rows), f"onyx ocr (greedy) reads the same strings as PyTorch: {same_g}/{len(rows)}")
    check(same_b == len(rows), f"onyx ocr (beam, width 8) reads the same strings as PyTorch: {same_b}/{len(rows)}")
    print(f"     (onyx reads the true string on {truth}/{len(rows)})")

    # 2. Logits against PyTorch's, through onyx parity (inputs: onyx's own preprocessing).
    ds = os.path.join(a.work, "dataset")
    os.makedirs(ds)
    for p in pngs:
        stem = os.path.splitext(os.path.basename(p))[0]
        np.savez(os.path.join(ds, stem + ".npz"), input=np.load(os.path.join(inputs, stem + ".npy")))
    common = ["--rtol", "1e-3", "--atol", "1e-4", "--decode", "ctc", "--alphabet",
              os.path.join(MODEL_DIR, "alphabet.txt"), "--blank", "0", "--json"]
    for name, ref in (("PyTorch", os.path.join(REF, "torch")), ("onnxruntime-node", os.path.join(a.work, "ort"))):
        if name == "onnxruntime-node":
            r = run(["node", os.path.join(ROOT, "tests", "models", "ort_reference.js"), MODEL, "--inputs", ds,
                     "--output", ref])
            if r.returncode != 0:
                check(False, "onnxruntime-node runs on the reference inputs")
                continue
        r = run([a.onyx, "parity", MODEL, "--inputs", ds, "--reference", ref] + common)
        try:
            p = json.loads(r.stdout)
        except ValueError:
            check(False, f"onyx parity against {name} gives JSON")
            continue
        out = p["outputs"][0]
        check(p["samples"] == len(rows) and p["passed"] == len(rows),
              f"logits within rtol 1e-3, atol 1e-4 of {name}: {p['passed']}/{p['samples']} samples "
              f"(max abs error {out.get('max_abs_error')})")
        ctc = p.get("ctc", {})
        check(ctc.get("exact_matches") == len(rows),
              f"greedy CTC strings equal to {name}'s: {ctc.get('exact_matches')}/{len(rows)}")

    # 4. The card still describes the model.
    r = run([a.onyx, "card", "--verify", os.path.join(MODEL_DIR, "MODEL.md"), MODEL])
    check(r.returncode == 0, "onyx card --verify passes on the committed MODEL.md")

    print(f"{len(failures)} failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
