#!/usr/bin/env python3
"""The graph optimizer on whole models, through the CLI.

  optimize_models_test.py --onyx BUILD/onyx --build-dir BUILD [--work DIR] [--only NAME ...]

For each model (resnet18, mobilenet_v2, lstm and transformer of BUILD/models, exported by
`ctest -R models_export`, and the digit reader models/crnn-digits):
  1. `onyx optimize --level basic` and `--level all --fused` write the optimized graph; the
     node counts before/after and the ai.onyx ops made are printed (the report);
  2. the basic file (standard ops only) must pass onnx.checker (Debian's onnx) and give
     onnxruntime-node's outputs for the original model; the --fused file must carry only
     standard and ai.onyx ops;
  3. `onyx run --optimize none`, `onyx run` (all), `onyx run --reference` and `onyx run` of
     both written files (--optimize none) must all agree within the models_parity
     tolerance (rtol 1e-3, atol 1e-4) with onnxruntime-node on the original model.
Exit status 0 all pass, 1 a failure, 77 (skip) when numpy or onnx is missing or the models
were not exported (torch missing).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RTOL, ATOL = 1e-3, 1e-4
SKIP = 77

try:
    import numpy as np
    import onnx
    from onnx import checker
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIP: numpy/onnx not importable ({e}); install python3-numpy python3-onnx")
    sys.exit(SKIP)


def run(cmd, what, timeout=600):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{what} exited with {p.returncode}: {(p.stderr or p.stdout).strip()}")
    return p.stdout


def outputs_in(folder):
    return {f[:-4]: np.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder)) if f.endswith(".npy")}


def compare(label, got, want):
    """Returns a list of failure strings."""
    bad = []
    for name, r in want.items():
        if name not in got:
            bad.append(f"{label}: no output {name}")
            continue
        g = got[name]
        if g.shape != r.shape or g.dtype != r.dtype:
            bad.append(f"{label}: {name} is {g.dtype}{g.shape}, expected {r.dtype}{r.shape}")
            continue
        if g.dtype.kind in "fc":
            ok = np.allclose(g.astype(np.float64), r.astype(np.float64), rtol=RTOL, atol=ATOL)
            err = float(np.max(np.abs(g.astype(np.float64) - r.astype(np.float64)))) if g.size else 0.0
        else:
            ok = np.array_equal(g, r)
            err = 0.0 if ok else float("inf")
        if not ok:
            bad.append(f"{label}: {name} max abs err {err:.3g} out of tolerance")
    return bad


def op_counts(path):
    m = onnx.load(path)
    counts = {}
    for n in m.graph.node:
        key = (n.domain + "." if n.domain else "") + n.op_type
        counts[key] = counts.get(key, 0) + 1
    return m, counts


def crnn_entry(work):
    """The digit reader with two random input sets (widths 64 and 100)."""
    rng = np.random.default_rng(7)
    sets = []
    for k, w in enumerate((64, 100)):
        d = os.path.join(work, "crnn-digits", f"set_{k}")
        os.makedirs(d, exist_ok=True)
        f = os.path.join(d, "input.npy")
        np.save(f, rng.random((1 + k, 1, 32, w), dtype=np.float32))
        sets.append({"dir": d, "inputs": {"input": f}})
    return {"name": "crnn-digits", "model": os.path.join(ROOT, "models", "crnn-digits",
                                                          "crnn-digits-v1-opset17.onnx"), "sets": sets}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onyx", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--work", help="scratch folder (default BUILD_DIR/optimize_models)")
    ap.add_argument("--node", default=shutil.which("node") or "node")
    ap.add_argument("--only", action="append")
    a = ap.parse_args()
    manifest_path = os.path.join(a.build_dir, "models", "manifest.json")
    if not os.path.exists(manifest_path):
        print(f"SKIP: {manifest_path} is missing (the models are exported by ctest -R models_export, "
              f"which needs torch)")
        return SKIP
    work = a.work or os.path.join(a.build_dir, "optimize_models")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open(manifest_path) as f:
        entries = json.load(f) + [crnn_entry(work)]
    failures = []
    report = []
    for e in entries:
        name = e["name"]
        if a.only and name not in a.only:
            continue
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        files = {}
        info = {}
        try:
            for level, extra in (("basic", []), ("all", ["--fused"])):
                out = os.path.join(d, f"{level}.onnx")
                info[level] = json.loads(run([a.onyx, "optimize", e["model"], "-o", out, "--level", level, *extra,
                                              "--json"], f"onyx optimize --level {level}"))
                files[level] = out
        except RuntimeError as err:
            failures.append(f"{name}: {err}")
            continue
        basic_model, basic_ops = op_counts(files["basic"])
        _, all_ops = op_counts(files["all"])
        try:
            checker.check_model(basic_model)
        except Exception as err:  # onnx raises ValidationError and others
            failures.append(f"{name}: the --level basic model fails onnx.checker: {err}")
        if any(k.startswith("ai.onyx.") for k in basic_ops):
            failures.append(f"{name}: --level basic wrote ai.onyx ops: {sorted(basic_ops)}")
        if any("." in k and not k.startswith("ai.onyx.") for k in all_ops):
            failures.append(f"{name}: unexpected domains in the --fused model: {sorted(all_ops)}")
        fused = {k: v for k, v in sorted(all_ops.items()) if k.startswith("ai.onyx.")}
        report.append((name, info["basic"]["nodes_before"], info["basic"]["nodes_after"], info["all"]["nodes_after"],
                       fused, [p["pass"] + f" {p['rewrites']}" for p in info["all"]["passes"] if p["rewrites"]]))
        for k, s in enumerate(e["sets"]):
            label = f"{name} set_{k}"
            feeds = []
            for iname, f in s["inputs"].items():
                feeds += ["--input", f"{iname}={f}"]
            try:
                ort_dir = os.path.join(d, f"set_{k}_ort")
                run([a.node, os.path.join(ROOT, "tests", "models", "run_ort.js"), e["model"], *feeds,
                     "--output-dir", ort_dir], "onnxruntime-node (original)")
                want = outputs_in(ort_dir)
                ort_basic = os.path.join(d, f"set_{k}_ort_basic")
                run([a.node, os.path.join(ROOT, "tests", "models", "run_ort.js"), files["basic"], *feeds,
                     "--output-dir", ort_basic], "onnxruntime-node (basic file)")
                failures += compare(f"{label} onnxruntime on the --level basic file", outputs_in(ort_basic), want)
                variants = [("onyx --optimize none", e["model"], ["--optimize", "none"]),
                            ("onyx (all)", e["model"], []),
                            ("onyx --reference", e["model"], ["--reference"]),
                            ("onyx --reference --optimize all", e["model"], ["--reference", "--optimize", "all"]),
                            ("onyx on the basic file", files["basic"], ["--optimize", "none"]),
                            ("onyx on the --fused file", files["all"], ["--optimize", "none"])]
                for v, model, flags in variants:
                    od = os.path.join(d, f"set_{k}_" + v.replace(" ", "_").replace("-", ""))
                    run([a.onyx, "run", model, *feeds, "--output-dir", od, *flags], v)
                    failures += compare(f"{label} {v}", outputs_in(od), want)
            except RuntimeError as err:
                failures.append(f"{label}: {err}")
        print(f"{'FAIL' if any(f.startswith(name) for f in failures) else 'PASS'} {name}", flush=True)

    print("\nmodel            nodes  basic  all   ai.onyx ops (all --fused)")
    for name, before, basic, after, fused, passes in report:
        ops = ", ".join(f"{k[8:]} {v}" for k, v in fused.items()) or "-"
        print(f"{name:16s} {before:5d}  {basic:5d}  {after:4d}  {ops}")
        print(f"{'':16s} passes: {', '.join(passes)}")
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        return 1
    print(f"\noptimize_models: {len(report)} models pass (rtol {RTOL:g}, atol {ATOL:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
