#!/usr/bin/env python3
"""Per-call overhead of onyx's Python binding: the median time of one
InferenceSession.run from Python minus the median time of one C++ Session::run
(bench/python_overhead.cc) on the same tiny model (y = x + 1 on COUNT floats), fed the same
input every call. onnxruntime's Python binding is measured the same way where it is
importable (its C++ side is not measured: its Python figure is given as is).

usage: python_overhead.py --build-dir build [--calls 20000] [--count 1] [--out bench/RESULTS-python.md]
Needs the onyx module on PYTHONPATH (build/python) and onnx; never run by the tests.
"""
import argparse
import datetime
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper


def tiny_model(path, count):
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["y"])], "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [count])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [count])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def median_ns(fn, calls):
    for _ in range(1000):
        fn()
    times = []
    clock = time.perf_counter_ns
    for _ in range(calls):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5, help="median of this many medians")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    build = pathlib.Path(a.build_dir).resolve()
    sys.path.insert(0, str(build / "python"))
    import onyx

    work = build / "bench-python"
    work.mkdir(exist_ok=True)
    model = work / "tiny.onnx"
    tiny_model(str(model), a.count)
    x = np.zeros(a.count, np.float32)

    sess = onyx.InferenceSession(str(model))
    py = [median_ns(lambda: sess.run(None, {"x": x}), a.calls) for _ in range(a.repeats)]
    py_names = [median_ns(lambda: sess.run(["y"], {"x": x}), a.calls) for _ in range(a.repeats)]
    cpp = []
    for _ in range(a.repeats):
        r = subprocess.run([str(build / "onyx_python_overhead"), str(model), "x", str(a.count), str(a.calls)],
                           check=True, capture_output=True, text=True)
        cpp.append(float(r.stdout.strip()))
    ort_line = None
    try:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        osess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
        ort_py = [median_ns(lambda: osess.run(None, {"x": x}), a.calls) for _ in range(a.repeats)]
        ort_line = f"| onnxruntime {ort.__version__} Python `run(None, feed)` | {statistics.median(ort_py) / 1000:.2f} |"
    except ImportError:
        ort_line = None

    p, pn, c = statistics.median(py), statistics.median(py_names), statistics.median(cpp)
    lines = [
        "# Python binding overhead",
        "",
        f"`bench/python_overhead.py` ({datetime.date.today().isoformat()}, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, numpy {np.__version__}): model y = x + 1 on {a.count} float(s), "
        f"one thread, median of {a.repeats} medians of {a.calls} calls each, same input every call.",
        "",
        "| what | median per call (us) |",
        "|---|---|",
        f"| C++ `Session::run(feeds)` (bench/python_overhead.cc) | {c / 1000:.2f} |",
        f"| Python `InferenceSession.run(None, feed)` | {p / 1000:.2f} |",
        f"| Python `InferenceSession.run(['y'], feed)` | {pn / 1000:.2f} |",
    ]
    if ort_line:
        lines.append(ort_line)
    lines += [
        "",
        f"Overhead of the Python call over C++: **{(p - c) / 1000:.2f} us** median (`run(None, ...)`), "
        f"{(pn - c) / 1000:.2f} us with output names (target: at most 10 us).",
        "",
    ]
    if not ort_line:
        lines += ["onnxruntime's Python binding is not installed here (Debian has no python3-onnxruntime, the "
                  "project's onnxruntime is the npm onnxruntime-node, and this machine has no network to pip-install "
                  "it), so its figure is not given; where `import onnxruntime` works the script adds its row.", ""]
    lines += [f"Load average at the start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (a shared machine: "
              "medians, not means, for that reason).", ""]
    text = "\n".join(lines)
    print(text)
    if a.out:
        pathlib.Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
