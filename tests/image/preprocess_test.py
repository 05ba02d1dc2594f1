#!/usr/bin/env python3
"""`onyx ocr --save-inputs` against models/crnn-digits/preprocess.py (ctest `preprocess_parity`).

  preprocess_test.py --onyx BUILD/onyx [--keep DIR]

- PNGs written by PIL (L, LA, RGB, RGBA, P with a transparent index, P with an RGBA
  palette, 16-bit gray, 1-bit; from 1x1 to very wide and very tall, heights below and
  above 32) go through `onyx ocr` with a small ONNX model made here, and every saved
  input tensor is compared with preprocess.preprocess_file (max abs diff <= 1e-6);
- PNGs written byte by byte here (16-bit RGB/RGBA/gray+alpha, 2- and 4-bit gray, tRNS of
  every kind, Adam7 interlacing) are compared with preprocess.py's gray/resize/normalise
  steps applied to the RGBA the PNG specification gives for their samples (PIL itself
  disagrees with the specification on some tRNS cases: those are printed as notes);
- the PNGs of models/crnn-digits/reference/ (when present) against preprocess_file;
- models/crnn-digits/ctc_decode.py against a brute-force sum over every alignment, then
  onyx's decoded strings (greedy, and beam search on the narrower crops) against it run on
  the saved logits, and the logits against the model's formula evaluated here with numpy;
- the parameters of a meta file (height, min width, mean, std, alphabet_file) reach the
  preprocessing; bad images are reported by name while the others are still read; a
  model that is not [N, 1, H, W], a missing alphabet and an alphabet of the wrong size are
  refused with a clear message.
Needs numpy, PIL and onnx (not torch); exits 77 (skip) where one is missing.
"""
import argparse
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

try:
    import numpy as np
    from PIL import Image
    import onnx
    from onnx import TensorProto, helper
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e}")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CRNN = os.path.join(ROOT, "models", "crnn-digits")
sys.path.insert(0, CRNN)
import preprocess  # noqa: E402
import ctc_decode  # noqa: E402

TOL = 1e-6
failures = []


def check(cond, what, detail=""):
    print(("PASS " if cond else "FAIL ") + what + ("" if cond or not detail else "\n" + str(detail)), flush=True)
    if not cond:
        failures.append(what)


def run(*args, timeout=600):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout)


# ---- the model: logits[0, t, k] = SLOPE[k] * mean over H of column t + BIAS[k] ----

CLASSES = 11
SLOPE = np.linspace(-4.0, 4.0, CLASSES).astype(np.float32)
BIAS = np.array([1.5, 0.3, -0.2, 0.9, 0.0, 0.6, -0.4, 0.2, 0.8, -0.1, 0.4], dtype=np.float32)


def make_model(path, height=32, channels=1):
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, channels, height, "W"])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "W", CLASSES])
    nodes = [
        helper.make_node("ReduceMean", ["input"], ["m"], axes=[1, 2], keepdims=0),  # [1, W]
        helper.make_node("Unsqueeze", ["m", "axis2"], ["m3"]),                       # [1, W, 1]
        helper.make_node("Mul", ["m3", "slope"], ["s"]),                              # [1, W, C]
        helper.make_node("Add", ["s", "bias"], ["logits"]),
    ]
    inits = [helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
             helper.make_tensor("slope", TensorProto.FLOAT, [CLASSES], SLOPE.tolist()),
             helper.make_tensor("bias", TensorProto.FLOAT, [CLASSES], BIAS.tolist())]
    g = helper.make_graph(nodes, "fake_crnn", [x], [y], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="preprocess_test")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def model_logits(x):
    """The model's formula on an input [1, 1, H, W], in float64."""
    m = x[0, 0].astype(np.float64).mean(axis=0)
    return (m[:, None] * SLOPE[None, :].astype(np.float64) + BIAS[None, :])[None]


# ---- PNGs written byte by byte, with the RGBA the PNG specification gives ----

def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def pack_row(samples, depth):
    """One scanline (filter 0) of samples (ints) at `depth` bits."""
    if depth == 16:
        return b"\0" + b"".join(struct.pack(">H", int(v)) for v in samples)
    if depth == 8:
        return b"\0" + bytes(int(v) for v in samples)
    out, acc, bits = bytearray(b"\0"), 0, 0
    for v in samples:
        acc, bits = (acc << depth) | int(v), bits + depth
        if bits == 8:
            out.append(acc)
            acc, bits = 0, 0
    if bits:
        out.append(acc << (8 - bits))
    return bytes(out)


def write_png(path, samples, depth, color, plte=None, trns=None, interlace=False):
    """samples: int array [h, w, channels] as the PNG stores them."""
    h, w, _ = samples.shape
    raw = b""
    if not interlace:
        for y in range(h):
            raw += pack_row(samples[y].reshape(-1), depth)
    else:  # Adam7
        for xs, ys, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
                               (0, 1, 1, 2)):
            if xs >= w:
                continue
            for y in range(ys, h, dy):
                raw += pack_row(samples[y, xs::dx].reshape(-1), depth)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, int(interlace)))
    if plte is not None:
        data += chunk(b"PLTE", bytes(plte.reshape(-1).astype(np.uint8)))
    if trns is not None:
        data += chunk(b"tRNS", bytes(trns) if color == 3 else b"".join(struct.pack(">H", v) for v in trns))
    data += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(data)


def spec_rgba(samples, depth, color, plte=None, trns=None):
    """uint8 [h, w, 4] per the PNG specification; 16-bit samples keep their high byte."""
    s = samples.astype(np.int64)
    to8 = (lambda v: v >> 8) if depth == 16 else (lambda v: v * 255 // ((1 << depth) - 1))
    h, w, _ = s.shape
    a = np.full((h, w), 255, dtype=np.int64)
    if color == 3:
        rgb = plte[s[..., 0]].astype(np.int64)
        if trns is not None:
            alpha = np.full(256, 255, dtype=np.int64)
            alpha[:len(trns)] = list(trns)
            a = alpha[s[..., 0]]
    elif color in (0, 4):
        rgb = np.repeat(to8(s[..., :1]), 3, axis=2)
        if color == 4:
            a = to8(s[..., 1])
        elif trns is not None:
            a = np.where(s[..., 0] == trns[0], 0, 255)
    else:
        rgb = to8(s[..., :3])
        if color == 6:
            a = to8(s[..., 3])
        elif trns is not None:
            a = np.where((s[..., :3] == np.array(trns)).all(axis=2), 0, 255)
    return np.dstack([rgb, a]).astype(np.uint8)


def byte_level_cases(folder, rng):
    """Writes the PNGs; returns {path: expected [1, 1, 32, W]} and notes where PIL differs."""
    cases, notes = {}, []

    def add(name, h, w, depth, color, trns=None, interlace=False, pick_trns=False):
        ch = CHANNELS[color]
        top = (1 << depth) - 1
        samples = rng.integers(0, top + 1, (h, w, ch))
        plte = rng.integers(0, 256, (1 << depth, 3)) if color == 3 else None
        if pick_trns:  # the colour of a pixel present in the image
            trns = [int(v) for v in samples[h // 2, w // 2]]
            samples[0, 0] = samples[h // 2, w // 2]
        path = os.path.join(folder, name + ".png")
        write_png(path, samples, depth, color, plte, trns, interlace)
        rgba = spec_rgba(samples, depth, color, plte, trns)
        cases[path] = preprocess.preprocess_gray(preprocess.to_gray(rgba))
        pil = preprocess.decode_rgba(path)
        if pil.shape != rgba.shape or not np.array_equal(pil, rgba):
            notes.append(f"{name}: PIL's decoding differs from the PNG specification "
                         f"({int((pil != rgba).any(axis=2).sum()) if pil.shape == rgba.shape else 'shape'} pixels)")

    add("raw_rgb16", 20, 45, 16, 2)
    add("raw_rgba16", 33, 70, 16, 6)
    add("raw_la16", 40, 31, 16, 4)
    add("raw_la8", 12, 50, 8, 4)
    add("raw_gray16", 64, 9, 16, 0)
    add("raw_gray4", 30, 100, 4, 0)
    add("raw_gray2", 17, 23, 2, 0)
    add("raw_gray1", 35, 80, 1, 0)
    add("raw_gray8_trns", 25, 60, 8, 0, pick_trns=True)
    add("raw_gray16_trns", 25, 60, 16, 0, pick_trns=True)
    add("raw_gray2_trns", 25, 60, 2, 0, pick_trns=True)
    add("raw_gray1_trns", 25, 60, 1, 0, trns=[1])
    add("raw_rgb8_trns", 21, 40, 8, 2, pick_trns=True)
    add("raw_rgb16_trns", 21, 40, 16, 2, pick_trns=True)
    add("raw_pal4_trns", 32, 77, 4, 3, trns=[0, 64, 128, 200, 255, 7])
    add("raw_pal2", 9, 5, 2, 3)
    add("raw_pal1_trns", 50, 50, 1, 3, trns=[0])
    add("raw_interlaced_rgb8", 37, 90, 8, 2, interlace=True)
    add("raw_interlaced_gray16", 13, 7, 16, 0, interlace=True)
    add("raw_interlaced_pal2", 40, 41, 2, 3, trns=[10, 250], interlace=True)
    add("raw_interlaced_rgba8_1x1", 1, 1, 8, 6, interlace=True)
    return cases, notes


# ---- PNGs written by PIL ----

def pil_cases(folder, rng):
    sizes = [(1, 1), (1, 100), (100, 1), (7, 5), (40, 20), (200, 32), (64, 33), (300, 64), (17, 31), (31, 17),
             (1000, 40), (30, 200), (5, 3), (16, 32), (33, 32), (3000, 31)]
    modes = ["L", "LA", "RGB", "RGBA", "P_trns", "P_rgba", "I16", "1"]
    paths = []
    for i, (w, h) in enumerate(sizes):
        for j, mode in enumerate(modes):
            if (i + j) % 2 and (w, h) not in ((1, 1), (1000, 40), (3000, 31)):
                continue  # half of the pairs, every mode and size still covered
            # Dark strokes on a light background with noise: something like a text line.
            base = rng.integers(150, 256, (h, w)).astype(np.int64)
            base[:, (np.arange(w) // 3) % 4 == 0] //= 4
            if mode == "L":
                im = Image.fromarray(base.astype(np.uint8), "L")
            elif mode == "LA":
                im = Image.fromarray(np.dstack([base, rng.integers(0, 256, (h, w))]).astype(np.uint8), "LA")
            elif mode == "RGB":
                im = Image.fromarray(np.dstack([base, rng.integers(0, 256, (h, w)), base // 2]).astype(np.uint8))
            elif mode == "RGBA":
                im = Image.fromarray(rng.integers(0, 256, (h, w, 4)).astype(np.uint8), "RGBA")
            elif mode == "P_trns":
                im = Image.fromarray(rng.integers(0, 256, (h, w)).astype(np.uint8), "P")
                im.putpalette(bytes(rng.integers(0, 256, 768).astype(np.uint8)))
            elif mode == "P_rgba":
                im = Image.fromarray(rng.integers(0, 64, (h, w)).astype(np.uint8), "P")
                im.putpalette(bytes(rng.integers(0, 256, 256).astype(np.uint8)), rawmode="RGBA")
            elif mode == "I16":
                im = Image.fromarray((base * 257 + rng.integers(0, 257, (h, w))).astype(np.uint16))
            else:
                im = Image.fromarray(rng.integers(0, 2, (h, w)).astype(bool))
            path = os.path.join(folder, f"pil_{mode}_{w}x{h}.png")
            if mode == "P_trns":
                im.save(path, transparency=int(rng.integers(0, 256)))
            else:
                im.save(path)
            paths.append(path)
    return paths


# ---- ctc_decode.py on its own: hand-checked cases and a brute-force sum over alignments ----

def check_ctc_twin(rng):
    import itertools
    lg = np.log(np.array([[0.6, 0.4], [0.6, 0.4]], dtype=np.float32))
    labels, lp = ctc_decode.beam_search(ctc_decode.log_probs(lg, 0), 0, 10)
    check(ctc_decode.greedy_decode(lg, 0) == [] and labels == [1] and abs(lp - np.log(0.64)) < 1e-6,
          "ctc_decode.py: blank-heavy frames read '' greedily and 'a' (0.64) by beam search", (labels, lp))
    bad = []
    for it in range(120):
        t, c = 1 + it % 5, 2 + it % 2
        blank = int(rng.integers(0, c))
        logits = (rng.standard_normal((t, c)) * 2).astype(np.float32)
        e = np.exp(logits.astype(np.float64))
        probs = e / e.sum(axis=1, keepdims=True)
        total = {}
        for path in itertools.product(range(c), repeat=t):
            out, prev = [], -1
            for k in path:
                if k != blank and k != prev:
                    out.append(k)
                prev = k
            total[tuple(out)] = total.get(tuple(out), 0.0) + float(np.prod([probs[i, k] for i, k in enumerate(path)]))
        best = max(total.items(), key=lambda kv: kv[1])
        labels, lp = ctc_decode.beam_search(ctc_decode.log_probs(logits, blank), blank, 1000)
        if tuple(labels) != best[0] or abs(np.exp(lp) - best[1]) > 1e-9:
            bad.append(f"T {t} C {c} blank {blank}: beam {labels} {np.exp(lp)}, brute force {best}")
    check(not bad, "ctc_decode.py: a wide beam finds the most probable labelling of 120 random cases (brute force)",
          "\n".join(bad[:10]))


# ---- running onyx ocr ----

def ocr_json(onyx, model, files, save_inputs, save_logits, *extra):
    p = run(onyx, "ocr", model, *files, "--json", "--save-inputs", save_inputs, "--save-logits", save_logits, *extra)
    try:
        return p, json.loads(p.stdout)
    except ValueError:
        return p, None


def compare_inputs(label, expected, save_dir, report):
    worst, bad = 0.0, []
    for path, want in expected.items():
        npy = os.path.join(save_dir, os.path.splitext(os.path.basename(path))[0] + ".npy")
        if not os.path.exists(npy):
            bad.append(f"{os.path.basename(path)}: no saved input")
            continue
        got = np.load(npy)
        if got.shape != want.shape or got.dtype != np.float32:
            bad.append(f"{os.path.basename(path)}: {got.dtype}{list(got.shape)}, expected float32{list(want.shape)}")
            continue
        d = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max())
        worst = max(worst, d)
        if d > TOL:
            bad.append(f"{os.path.basename(path)}: max abs diff {d:.3g}")
    check(not bad, f"{label}: {len(expected)} tensors match preprocess.py (max abs diff {worst:.3g} <= {TOL})",
          "\n".join(bad[:20]))
    report[label] = worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onyx", required=True)
    ap.add_argument("--keep", help="work in this folder and keep it")
    a = ap.parse_args()
    onyx = a.onyx
    work = a.keep or tempfile.mkdtemp(prefix="onyx_preprocess_")
    if a.keep:
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    rng = np.random.default_rng(20261201)
    report = {}
    check_ctc_twin(rng)
    try:
        mdir = os.path.join(work, "model")
        os.makedirs(mdir)
        model = os.path.join(mdir, "fake-crnn.onnx")
        make_model(model)
        meta = {"preprocessing": {"input": "input",
                                  "resize": {"policy": "height", "height": 32, "min_width": 16,
                                             "filter": "triangle (linear), antialiased, half-pixel"},
                                  "scale": "1/255", "mean": [0.5], "std": [0.5], "channel_order": "gray",
                                  "layout": "NCHW", "dtype": "float32"},
                "postprocessing": {"type": "ctc", "output": "logits", "alphabet": "0123456789", "blank": 0}}
        with open(os.path.join(mdir, "meta.json"), "w") as f:
            json.dump(meta, f)

        # ---- PIL files ----
        pil_dir = os.path.join(work, "pil")
        os.makedirs(pil_dir)
        files = pil_cases(pil_dir, rng)
        expected = {p: preprocess.preprocess_file(p) for p in files}
        ins, outs = os.path.join(work, "pil_in"), os.path.join(work, "pil_out")
        p, j = ocr_json(onyx, model, files, ins, outs)
        check(p.returncode == 0 and j is not None, f"onyx ocr reads {len(files)} PIL-written PNGs (meta.json found "
              "next to the model)", p.stderr[-3000:])
        compare_inputs("PIL-written PNGs", expected, ins, report)
        if j:
            check(j.get("meta", "").endswith("meta.json") and j["summary"]["provider"] == "cpu"
                  and j["summary"]["cold_load_ms"] > 0 and j["summary"]["warm_ms"]["crops"] == len(files) - 1,
                  "JSON summary: meta file, provider, cold load, warm crops", json.dumps(j["summary"]))
            bad = []
            for r in j["images"]:
                want = expected[r["file"]]
                logits = np.load(os.path.join(outs, os.path.splitext(os.path.basename(r["file"]))[0] + ".npy"))
                ref = model_logits(want)
                if logits.shape != ref.shape or np.abs(logits - ref).max() > 1e-4:
                    bad.append(f"{r['file']}: logits differ from the model's formula")
                    continue
                text = ctc_decode.decode_batch(logits, "0123456789", 0, "greedy")[0]
                if r.get("text") != text or r.get("width") != want.shape[3] or r.get("frames") != want.shape[3]:
                    bad.append(f"{r['file']}: onyx {r.get('text')!r} width {r.get('width')}, "
                               f"ctc_decode.py {text!r} width {want.shape[3]}")
                if len(r.get("confidence", [])) != len(text):
                    bad.append(f"{r['file']}: {len(r.get('confidence', []))} confidences for {len(text)} characters")
            check(not bad, "greedy strings equal ctc_decode.py on the saved logits; logits equal the model's formula",
                  "\n".join(bad[:20]))
            nonempty = sum(1 for r in j["images"] if r.get("text"))
            check(nonempty > len(files) // 2, f"the fake model reads non-empty strings ({nonempty} of {len(files)})")

        # ---- beam search on the narrower crops ----
        narrow = [f for f in files if expected[f].shape[3] <= 200][:40]
        bdir = os.path.join(work, "beam_out")
        p, jb = ocr_json(onyx, model, narrow, os.path.join(work, "beam_in"), bdir, "--decoder", "beam",
                         "--beam-width", "6")
        check(p.returncode == 0 and jb is not None, f"onyx ocr --decoder beam on {len(narrow)} crops", p.stderr[-3000:])
        if jb:
            bad, differ = [], 0
            for r in jb["images"]:
                logits = np.load(os.path.join(bdir, os.path.splitext(os.path.basename(r["file"]))[0] + ".npy"))[0]
                labels, lp = ctc_decode.beam_search(ctc_decode.log_probs(logits, 0), 0, 6)
                if ctc_decode.beam_decode(logits, 0, 6) != labels:
                    bad.append(f"{r['file']}: beam_decode and beam_search disagree")
                text = ctc_decode.labels_to_text(labels, "0123456789", 0, CLASSES)
                differ += text != ctc_decode.decode_batch(logits[None], "0123456789", 0, "greedy")[0]
                if r.get("text") != text or abs(r.get("log_prob", 1.0) - lp) > 1e-9:
                    bad.append(f"{r['file']}: onyx {r.get('text')!r} {r.get('log_prob')}, ctc_decode.py {text!r} {lp}")
            check(not bad, f"beam strings and log-probabilities equal ctc_decode.py ({differ} differ from greedy)",
                  "\n".join(bad[:20]))

        # ---- byte-level files against the specification ----
        raw_dir = os.path.join(work, "raw")
        os.makedirs(raw_dir)
        cases, notes = byte_level_cases(raw_dir, rng)
        for n in notes:
            print("NOTE " + n)
        ins = os.path.join(work, "raw_in")
        p, _ = ocr_json(onyx, model, list(cases), ins, os.path.join(work, "raw_out"))
        check(p.returncode == 0, f"onyx ocr reads {len(cases)} byte-level PNGs (16-bit, low bit depths, tRNS, "
              "interlaced)", p.stderr[-3000:])
        compare_inputs("byte-level PNGs (specification RGBA + preprocess.py)", cases, ins, report)

        # ---- the reference set of the model, when it exists ----
        ref_files = sorted(glob.glob(os.path.join(CRNN, "reference", "**", "*.png"), recursive=True))
        by_dir = {}
        for f in ref_files:
            by_dir.setdefault(os.path.dirname(f), []).append(f)
        if not ref_files:
            print("NOTE models/crnn-digits/reference/ has no PNGs yet: skipped")
        for k, (d, fs) in enumerate(sorted(by_dir.items())):
            ins = os.path.join(work, f"ref_in_{k}")
            p, _ = ocr_json(onyx, model, fs, ins, os.path.join(work, f"ref_out_{k}"))
            check(p.returncode == 0, f"onyx ocr reads the {len(fs)} reference PNGs of {os.path.relpath(d, ROOT)}",
                  p.stderr[-3000:])
            compare_inputs(f"reference PNGs of {os.path.relpath(d, ROOT)}",
                           {f: preprocess.preprocess_file(f) for f in fs}, ins, report)

        # ---- parameters from a meta file: height 24, min width 8, mean 0, std 1, alphabet_file ----
        m2dir = os.path.join(work, "model24")
        os.makedirs(m2dir)
        model24 = os.path.join(m2dir, "m.onnx")
        make_model(model24, height="H")
        with open(os.path.join(m2dir, "digits.txt"), "w") as f:
            f.write("0123456789\n")
        meta2 = {"preprocessing": {"resize": {"policy": "height", "height": 24, "min_width": 8}, "scale": "1/255",
                                   "mean": [0.0], "std": [1.0]},
                 "postprocessing": {"type": "ctc", "alphabet_file": "digits.txt", "blank": 0}}
        with open(os.path.join(m2dir, "meta.json"), "w") as f:
            json.dump(meta2, f)
        few = [f for f in files if expected[f].shape[3] <= 400][:12]
        saved = {k: getattr(preprocess, k) for k in ("HEIGHT", "MIN_WIDTH", "MEAN", "STD")}
        preprocess.HEIGHT, preprocess.MIN_WIDTH, preprocess.MEAN, preprocess.STD = 24, 8, 0.0, 1.0
        try:
            exp24 = {f: preprocess.preprocess_file(f) for f in few}
        finally:
            for k, v in saved.items():
                setattr(preprocess, k, v)
        ins = os.path.join(work, "h24_in")
        p, _ = ocr_json(onyx, model24, few, ins, os.path.join(work, "h24_out"))
        check(p.returncode == 0, "onyx ocr with a meta file of height 24, min width 8, mean 0, std 1", p.stderr[-3000:])
        compare_inputs("meta parameters (height 24, min width 8, mean 0, std 1)", exp24, ins, report)
        # The same through flags, overriding the meta file of the first model folder.
        ins = os.path.join(work, "flags_in")
        p, _ = ocr_json(onyx, model24, few, ins, os.path.join(work, "flags_out"), "--meta", os.path.join(mdir, "meta.json"),
                        "--height", "24", "--min-width", "8", "--mean", "0", "--std", "1")
        check(p.returncode == 0, "flags override the meta file", p.stderr[-3000:])
        compare_inputs("flag parameters (height 24, min width 8, mean 0, std 1)", exp24, ins, report)

        # ---- bad images: each reported by name, the others still read, exit 1 ----
        bad_dir = os.path.join(work, "bad")
        os.makedirs(bad_dir)
        good = files[0]
        big = max(files, key=os.path.getsize)
        with open(big, "rb") as f:
            big_bytes = f.read()
        bad_files = {"truncated.png": big_bytes[:len(big_bytes) // 2], "empty.png": b"", "text.png": b"hello, not a png\n",
                     "jpeg.png": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "zero.png":
                     b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 0, 5, 8, 0, 0, 0, 0)),
                     "huge.png": b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 40000, 40000, 8, 0, 0, 0, 0))}
        for name, data in bad_files.items():
            with open(os.path.join(bad_dir, name), "wb") as f:
                f.write(data)
        args = [good] + [os.path.join(bad_dir, n) for n in bad_files] + [os.path.join(bad_dir, "missing.png")]
        p = run(onyx, "ocr", model, *args)
        lines = p.stdout.splitlines()
        named = all(os.path.join(bad_dir, n) in p.stderr for n in list(bad_files) + ["missing.png"])
        check(p.returncode == 1 and len(lines) == 1 and lines[0].startswith(good + "\t") and named
              and p.stderr.count("onyx: error:") == len(bad_files) + 1,
              "bad images are reported by name, the good one is still read, exit 1",
              f"exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
        check("not a PNG" in p.stderr and "no such file" in p.stderr and "40000x40000" in p.stderr
              and "empty image" in p.stderr, "messages say what is wrong (not a PNG, missing, too large, empty)",
              p.stderr)
        p = run(onyx, "ocr", model, *args, "--json")
        try:
            jj = json.loads(p.stdout)
            errs = [r for r in jj["images"] if "error" in r]
            ok = p.returncode == 1 and len(errs) == len(bad_files) + 1 and jj["summary"]["failed"] == len(errs)
        except (ValueError, KeyError):
            ok = False
        check(ok, "--json lists the errors per image and counts them", p.stdout[-2000:] + p.stderr[-2000:])

        # ---- bad models and settings ----
        m3 = os.path.join(work, "rgb.onnx")
        make_model(m3, channels=3)
        p = run(onyx, "ocr", m3, good, "--alphabet-string", "0123456789")
        check(p.returncode == 1 and "onyx: error:" in p.stderr and "3 channels" in p.stderr,
              "a 3-channel model is refused", p.stderr)
        nometa = os.path.join(work, "nometa")
        os.makedirs(nometa)
        shutil.copy(model, os.path.join(nometa, "m.onnx"))
        p = run(onyx, "ocr", os.path.join(nometa, "m.onnx"), good)
        check(p.returncode == 1 and "no alphabet" in p.stderr, "a missing alphabet is refused", p.stderr)
        p = run(onyx, "ocr", os.path.join(nometa, "m.onnx"), good, "--alphabet-string", "0123")
        check(p.returncode == 1 and "4 symbols" in p.stderr and "11 classes" in p.stderr,
              "an alphabet of the wrong size is refused", p.stderr)
        p = run(onyx, "ocr", os.path.join(nometa, "m.onnx"), good, "--alphabet-string", "0123456789")
        check(p.returncode == 0 and p.stdout.startswith(good + "\t") and "cold load" in p.stderr
              and "provider cpu" in p.stderr, "flags alone are enough; a summary goes to stderr", p.stderr)
        p = run(onyx, "ocr", model, good, "--meta", os.path.join(CRNN, "..", "tiny-cnn", "meta.json"))
        check(p.returncode == 1 and "ctc" in p.stderr, "a meta file of another kind of model is refused", p.stderr)
        p = run(onyx, "ocr", "--help")
        check(p.returncode == 0 and "triangle" in p.stdout and "299 R" in p.stdout, "--help explains the preprocessing")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("max abs diffs: " + ", ".join(f"{k}: {v:.3g}" for k, v in report.items()))
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
