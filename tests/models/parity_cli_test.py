#!/usr/bin/env python3
"""End-to-end test of `onyx parity` on PyTorch exports (ctest `parity_cli`).

  parity_cli_test.py --onyx BUILD/onyx [--build-dir BUILD] [--image-size N]

1. mobilenet_v2 (torchvision, random weights, export_models.py's recipe) at a small image
   size, 3 samples (one of batch 2) written with tools/python/onyx_parity_ref.py (inputs
   and PyTorch outputs as .npz), onnxruntime-node references from ort_reference.js:
   onyx parity against onnxruntime passes at rtol 1e-3 / atol 1e-4, writes HTML and
   markdown reports with the histogram, and its JSON feeds `onyx card --parity`.
2. The same references with one sample perturbed: parity fails (exit 1) and names that
   sample as the worst, in the text, the JSON and the report.
3. A small CTC model (Conv1d + GRU + Linear, log-softmax over blank + "abcdefg"): parity
   with --decode ctc --alphabet reports every decoded string identical (CER 0); with
   references whose frames are altered it reports the mismatch and a CER above 0.

Exit status: 0 pass, 1 fail, 77 (ctest skip) when torch, torchvision or numpy is missing.
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = 77

failures = []


def check(cond, what):
    print(("PASS " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def run(cmd, expect=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if expect is not None and p.returncode != expect:
        print(f"command {' '.join(cmd)} exited {p.returncode}, expected {expect}\n"
              f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onyx", required=True)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--node", default=shutil.which("node") or "node")
    a = ap.parse_args()

    missing = [m for m in ("numpy", "torch", "torchvision") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"SKIP parity_cli: {', '.join(missing)} not importable by {sys.executable} "
              "(Debian: python3-torch python3-torchvision python3-numpy, from scripts/setup.sh)")
        return SKIP
    if not os.path.isdir(os.path.join(ROOT, "node_modules", "onnxruntime-node")):
        print(f"FAIL: onnxruntime-node is not installed in {ROOT}/node_modules; run scripts/setup.sh")
        return 1
    import numpy as np
    import torch
    import torch.nn as nn
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
    import export_models
    from onyx_parity_ref import save_torch_reference

    work = os.path.join(os.path.abspath(a.build_dir), "parity_cli")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    onyx, node = a.onyx, a.node
    ort_ref = os.path.join(HERE, "ort_reference.js")

    # ---- 1. mobilenet_v2 against onnxruntime-node ----
    entry = [m for m in export_models.build_models(a.image_size) if m[0] == "mobilenet_v2"][0]
    name, model, ex_args, in_names, out_names, dyn, _ = entry
    model_path = os.path.join(work, "mobilenet_v2.onnx")
    export_models.export(model, ex_args, model_path, in_names, out_names, dyn)
    rng = np.random.default_rng(7)
    s = a.image_size
    samples = [rng.standard_normal((1, 3, s, s), dtype=np.float32),
               rng.standard_normal((2, 3, s, s), dtype=np.float32),
               rng.standard_normal((1, 3, s, s), dtype=np.float32)]
    inputs, torch_ref, ort_dir = (os.path.join(work, d) for d in ("inputs", "torch", "ort"))
    names = save_torch_reference(model, samples, inputs, torch_ref, input_names=in_names, output_names=out_names)
    check(names == ["sample_000", "sample_001", "sample_002"], f"onyx_parity_ref wrote samples {names}")
    run([node, ort_ref, model_path, "--inputs", inputs, "--output", ort_dir], expect=0)
    check(sorted(os.listdir(ort_dir)) == ["reference.json", "sample_000.npz", "sample_001.npz", "sample_002.npz"],
          "ort_reference.js wrote one .npz per sample and reference.json")

    html, md = os.path.join(work, "report.html"), os.path.join(work, "report.md")
    p = run([onyx, "parity", model_path, "--inputs", inputs, "--reference", ort_dir, "--rtol", "1e-3",
             "--atol", "1e-4", "--json", "--report", html], expect=0)
    check(p.returncode == 0, "parity vs onnxruntime-node exits 0")
    res = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
    check(res.get("pass") is True and res.get("samples") == 3 and res.get("passed") == 3,
          f"all 3 samples within rtol 1e-3 / atol 1e-4 (passed {res.get('passed')})")
    out = (res.get("outputs") or [{}])[0]
    print(f"  logits: max abs {out.get('max_abs_error')}, cos min {out.get('cosine_min')}, "
          f"top-1 {out.get('top1_agreement')}")
    check(out.get("within_tolerance") == 3 and out.get("top1_agreement") == 1.0, "per-output summary: 3/3, top-1 100%")
    check(res.get("reference_source", "").startswith("onnxruntime-node"), "reference source read from reference.json")
    check(p.stderr.strip() == "", "--json prints no progress or notes on stderr")
    text = open(html).read() if os.path.exists(html) else ""
    check("<svg" in text and "PASS" in text and "sample_000" in text and "http" not in text.replace(
        "http://www.w3.org/2000/svg", ""), "HTML report is self-contained with an inline SVG histogram")
    p = run([onyx, "parity", model_path, "--inputs", inputs, "--reference", ort_dir, "--report", md], expect=0)
    svg = os.path.join(work, "report-logits-errors.svg")
    check(os.path.exists(md) and os.path.exists(svg) and "report-logits-errors.svg" in open(md).read(),
          "markdown report links its SVG histogram")
    check("PASS: all 3 samples" in p.stdout, "text summary ends with the verdict")

    # Against PyTorch itself (float32 on another runtime): report, with a looser atol.
    p = run([onyx, "parity", model_path, "--inputs", inputs, "--reference", torch_ref, "--atol", "1e-3", "--json"])
    tr = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
    print(f"  vs PyTorch: passed {tr.get('passed')}/{tr.get('samples')}, max abs "
          f"{(tr.get('outputs') or [{}])[0].get('max_abs_error')}")
    check(tr.get("reference_source", "").startswith("torch"), "PyTorch reference parsed (source torch)")

    # The JSON feeds the model card.
    parity_json = os.path.join(work, "parity.json")
    with open(parity_json, "w") as f:
        json.dump(res, f)
    card = os.path.join(work, "mobilenet_v2.md")
    p = run([onyx, "card", model_path, "--parity", parity_json, "-o", card], expect=0)
    check(p.returncode == 0 and "3 of 3 samples" in open(card).read(), "onyx card --parity shows the parity summary")

    # ---- 2. perturbed references fail and name the worst sample ----
    bad = os.path.join(work, "ort_perturbed")
    shutil.copytree(ort_dir, bad)
    ref = dict(np.load(os.path.join(bad, "sample_001.npz")))
    ref["logits"] = ref["logits"].copy()
    ref["logits"][1, 17] += 0.5
    np.savez(os.path.join(bad, "sample_001.npz"), **ref)
    ref2 = dict(np.load(os.path.join(bad, "sample_002.npz")))
    ref2["logits"] = ref2["logits"] + 0.002  # outside tolerance too, but less
    np.savez(os.path.join(bad, "sample_002.npz"), **ref2)
    report = os.path.join(work, "perturbed.html")
    p = run([onyx, "parity", model_path, "--inputs", inputs, "--reference", bad, "--report", report], expect=1)
    check(p.returncode == 1, "parity vs perturbed references exits 1")
    check("FAIL: 2 of 3 samples outside tolerance" in p.stdout and "worst: sample_001" in p.stdout,
          "the verdict counts the failures and names sample_001 as the worst")
    check("[1, 17]" in p.stdout, "the worst element's index is named")
    p = run([onyx, "parity", model_path, "--inputs", inputs, "--reference", bad, "--json"], expect=1)
    pr = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
    check(pr.get("worst_samples", [None])[0] == "sample_001" and pr.get("failed") == 2,
          "JSON: worst_samples starts with sample_001, 2 failed")
    rep = open(report).read() if os.path.exists(report) else ""
    check("sample_001" in rep and "FAIL" in rep, "the report names the failing sample")

    # ---- 3. CTC decoding ----
    class Ctc(nn.Module):
        def __init__(self, feats=12, hidden=24, classes=8):
            super().__init__()
            self.conv = nn.Conv1d(feats, hidden, 3, padding=1)
            self.rnn = nn.GRU(hidden, hidden, batch_first=True)
            self.head = nn.Linear(hidden, classes)

        def forward(self, x):  # x [N, T, F] -> log-probs [N, T, C]
            y = torch.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
            y, _ = self.rnn(y)
            return torch.log_softmax(self.head(y) * 4.0, dim=-1)

    torch.manual_seed(3)
    ctc = Ctc()
    ctc_path = os.path.join(work, "ctc.onnx")
    ex = torch.randn(1, 20, 12)
    ctc.eval()
    torch.onnx.export(ctc, (ex,), ctc_path, opset_version=17, input_names=["features"], output_names=["logp"],
                      dynamic_axes={"features": {0: "N", 1: "T"}, "logp": {0: "N", 1: "T"}})
    ctc_in, ctc_torch, ctc_ort = (os.path.join(work, d) for d in ("ctc_inputs", "ctc_torch", "ctc_ort"))
    gen = torch.Generator().manual_seed(11)
    ctc_samples = {f"line_{i}": torch.randn(1 + i % 2, 16 + 4 * i, 12, generator=gen).numpy() for i in range(4)}
    save_torch_reference(ctc, ctc_samples, ctc_in, ctc_torch, input_names=["features"], output_names=["logp"])
    run([node, ort_ref, ctc_path, "--inputs", ctc_in, "--output", ctc_ort], expect=0)
    alphabet = os.path.join(work, "alphabet.txt")
    with open(alphabet, "w") as f:
        f.write("abcdefg\n")
    p = run([onyx, "parity", ctc_path, "--inputs", ctc_in, "--reference", ctc_ort, "--decode", "ctc",
             "--alphabet", alphabet, "--blank", "0", "--json"], expect=0)
    cr = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
    c = cr.get("ctc") or {}
    print(f"  ctc: {c.get('exact_matches')}/{c.get('sequences')} identical, CER {c.get('cer')}, "
          f"reference chars {c.get('reference_chars')}")
    check(c.get("sequences") == 6 and c.get("exact_matches") == 6 and c.get("cer") == 0.0 and c.get("reference_chars", 0) > 0,
          "CTC: all 6 decoded sequences identical, CER 0")
    # Alter the reference so that one decoded string changes: make every frame of sequence 0
    # of line_0 pick class 1 ('a'), which collapses to the single string "a".
    bad_ctc = os.path.join(work, "ctc_perturbed")
    shutil.copytree(ctc_ort, bad_ctc)
    r0 = dict(np.load(os.path.join(bad_ctc, "line_0.npz")))
    lp = r0["logp"].copy()
    lp[0, :, :] = -10.0
    lp[0, :, 1] = 0.0
    r0["logp"] = lp
    np.savez(os.path.join(bad_ctc, "line_0.npz"), **r0)
    p = run([onyx, "parity", ctc_path, "--inputs", ctc_in, "--reference", bad_ctc, "--decode", "ctc",
             "--alphabet", alphabet, "--json"], expect=1)
    cr = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
    c = cr.get("ctc") or {}
    mm = (c.get("mismatches") or [{}])[0]
    check(c.get("exact_matches") == 5 and c.get("cer", 0) > 0 and mm.get("sample") == "line_0" and mm.get("reference") == "a",
          f"CTC: the altered sequence is reported (onyx '{mm.get('onyx')}' vs reference '{mm.get('reference')}', CER {c.get('cer')})")

    print(f"\nparity_cli: {'FAIL' if failures else 'PASS'} ({len(failures)} failure(s))")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
