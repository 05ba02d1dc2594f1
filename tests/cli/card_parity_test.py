#!/usr/bin/env python3
"""`onyx card` and `onyx parity` on the bundled tiny-cnn model, with the standard library
only (ctest `card_parity_cli`).

  card_parity_test.py --onyx BUILD/onyx [--work DIR]

- card then --verify passes on a fresh card; --verify fails, naming the hash, after one
  byte of a copy of the model changes; the committed models/tiny-cnn/MODEL.md still
  verifies against the committed model;
- a meta file that contradicts the model is refused with a message naming the key;
- parity on a dataset of .npy folders (PyTorch's output for the bundled image) passes and
  its JSON feeds `onyx card --parity`;
- bad invocations of both commands exit 1 with "onyx: error:" and never crash.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODEL_DIR = os.path.join(ROOT, "models", "tiny-cnn")
MODEL = os.path.join(MODEL_DIR, "tiny-cnn-v1-opset17.onnx")

failures = []


def check(cond, what, detail=""):
    print(("PASS " if cond else "FAIL ") + what + ("" if cond or not detail else "\n" + detail), flush=True)
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120)


def expect_error(p, what, needle):
    ok = p.returncode == 1 and "onyx: error:" in p.stderr and needle in p.stderr
    check(ok, what, f"exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onyx", required=True)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "card_parity_cli"))
    a = ap.parse_args()
    onyx, work = a.onyx, os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    # ---- card ----
    card = os.path.join(work, "tiny-cnn.md")
    p = run(onyx, "card", MODEL, "--meta", os.path.join(MODEL_DIR, "meta.json"), "-o", card)
    check(p.returncode == 0 and os.path.exists(card), "card writes the markdown", p.stderr)
    text = open(card).read() if os.path.exists(card) else ""
    for needle in ("tiny-cnn-v1-opset17.onnx", "SHA-256", "ai.onnx 17", "pytorch", "`image`", "float", "`[N, 1, 28, 28]`",
                   "dynamic 0: N", "fixed 1: 1, 2: 28, 3: 28", "NCHW", "softmax", "Export date", "2026-11-29",
                   "<!-- onyx-card v1"):
        check(needle in text, f"card states {needle!r}")
    p = run(onyx, "card", "--verify", card, MODEL)
    check(p.returncode == 0 and "matches" in p.stdout, "--verify passes on a fresh card", p.stdout + p.stderr)

    copy = os.path.join(work, "changed.onnx")
    data = bytearray(open(MODEL, "rb").read())
    data[len(data) // 2] ^= 0x01  # a byte of the weights: the file still loads
    open(copy, "wb").write(bytes(data))
    p = run(onyx, "card", "--verify", card, copy)
    expect_error(p, "--verify fails after one byte changes and names the hash", "sha256: card ")
    check("input '" not in p.stderr, "only the hash differs (inputs, outputs and opsets still match)", p.stderr)

    committed = os.path.join(MODEL_DIR, "MODEL.md")
    p = run(onyx, "card", "--verify", committed, MODEL)
    check(p.returncode == 0, "the committed models/tiny-cnn/MODEL.md verifies against the committed model", p.stderr)

    # A meta file that contradicts the model.
    meta = json.load(open(os.path.join(MODEL_DIR, "meta.json")))
    bad = dict(meta, preprocessing=dict(meta["preprocessing"], mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]))
    bad_meta = os.path.join(work, "bad_meta.json")
    json.dump(bad, open(bad_meta, "w"))
    expect_error(run(onyx, "card", MODEL, "--meta", bad_meta), "meta with 3 means for 1 channel is refused", "preprocessing.mean")
    json.dump(dict(meta, export=dict(meta["export"], opset=13)), open(bad_meta, "w"))
    expect_error(run(onyx, "card", MODEL, "--meta", bad_meta), "meta with another opset is refused", "export.opset")
    json.dump(dict(meta, postprocessing={"type": "ctc", "alphabet": "abc", "blank": 0, "output": "probs"}), open(bad_meta, "w"))
    expect_error(run(onyx, "card", MODEL, "--meta", bad_meta), "a CTC alphabet that does not fit the classes is refused", "alphabet has 3")
    open(bad_meta, "w").write("{not json")
    expect_error(run(onyx, "card", MODEL, "--meta", bad_meta), "a meta file that is not JSON is refused", "not valid JSON")
    expect_error(run(onyx, "card", "--verify", os.path.join(MODEL_DIR, "make_model.py"), MODEL),
                 "--verify on a file without a card block fails clearly", "no onyx-card block")
    expect_error(run(onyx, "card", os.path.join(work, "missing.onnx")), "card of a missing model fails clearly", "missing.onnx")
    p = run(onyx, "card", MODEL, "--meta", bad_meta, "--verify", card)
    check(p.returncode != 0 and p.returncode < 128, "--verify with --meta is a usage error", p.stderr)

    # ---- parity on a folder-of-.npy dataset ----
    inputs, ref = os.path.join(work, "inputs"), os.path.join(work, "ref")
    os.makedirs(os.path.join(inputs, "seven"))
    os.makedirs(os.path.join(ref, "seven"))
    shutil.copy(os.path.join(MODEL_DIR, "image.npy"), os.path.join(inputs, "seven", "image.npy"))
    shutil.copy(os.path.join(MODEL_DIR, "probs.torch.npy"), os.path.join(ref, "seven", "probs.npy"))
    json.dump({"source": "torch 1.13.1"}, open(os.path.join(ref, "reference.json"), "w"))
    p = run(onyx, "parity", MODEL, "--inputs", inputs, "--reference", ref, "--json")
    res = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
    check(p.returncode == 0 and res.get("pass") is True and res.get("samples") == 1, "parity passes on tiny-cnn vs PyTorch",
          p.stdout + p.stderr)
    pj = os.path.join(work, "parity.json")
    open(pj, "w").write(p.stdout)
    card2 = os.path.join(work, "with_parity.md")
    p = run(onyx, "card", MODEL, "--meta", os.path.join(MODEL_DIR, "meta.json"), "--parity", pj, "-o", card2)
    text = open(card2).read() if os.path.exists(card2) else ""
    check(p.returncode == 0 and "1 of 1 samples" in text and "torch 1.13.1" in text, "card --parity adds the summary", p.stderr)
    p = run(onyx, "card", "--verify", card2, MODEL)
    check(p.returncode == 0, "--verify passes on the card with parity", p.stderr)
    p = run(onyx, "card", copy, "--parity", pj)
    expect_error(p, "card --parity refuses results made for another file", "rerun onyx parity")

    # ---- bad input never crashes ----
    empty = os.path.join(work, "empty")
    os.makedirs(empty)
    expect_error(run(onyx, "parity", MODEL, "--inputs", os.path.join(work, "nope"), "--reference", ref),
                 "parity: a missing inputs folder", "is not a folder")
    expect_error(run(onyx, "parity", MODEL, "--inputs", empty, "--reference", ref), "parity: an empty dataset", "holds no sample")
    other = os.path.join(work, "other_ref")
    os.makedirs(os.path.join(other, "eight"))
    shutil.copy(os.path.join(MODEL_DIR, "probs.torch.npy"), os.path.join(other, "eight", "probs.npy"))
    expect_error(run(onyx, "parity", MODEL, "--inputs", inputs, "--reference", other),
                 "parity: samples without a reference", "have no reference")
    expect_error(run(onyx, "parity", MODEL, "--inputs", inputs, "--reference", ref, "--report", os.path.join(work, "r.pdf")),
                 "parity: a report that is neither .md nor .html", "markdown (.md) or HTML")
    expect_error(run(onyx, "parity", MODEL, "--inputs", inputs, "--reference", ref, "--decode", "beam"),
                 "parity: an unknown decoder", "unknown decoder")

    broken = os.path.join(work, "broken")
    os.makedirs(broken)
    open(os.path.join(broken, "seven.npz"), "wb").write(b"PK\x03\x04 this is not a zip archive at all........")
    p = run(onyx, "parity", MODEL, "--inputs", broken, "--reference", ref)
    check(p.returncode == 1 and "seven.npz" in p.stdout and "FAIL" in p.stdout, "parity: a corrupt .npz fails that sample, named",
          p.stdout + p.stderr)
    wrong = os.path.join(work, "wrong_shape")
    os.makedirs(os.path.join(wrong, "seven"))
    with open(os.path.join(wrong, "seven", "probs.npy"), "wb") as f:
        raw = open(os.path.join(MODEL_DIR, "image.npy"), "rb").read()
        f.write(raw)  # a [1, 1, 28, 28] array where [1, 10] is expected
    p = run(onyx, "parity", MODEL, "--inputs", inputs, "--reference", wrong)
    check(p.returncode == 1 and "differs from the reference's" in p.stdout, "parity: a reference of another shape fails clearly",
          p.stdout + p.stderr)
    p = run(onyx, "parity", "--help")
    check(p.returncode == 0 and "--decode" in p.stdout and "Exit status" in p.stdout, "parity --help explains it")
    p = run(onyx, "card", "--help")
    check(p.returncode == 0 and "--verify" in p.stdout and "postprocessing" in p.stdout, "card --help explains it")

    print(f"\ncard_parity_cli: {'FAIL' if failures else 'PASS'} ({len(failures)} failure(s))")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
