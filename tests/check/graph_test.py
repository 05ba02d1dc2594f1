#!/usr/bin/python3
"""ctest `graph_render`: `onyx graph` draws models/tiny-cnn as DOT, SVG and HTML.

Checks that every node (op type and name), the input and output with their shapes, the
initializer summary and (with --shapes) edge shapes are there; that the HTML page is
self-contained (no external scripts, styles or images) and carries the search box, the
details data and the SVG; that the page's search function (the inline `onyxFind`, run
under Node when it is installed) finds nodes, inputs and outputs by name or op type,
case-insensitively and in graph order, each with an element in the SVG to highlight,
against matches computed here from the details data; and that bad input gives a clear
error, not a crash.
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


NODE_RUNNER = r"""
const fs = require('fs'), vm = require('vm');
const ctx = {};
vm.createContext(ctx);
vm.runInContext(fs.readFileSync(process.argv[2], 'utf8'), ctx);
const data = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const queries = JSON.parse(fs.readFileSync(process.argv[4], 'utf8'));
console.log(JSON.stringify(queries.map(q => ctx.onyxFind(data, q))));
"""


def graph_order(ident):
    m = re.fullmatch(r"(in|n|out)([0-9]+)", ident)
    return ({"in": 0, "n": 1, "out": 2}[m.group(1)], int(m.group(2))) if m else (3, 0)


def expected_hits(data, query):
    """What the search must find: entries whose name or op type holds the text, any case."""
    s = query.strip().lower()
    if not s:
        return []
    hits = [i for i, d in data.items() if s in (d.get("name") or "").lower() or s in (d.get("op") or "").lower()]
    return sorted(hits, key=graph_order)


def check_search(html, queries, tmp, expect, label):
    """Runs the page's own onyxFind under Node on its details data; compares with
    expected_hits and checks that every hit has a node element in the SVG."""
    node = shutil.which("node")
    if node is None:
        print(f"skip: Node is not installed; the search of {label} is not run")
        return
    m = re.search(r"// onyx-find begin[^\n]*\n(.*?)// onyx-find end", html, re.S)
    d = re.search(r'<script type="application/json" id="onyx-data">(.*?)</script>', html, re.S)
    expect(m is not None and d is not None, f"{label}: html lacks the onyx-find block or the details data")
    if not m or not d:
        return
    data = json.loads(d.group(1))
    paths = [os.path.join(tmp, n) for n in ("find.js", "data.json", "queries.json", "runner.js")]
    for path, text in zip(paths, (m.group(1), json.dumps(data), json.dumps(queries), NODE_RUNNER)):
        with open(path, "w") as f:
            f.write(text)
    p = subprocess.run([node, paths[3], *paths[:3]], capture_output=True, text=True, timeout=60)
    expect(p.returncode == 0, f"{label}: node exited {p.returncode}: {p.stderr}")
    if p.returncode != 0:
        return
    results = json.loads(p.stdout)
    svg_ids = set(re.findall(r'<g id="([^"]+)" class="node">', html))
    for query, got in zip(queries, results):
        want = expected_hits(data, query)
        expect(got == want, f"{label}: search {query!r} found {got}, expected {want}")
        expect(all(h in svg_ids for h in got), f"{label}: search {query!r}: hits {got} without an SVG node element")
    return data, dict(zip(queries, results))


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

        # The page's search, on the page's own data.
        queries = ["relu", "RELU", "/features/features.4/Conv", "gemm", "image", "probs", "features.", "  softmax ",
                   "", "no such node"]
        found = check_search(html, queries, tmp, expect, "tiny-cnn")
        if found:
            data, res = found
            expect([data[i]["op"] for i in res["relu"]] == ["Relu", "Relu"], f"'relu' finds the 2 Relu nodes: {res['relu']}")
            expect(res["relu"] == res["RELU"], "search ignores case")
            expect(len(res["/features/features.4/Conv"]) == 1 and
                   data[res["/features/features.4/Conv"][0]]["name"] == "/features/features.4/Conv",
                   "a full node name finds exactly that node")
            expect(res["image"] == ["in0"] and res["probs"] == ["out0"], "the input and the output are found by name")
            expect(res[""] == [] and res["no such node"] == [], "empty text and unknown names find nothing")

        # Graph order beyond 9 nodes (the details JSON sorts its keys as strings: n10 before n2).
        try:
            import onnx
            from onnx import TensorProto, helper
        except ImportError:
            onnx = None
            print("skip: onnx is not importable; the 12-node search order is not checked")
        if onnx is not None:
            nodes = [helper.make_node("Relu", ["x" if i == 0 else f"v{i}"], [f"v{i + 1}" if i < 11 else "y"],
                                      name=f"step_{i}") for i in range(12)]
            vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2])
            chain = helper.make_model(helper.make_graph(nodes, "chain", [vi("x")], [vi("y")]),
                                      opset_imports=[helper.make_opsetid("", 17)])
            chain_path, chain_html = os.path.join(tmp, "chain.onnx"), os.path.join(tmp, "chain.html")
            onnx.save(chain, chain_path)
            rc, _, err = run(args.onyx, chain_path, "--format", "html", "-o", chain_html)
            expect(rc == 0, f"chain --format html exited {rc}: {err}")
            page = open(chain_html).read() if os.path.exists(chain_html) else ""
            found = check_search(page, ["relu", "step_1", "STEP_11"], tmp, expect, "12-node chain")
            if found:
                data, res = found
                expect(res["relu"] == [f"n{i}" for i in range(12)], f"'relu' lists the nodes in graph order: {res['relu']}")
                expect([data[i]["name"] for i in res["step_1"]] == ["step_1", "step_10", "step_11"],
                       f"'step_1' finds step_1, step_10, step_11 in order: {res['step_1']}")
                expect(res["STEP_11"] == ["n11"], "'STEP_11' finds the last node")

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
