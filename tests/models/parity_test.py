#!/usr/bin/env python3
"""Whole-model parity: onyx against onnxruntime-node on PyTorch-exported models.

  parity_test.py --onyx BUILD/onyx [--build-dir BUILD] [--image-size N] [--only NAME ...]

Exports the models of export_models.py into BUILD/models (re-exporting only when the
export script or the image size changed), runs every input set through `onyx run` and
through tests/models/run_ort.js (onnxruntime-node), and compares every output with numpy
allclose semantics: |onyx - ort| <= atol + rtol * |ort|, rtol 1e-3, atol 1e-4. Prints one
line per model, input set and output with the max abs error and PASS/FAIL, then a summary.

Exit status: 0 all pass, 1 any failure, 77 (ctest's skip code) when torch, torchvision or
numpy is not importable.
"""
import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RTOL = 1e-3
ATOL = 1e-4
SKIP = 77


def skip_if_missing():
    # find_spec, not import: importing torch takes seconds and only the exporter needs it
    # (a torch that is present but broken makes export_models.py exit 77 itself).
    missing = [m for m in ("numpy", "torch", "torchvision") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"SKIP models_parity: {', '.join(missing)} not importable by {sys.executable}; "
              f"PyTorch, torchvision and numpy are needed to export the models (Debian: "
              f"python3-torch python3-torchvision python3-numpy, installed by scripts/setup.sh)")
        sys.exit(SKIP)


def export(py, out_dir, image_size, only):
    """Runs export_models.py unless out_dir already holds an export made by the same
    script with the same options. Returns the manifest."""
    script = os.path.join(HERE, "export_models.py")
    with open(script, "rb") as f:
        key = hashlib.sha256(f.read() + f"|{image_size}|{sorted(only or [])}".encode()).hexdigest()
    stamp = os.path.join(out_dir, "export.stamp")
    manifest = os.path.join(out_dir, "manifest.json")
    if os.path.exists(stamp) and os.path.exists(manifest) and open(stamp).read() == key:
        print(f"models: reusing the export in {out_dir}")
    else:
        if os.path.isdir(out_dir):
            shutil.rmtree(out_dir)
        cmd = [py, script, out_dir, "--image-size", str(image_size)]
        for n in only or []:
            cmd += ["--only", n]
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode == SKIP:
            print(p.stdout.strip())
            sys.exit(SKIP)
        if p.returncode != 0:
            sys.stdout.write(p.stdout + p.stderr)
            print("FAIL: export_models.py failed")
            sys.exit(1)
        print(f"models: exported to {out_dir} in {time.monotonic() - t0:.1f} s")
        with open(stamp, "w") as f:
            f.write(key)
    with open(manifest) as f:
        return json.load(f)


def run_tool(cmd, what, timeout):
    """Runs a runner with --json; returns (summary dict or None, elapsed s, error text)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - t0, f"{what} timed out after {timeout} s"
    dt = time.monotonic() - t0
    if p.returncode != 0:
        return None, dt, f"{what} exited with {p.returncode}:\n{(p.stderr or p.stdout).strip()}"
    try:
        return json.loads(p.stdout), dt, None
    except json.JSONDecodeError:
        return None, dt, f"{what} printed no JSON summary:\n{p.stdout.strip()}\n{p.stderr.strip()}"


def compare(got_file, ref_file):
    """Returns (ok, max abs error, note)."""
    import numpy as np
    if not os.path.exists(got_file):
        return False, float("nan"), "onyx wrote no file for this output"
    got, ref = np.load(got_file), np.load(ref_file)
    if got.dtype != ref.dtype:
        return False, float("nan"), f"dtype {got.dtype} vs ort {ref.dtype}"
    if got.shape != ref.shape:
        return False, float("nan"), f"shape {got.shape} vs ort {ref.shape}"
    if got.size == 0:
        return True, 0.0, ""
    if got.dtype.kind in "fc":
        g, r = got.astype(np.float64), ref.astype(np.float64)
        diff = np.abs(g - r)
        ok = bool(np.allclose(g, r, rtol=RTOL, atol=ATOL))
        finite = np.isfinite(diff)
        max_err = float(diff[finite].max()) if finite.any() else float("inf")
        note = ""
        if not ok:
            bad = ~(diff <= ATOL + RTOL * np.abs(r))
            idx = np.unravel_index(int(np.argmax(np.where(bad, np.nan_to_num(diff, nan=np.inf), -1))),
                                   got.shape)
            note = (f"{int(bad.sum())}/{got.size} elements out of tolerance"
                    f"{'' if finite.all() else f' ({int((~finite).sum())} NaN/inf)'}; worst at "
                    f"{tuple(int(i) for i in idx)}: onyx {got[idx]!r} ort {ref[idx]!r}")
        return ok, max_err, note
    ok = bool(np.array_equal(got, ref))
    max_err = float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).max())
    return ok, max_err, "" if ok else "values differ"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onyx", required=True, help="path of the onyx binary")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"),
                    help="build folder; models and outputs go to BUILD_DIR/models")
    ap.add_argument("--image-size", type=int, default=224, help="CNN input height/width")
    ap.add_argument("--threads", type=int, default=1, help="threads for both runtimes")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per runner call")
    ap.add_argument("--only", action="append", help="test only these models (repeatable)")
    ap.add_argument("--node", default=shutil.which("node") or "node", help="node binary")
    ap.add_argument("--export-only", action="store_true",
                    help="only export the models into BUILD_DIR/models (ctest models_export)")
    a = ap.parse_args()

    skip_if_missing()
    if a.export_only:
        export(sys.executable, os.path.join(os.path.abspath(a.build_dir), "models"), a.image_size, a.only)
        return 0
    if not os.access(a.onyx, os.X_OK):
        print(f"FAIL: onyx binary '{a.onyx}' not found or not executable")
        return 1
    if not os.path.isdir(os.path.join(ROOT, "node_modules", "onnxruntime-node")):
        print(f"FAIL: onnxruntime-node is not installed in {ROOT}/node_modules; run scripts/setup.sh")
        return 1

    t_start = time.monotonic()
    out_dir = os.path.join(os.path.abspath(a.build_dir), "models")
    manifest = export(sys.executable, out_dir, a.image_size, a.only)

    failures = []
    rows = []
    for m in manifest:
        name, model = m["name"], m["model"]
        model_ok, model_err = True, None
        t_onyx = t_ort = 0.0
        for k, s in enumerate(m["sets"]):
            inputs = []
            for iname, f in s["inputs"].items():
                inputs += ["--input", f"{iname}={f}"]
            onyx_dir = os.path.join(s["dir"], "onyx")
            ort_dir = os.path.join(s["dir"], "ort")
            for d in (onyx_dir, ort_dir):
                shutil.rmtree(d, ignore_errors=True)
            label = f"{name} set_{k}"
            threads = ["--threads", str(a.threads)]
            ref, dt, err = run_tool([a.node, os.path.join(HERE, "run_ort.js"), model, *inputs,
                                     "--output-dir", ort_dir, "--json", *threads],
                                    "onnxruntime-node", a.timeout)
            if err:
                print(f"FAIL {label}: reference run failed: {err}")
                failures.append(label)
                model_ok = False
                continue
            t_ort += ref["run_ms"]
            got, dt, err = run_tool([a.onyx, "run", model, *inputs, "--output-dir", onyx_dir,
                                     "--json", *threads], "onyx", a.timeout)
            if err:
                print(f"FAIL {label}: {err}")
                failures.append(label)
                model_ok = False
                continue
            t_onyx += got["run_ms"]
            for o in ref["outputs"]:
                ok, max_err, note = compare(os.path.join(onyx_dir, os.path.basename(o["file"])),
                                            o["file"])
                if max_err == max_err:  # not NaN
                    model_err = max_err if model_err is None else max(model_err, max_err)
                status = "PASS" if ok else "FAIL"
                print(f"  {label} {o['name']}{list(o['shape'])}: max abs err {max_err:.3g} "
                      f"{status}{' - ' + note if note else ''}")
                if not ok:
                    model_ok = False
                    failures.append(f"{label} {o['name']}")
        rows.append((name, model_ok, model_err, t_onyx, t_ort))
        err_text = "n/a" if model_err is None else f"{model_err:.3g}"
        print(f"{'PASS' if model_ok else 'FAIL'} {name}: max abs err {err_text} "
              f"(onyx {t_onyx:.0f} ms, onnxruntime {t_ort:.0f} ms run time)", flush=True)

    print(f"\nmodels_parity: {sum(r[1] for r in rows)}/{len(rows)} models pass "
          f"(rtol {RTOL:g}, atol {ATOL:g}, image {a.image_size}x{a.image_size}) "
          f"in {time.monotonic() - t_start:.1f} s")
    if failures:
        print("failed: " + ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
