#!/usr/bin/python3
"""ctest `graph_render`: `onyx graph` draws models/tiny-cnn as DOT, SVG and HTML.

Checks that every node (op type and name), the input and output with their shapes, the
initializer summary and (with --shapes) edge shapes are there; that the HTML page is
self-contained (no external scripts, styles or images) and carries the search box, the
details data and the SVG; and that bad input gives a clear error, not a crash.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "models", "tiny-cnn", "tiny-cnn-v1-opset17.onnx")
NODES = [("Conv", "/features/features.0/Conv"), ("Relu", "/features/features.2/Relu"),
         ("MaxPool", "/features/features.3/MaxPool"), ("Conv", "/features/features.4/Conv"),
         ("Relu", "/features/features.5/Relu"), ("GlobalAveragePool", "/features/features.6/GlobalAveragePool"),
         ("Flatten", "/features/features.7/Flatten"), ("Gemm", "/head/Gemm"), ("Softmax", "/Softmax")]


def run(onyx, *args):
    p = subprocess.run([onyx, "graph", *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onyx", required=True)
    args = ap.parse_args()
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    rc, dot, err = run(args.onyx, MODEL, "--format", "dot", "--shapes")
    expect(rc == 0, f"--format dot exited {rc}: {err}")
    for op, name in NODES:
        expect(f"<b>{op}</b>" in dot and name in dot, f"dot lacks node {op} {name}")
    expect("<b>image</b>" in dot and "float[N, 1, 28, 28]" in dot, "dot lacks the input and its shape")
    expect("<b>probs</b>" in dot and "float[N, 10]" in dot, "dot lacks the output and its shape")
    expect(re.search(r"\+2 initializers \([0-9.]+ (B|KiB)\)", dot), "dot lacks the initializer summary")
    expect(re.search(r'label=" float\[[^\]]*,8,', dot), "dot --shapes lacks edge shapes")

    if shutil.which("dot") is None:
        print("skip: Graphviz 'dot' is not installed (svg/html need it)")
        return 77 if not failures else 1

    with tempfile.TemporaryDirectory() as tmp:
        svg_path = os.path.join(tmp, "g.svg")
        rc, _, err = run(args.onyx, MODEL, "--format", "svg", "-o", svg_path)
        expect(rc == 0, f"--format svg exited {rc}: {err}")
        svg = open(svg_path).read() if os.path.exists(svg_path) else ""
        expect(svg.lstrip().startswith("<?xml") and "</svg>" in svg, "svg output is not an SVG document")
        for op, name in NODES:
            expect(op in svg and name in svg, f"svg lacks node {op} {name}")
        expect('id="n0"' in svg and 'id="in0"' in svg and 'id="out0"' in svg, "svg lacks element ids")

        html_path = os.path.join(tmp, "g.html")
        rc, _, err = run(args.onyx, MODEL, "--format", "html", "--shapes", "-o", html_path)
        expect(rc == 0, f"--format html exited {rc}: {err}")
        html = open(html_path).read() if os.path.exists(html_path) else ""
        expect(html.startswith("<!DOCTYPE html>") and "<svg" in html, "html does not embed the svg")
        expect('id="q"' in html and "Find nodes" in html, "html lacks the search box")
        expect(not re.search(r'<(script|link|img)[^>]+(src|href)=', html), "html loads external assets")
        m = re.search(r'<script type="application/json" id="onyx-data">(.*?)</script>', html, re.S)
        expect(m is not None, "html lacks the details data")
        if m:
            data = json.loads(m.group(1))
            conv = data.get("n0", {})
            expect(conv.get("op") == "Conv" and any(a["name"] == "kernel_shape" for a in conv.get("attrs", [])),
                   f"details of n0 lack Conv attributes: {conv}")
            expect(any(i.get("initializer") for i in conv.get("inputs", [])), "details lack initializer info")
            expect(data.get("out0", {}).get("name") == "probs", "details lack the output")

    rc, out, err = run(args.onyx, os.path.join(ROOT, "README.md"), "--format", "dot")
    expect(rc == 1 and "onyx: error:" in err, f"a non-model file: exit {rc}, stderr {err!r}")
    rc, out, err = run(args.onyx, MODEL, "--format", "png")
    expect(rc == 2, f"--format png: exit {rc} (want 2)")

    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
