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
4. --decode boxes on a small YOLO-style head built with onnx.helper (Slice, Sigmoid, Mul,
   Concat: raw [N, B, 5+K] -> detections, the same as corners, objectness), references
   computed with numpy: every box matches (recall, precision, mean IoU 1) in both box
   formats; with references where boxes move, vanish, change class or appear, the reported
   counts, recall, precision and mean IoU, overall and per sample, equal the hand-derived
   ones and those of a decoder + NMS + matcher written here in Python; bad options give
   clear errors. `--only boxes` runs this part alone (numpy and onnx, no torch or Node); it
   also runs alone when torch is missing.

Exit status: 0 pass, 1 fail, 77 (ctest skip) when torch, torchvision or numpy is missing
(and the box part, when it could run, passed).
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
    ap.add_argument("--only", choices=["boxes"], help="run one part alone")
    a = ap.parse_args()

    if a.only == "boxes":
        missing = [m for m in ("numpy", "onnx") if importlib.util.find_spec(m) is None]
        if missing:
            print(f"SKIP parity_cli boxes: {', '.join(missing)} not importable by {sys.executable}")
            return SKIP
        work = os.path.join(os.path.abspath(a.build_dir), "parity_cli_boxes")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        boxes_part(a.onyx, work)
        print(f"\nparity_cli (boxes): {'FAIL' if failures else 'PASS'} ({len(failures)} failure(s))")
        return 1 if failures else 0

    missing = [m for m in ("numpy", "torch", "torchvision") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"SKIP parity_cli: {', '.join(missing)} not importable by {sys.executable} "
              "(Debian: python3-torch python3-torchvision python3-numpy, from scripts/setup.sh)")
        if all(importlib.util.find_spec(m) is not None for m in ("numpy", "onnx")):
            print("running the box decoding part alone (numpy and onnx are there)")
            work = os.path.join(os.path.abspath(a.build_dir), "parity_cli_boxes")
            shutil.rmtree(work, ignore_errors=True)
            boxes_part(a.onyx, work)
            if failures:
                return 1
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

    # ---- 4. box decoding ----
    if importlib.util.find_spec("onnx") is None:
        print("SKIP boxes part: onnx is not importable (Debian: python3-onnx)")
    else:
        boxes_part(onyx, os.path.join(work, "boxes"))

    print(f"\nparity_cli: {'FAIL' if failures else 'PASS'} ({len(failures)} failure(s))")
    return 1 if failures else 0


# ---- box decoding (part 4): a reference decoder written here, independent of src/post/boxes.cc ----

def py_decode(out, fmt, score_thr, iou_thr, max_det):
    """Per image of out [N, B, 5+K]: detections (x1, y1, x2, y2, score, cls, row) after the
    confidence filter and per-class NMS, by descending score."""
    import numpy as np
    images = []
    for img in out.astype(np.float64):
        conf = img[:, 4:5] * img[:, 5:]
        dets = []
        for row in range(img.shape[0]):
            cls = int(np.argmax(conf[row]))
            score = float(conf[row, cls])
            if not score >= score_thr:
                continue
            a, b, c, d = (float(v) for v in img[row, :4])
            box = (a, b, c, d) if fmt == "xyxy" else (a - c / 2, b - d / 2, a + c / 2, b + d / 2)
            dets.append(box + (score, cls, row))
        dets.sort(key=lambda t: (-t[4], t[6]))
        kept = []
        for t in dets:
            if all(k[5] != t[5] or py_iou(k, t) <= iou_thr for k in kept):
                kept.append(t)
        images.append(kept[:max_det] if max_det else kept)
    return images


def py_iou(a, b):
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def py_match(got, want, thr=0.5):
    """(matched, sum of IoU): got by descending score takes the best unmatched same-class want."""
    taken, matched, iou_sum = set(), 0, 0.0
    for g in sorted(got, key=lambda t: -t[4]):
        best, best_iou = None, 0.0
        for j, w in enumerate(want):
            if j in taken or w[5] != g[5]:
                continue
            v = py_iou(g, w)
            if v >= thr and (best is None or v > best_iou):
                best, best_iou = j, v
        if best is not None:
            taken.add(best)
            matched += 1
            iou_sum += best_iou
    return matched, iou_sum


def boxes_part(onyx, work):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    os.makedirs(work, exist_ok=True)
    K, B, STRIDE = 3, 30, 4.0
    # The head: raw [N, B, 5+K] -> detections = [raw box * STRIDE, sigmoid(raw scores)] (cxcywh),
    # detections_xyxy = the same with corners, objectness = [N, B, 1].
    i64 = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [len(v)], v)
    inits = [i64("s0", [0]), i64("s2", [2]), i64("s4", [4]), i64("end", [2**62]), i64("ax", [2]), i64("s1", [1]),
             helper.make_tensor("stride", TensorProto.FLOAT, [], [STRIDE]),
             helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])]
    nodes = [
        helper.make_node("Slice", ["raw", "s0", "s4", "ax"], ["box_raw"], name="box_slice"),
        helper.make_node("Slice", ["raw", "s4", "end", "ax"], ["score_logits"], name="score_slice"),
        helper.make_node("Sigmoid", ["score_logits"], ["scores"], name="score_sigmoid"),
        helper.make_node("Mul", ["box_raw", "stride"], ["box"], name="box_scale"),
        helper.make_node("Concat", ["box", "scores"], ["detections"], name="cat_cxcywh", axis=2),
        helper.make_node("Slice", ["box", "s0", "s2", "ax"], ["cxcy"], name="cxcy"),
        helper.make_node("Slice", ["box", "s2", "s4", "ax"], ["wh"], name="wh"),
        helper.make_node("Mul", ["wh", "half"], ["half_wh"], name="half_wh"),
        helper.make_node("Sub", ["cxcy", "half_wh"], ["x1y1"], name="x1y1"),
        helper.make_node("Add", ["cxcy", "half_wh"], ["x2y2"], name="x2y2"),
        helper.make_node("Concat", ["x1y1", "x2y2", "scores"], ["detections_xyxy"], name="cat_xyxy", axis=2),
        helper.make_node("Slice", ["scores", "s0", "s1", "ax"], ["objectness"], name="obj_slice"),
    ]
    f = lambda name, last: helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", B, last])
    graph = helper.make_graph(nodes, "yolo_head", [f("raw", 5 + K)],
                              [f("detections", 5 + K), f("detections_xyxy", 5 + K), f("objectness", 1)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="parity_cli_test")
    onnx.checker.check_model(model)
    model_path = os.path.join(work, "yolo_head.onnx")
    onnx.save(model, model_path)

    def head(raw):  # the model's computation in numpy, float32
        box = raw[..., :4] * np.float32(STRIDE)
        scores = (1 / (1 + np.exp(-raw[..., 4:].astype(np.float64)))).astype(np.float32)
        cxcy, half_wh = box[..., :2], box[..., 2:4] * np.float32(0.5)
        return {"detections": np.concatenate([box, scores], 2),
                "detections_xyxy": np.concatenate([cxcy - half_wh, cxcy + half_wh, scores], 2),
                "objectness": scores[..., :1]}

    logit = lambda p: float(np.log(p / (1 - p)))
    rng = np.random.default_rng(5)
    # Per image 4 objects in cells of a 4x4 grid, 100 px apart, 30-60 px in size, each with a
    # main candidate and two shifted duplicates that NMS removes; the other rows are background
    # (objectness 0.02). objs[sample][image] = [(row of the main candidate, cell, cls, w, h)].
    batches = {"s0": 2, "s1": 1, "s2": 1}
    raws, objs, free_cells = {}, {}, {}
    for name, n in batches.items():
        raw = np.zeros((n, B, 5 + K), np.float32)
        objs[name], free_cells[name] = [], []
        for img in range(n):
            rows = rng.permutation(B)
            cells = rng.permutation(16)
            raw[img, :, :2] = rng.uniform(0, 100, (B, 2)) / STRIDE
            raw[img, :, 2:4] = rng.uniform(10, 40, (B, 2)) / STRIDE
            raw[img, :, 4] = logit(0.02)
            raw[img, :, 5:] = logit(0.5)
            placed = []
            for o in range(4):
                cell, cls = int(cells[o]), int(rng.integers(K))
                cx, cy = 50 + 100 * (cell % 4), 50 + 100 * (cell // 4)
                w, h = rng.uniform(30, 60, 2)
                for j, (dx, p_obj) in enumerate([(0, 0.9 - 0.04 * o), (3, 0.7 - 0.04 * o), (-2, 0.6 - 0.04 * o)]):
                    r = rows[3 * o + j]
                    raw[img, r, :4] = np.array([cx + dx, cy + dx / 2, w, h]) / STRIDE
                    raw[img, r, 4] = logit(p_obj)
                    raw[img, r, 5:] = logit(0.05)
                    raw[img, r, 5 + cls] = logit(0.9)
                placed.append((rows[3 * o:3 * o + 3], cell, cls, w, h))
            objs[name].append(placed)
            free_cells[name].append([int(c) for c in cells[4:]])
        raws[name] = raw

    inputs, ref_dir, bad_dir = (os.path.join(work, d) for d in ("inputs", "ref", "ref_perturbed"))
    for d in (inputs, ref_dir, bad_dir):
        os.makedirs(d, exist_ok=True)
    for name, raw in raws.items():
        np.savez(os.path.join(inputs, name + ".npz"), raw=raw)
        np.savez(os.path.join(ref_dir, name + ".npz"), **head(raw))

    # The perturbed reference: the same head on altered raw candidates.
    bad_raw = {k: v.copy() for k, v in raws.items()}
    rows0, _, _, w0, _ = objs["s0"][1][0]
    bad_raw["s0"][1, rows0, 0] += 0.2 * w0 / STRIDE         # s0[1]: moved by 0.2 w: IoU 2/3, still matched
    rows1 = objs["s1"][0][1][0]
    bad_raw["s1"][0, rows1, 4] = logit(0.01)                  # s1[0]: a box vanishes
    rows2, _, _, w2, _ = objs["s2"][0][2]
    bad_raw["s2"][0, rows2, 0] += 0.5 * w2 / STRIDE         # s2[0]: moved by 0.5 w: IoU 1/3, unmatched
    rows3, _, cls3, _, _ = objs["s2"][0][3]
    bad_raw["s2"][0, rows3, 5 + cls3] = logit(0.05)           # s2[0]: another class
    bad_raw["s2"][0, rows3, 5 + (cls3 + 1) % K] = logit(0.9)
    used = {int(r) for o in objs["s0"][0] for r in o[0]}
    extra = [r for r in range(B) if r not in used][0]
    cell = free_cells["s0"][0][0]
    bad_raw["s0"][0, extra, :4] = np.array([50 + 100 * (cell % 4), 50 + 100 * (cell // 4), 40, 40]) / STRIDE
    bad_raw["s0"][0, extra, 4] = logit(0.95)                  # s0[0]: a box appears
    for name, raw in bad_raw.items():
        np.savez(os.path.join(bad_dir, name + ".npz"), **head(raw))

    def parity(ref, *extra_args, expect=None):
        p = run([onyx, "parity", model_path, "--inputs", inputs, "--reference", ref, "--decode", "boxes", *extra_args],
                expect=expect)
        return p

    def expected(ref, output, fmt, thr=0.25, nms=0.45, max_det=300):
        """Totals and per-sample numbers from the Python decoder, onyx's outputs taken as numpy's."""
        tot = {"images": 0, "agree": 0, "got": 0, "want": 0, "matched": 0, "iou": 0.0}
        per = {}
        for name in sorted(raws):
            got = py_decode(head(raws[name])[output], fmt, thr, nms, max_det)
            want = py_decode(dict(np.load(os.path.join(ref, name + ".npz")))[output], fmt, thr, nms, max_det)
            s = {"images": 0, "agree": 0, "got": 0, "want": 0, "matched": 0, "iou": 0.0}
            for g, w in zip(got, want):
                m, iou = py_match(g, w)
                for d in (s, tot):
                    d["images"] += 1
                    d["agree"] += m == len(g) == len(w)
                    d["got"] += len(g)
                    d["want"] += len(w)
                    d["matched"] += m
                    d["iou"] += iou
            per[name] = s
        return tot, per

    def agrees(rep, exp, label):
        """rep: the JSON boxes block (overall or per sample); exp: the Python numbers."""
        ok = (rep.get("images") == exp["images"] and rep.get("images_agree") == exp["agree"] and
              rep.get("onyx_boxes") == exp["got"] and rep.get("reference_boxes") == exp["want"] and
              rep.get("matched") == exp["matched"])
        recall = exp["matched"] / exp["want"] if exp["want"] else 1.0
        precision = exp["matched"] / exp["got"] if exp["got"] else 1.0
        mean_iou = exp["iou"] / exp["matched"] if exp["matched"] else None
        ok = ok and abs(rep.get("recall", -1) - recall) < 1e-12 and abs(rep.get("precision", -1) - precision) < 1e-12
        if mean_iou is None:
            ok = ok and rep.get("mean_iou") is None
        else:
            ok = ok and rep.get("mean_iou") is not None and abs(rep["mean_iou"] - mean_iou) < 1e-5
        check(ok, f"{label}: onyx {rep.get('onyx_boxes')} / reference {rep.get('reference_boxes')} boxes, "
                  f"{rep.get('matched')} matched, recall {rep.get('recall')}, precision {rep.get('precision')}, "
                  f"mean IoU {rep.get('mean_iou')} (Python: {exp['got']} / {exp['want']}, {exp['matched']}, "
                  f"recall {recall}, precision {precision}, mean IoU {mean_iou})")

    # -- every box matches against the unperturbed reference, in both formats --
    for output, fmt in (("detections", "cxcywh"), ("detections_xyxy", "xyxy")):
        p = parity(ref_dir, "--decode-output", output, "--box-format", fmt, "--json", expect=0)
        res = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
        b = res.get("boxes") or {}
        print(f"  boxes ({output}, {fmt}): {b.get('matched')}/{b.get('reference_boxes')} matched, recall "
              f"{b.get('recall')}, precision {b.get('precision')}, mean IoU {b.get('mean_iou')}, lowest {b.get('min_iou')}")
        check(p.returncode == 0 and res.get("pass") is True, f"{fmt}: parity passes (exit {p.returncode})")
        check(b.get("images") == 4 and b.get("images_agree") == 4 and b.get("reference_boxes") == 16 and
              b.get("onyx_boxes") == 16 and b.get("matched") == 16 and b.get("recall") == 1.0 and b.get("precision") == 1.0
              and abs((b.get("mean_iou") or 0) - 1) < 1e-6 and b.get("differences") == [],
              f"{fmt}: 16 of 16 boxes in 4 images matched, mean IoU 1 (4 objects per image, duplicates removed by NMS)")
        check(b.get("output") == output and b.get("box_format") == fmt and b.get("score_threshold") == 0.25 and
              b.get("iou_threshold") == 0.45 and b.get("max_detections") == 300 and b.get("match_iou") == 0.5,
              f"{fmt}: the JSON states the decoding settings")
        tot, _ = expected(ref_dir, output, fmt)
        agrees(b, tot, f"{fmt} vs the Python decoder")

    # Without NMS (--iou-threshold 1) the duplicates stay: 48 boxes a side, still all matched.
    p = parity(ref_dir, "--iou-threshold", "1", "--json", expect=0)
    b = (json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}).get("boxes") or {}
    check(b.get("onyx_boxes") == 48 and b.get("matched") == 48, f"--iou-threshold 1 keeps the 48 duplicates "
          f"(onyx {b.get('onyx_boxes')}, matched {b.get('matched')})")
    # --max-detections 2: the 2 best per image, 8 in all.
    p = parity(ref_dir, "--max-detections", "2", "--json", expect=0)
    b = (json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}).get("boxes") or {}
    check(b.get("onyx_boxes") == 8 and b.get("matched") == 8, f"--max-detections 2: 8 boxes (got {b.get('onyx_boxes')})")

    # -- perturbed reference: hand-derived totals and the Python decoder's numbers --
    for output, fmt in (("detections", "cxcywh"), ("detections_xyxy", "xyxy")):
        p = parity(bad_dir, "--decode-output", output, "--box-format", fmt, "--json", expect=1)
        res = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
        b = res.get("boxes") or {}
        print(f"  perturbed ({fmt}): {b.get('matched')} matched, {b.get('reference_boxes')} reference, "
              f"{b.get('onyx_boxes')} onyx, recall {b.get('recall')}, precision {b.get('precision')}, "
              f"mean IoU {b.get('mean_iou')}, lowest {b.get('min_iou')}")
        check(p.returncode == 1, f"{fmt}: parity against the perturbed reference exits 1")
        # 16 onyx boxes; the reference loses one (s1) and gains one (s0[0]): 16; unmatched: the
        # vanished box, the one moved by 0.5 w, the relabelled one: 13 matched, one of them at IoU 2/3.
        check(b.get("onyx_boxes") == 16 and b.get("reference_boxes") == 16 and b.get("matched") == 13 and
              b.get("images_agree") == 1 and abs(b.get("recall", 0) - 13 / 16) < 1e-12 and
              abs(b.get("precision", 0) - 13 / 16) < 1e-12 and abs((b.get("mean_iou") or 0) - (12 + 2 / 3) / 13) < 1e-5 and
              abs((b.get("min_iou") or 0) - 2 / 3) < 1e-5,
              f"{fmt}: hand-derived totals: 13 of 16 matched, recall = precision = 13/16, mean IoU (12 + 2/3)/13, lowest 2/3")
        tot, per = expected(bad_dir, output, fmt)
        agrees(b, tot, f"{fmt} perturbed vs the Python decoder, overall")
        by_name = {x.get("name"): x for x in res.get("sample_results", [])}
        for name in sorted(per):
            agrees((by_name.get(name) or {}).get("boxes") or {}, per[name], f"{fmt} perturbed, sample {name}")
        diffs = {(d.get("sample"), d.get("image")) for d in b.get("differences", [])}
        check(diffs == {("s0", 0), ("s1", 0), ("s2", 0)}, f"{fmt}: the differing images are s0[0], s1[0], s2[0] ({diffs})")

    # Text and reports.
    html, md = os.path.join(work, "boxes.html"), os.path.join(work, "boxes.md")
    p = parity(bad_dir, "--report", html, expect=1)
    check("boxes (detections, cxcywh boxes, score >= 0.25" in p.stdout and "recall 81.25%" in p.stdout and
          "precision 81.25%" in p.stdout and "s2[0]: reference 4 boxes, onyx 4, matched 2" in p.stdout,
          "text summary: box settings, recall, precision and the differing images", ) or print(p.stdout)
    rep = open(html).read() if os.path.exists(html) else ""
    check("<h2>Box decoding</h2>" in rep and "81.25%" in rep and "Images whose boxes differ" in rep and "<code>s1</code>" in rep,
          "HTML report: box decoding section with the differing images")
    parity(bad_dir, "--report", md, expect=1)
    text = open(md).read() if os.path.exists(md) else ""
    check("## Box decoding" in text and "| 16 | 16 | 13 | 81.25% | 81.25% |" in text,
          "markdown report: box decoding table")

    # The JSON feeds the model card, which states the box figures.
    p = parity(bad_dir, "--json", expect=1)
    pj, card = os.path.join(work, "boxes_parity.json"), os.path.join(work, "yolo_head.md")
    with open(pj, "w") as fh:
        fh.write(p.stdout)
    p = run([onyx, "card", model_path, "--parity", pj, "-o", card], expect=0)
    text = open(card).read() if os.path.exists(card) else ""
    check("Box decoding of `detections` (cxcywh, score >= 0.25, NMS IoU 0.45): recall 81.25%, precision 81.25%" in text,
          "onyx card --parity states the box recall and precision")

    # Bad invocations: clear errors, exit 1.
    def error(args, needle, what):
        p = run([onyx, "parity", model_path, "--inputs", inputs, "--reference", ref_dir, *args])
        check(p.returncode == 1 and "onyx: error:" in p.stderr and needle in p.stderr,
              f"{what}: exit {p.returncode}, {p.stderr.strip()!r}")
    error(["--decode", "boxes", "--decode-output", "nope"], "no output of that name", "unknown --decode-output")
    error(["--decode", "boxes", "--decode-output", "objectness"], "6 or more", "an output with a last dim of 1")
    error(["--score-threshold", "0.5"], "need --decode boxes", "box options without --decode boxes")
    error(["--decode", "boxes", "--box-format", "xywh"], "cxcywh or xyxy", "unknown --box-format")
    error(["--decode", "boxes", "--iou-threshold", "1.5"], "[0, 1]", "--iou-threshold above 1")
    error(["--decode", "boxes", "--max-detections", "-1"], "0 (no limit) or more", "negative --max-detections")
    error(["--decode", "yolo"], "'boxes'", "an unknown decoder names the known ones")


if __name__ == "__main__":
    sys.exit(main())
