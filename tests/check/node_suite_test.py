#!/usr/bin/python3
"""ctest `check_node_suite`: `onyx check` accepts every model of the ONNX 1.12 node suite
(Debian's libonnx-testdata) that onnx.checker.check_model(full_check=True) accepts, except
the few listed in tests/check/node_suite_exceptions.txt with the reason.

Also fails when an exception no longer applies (so the list only shrinks). Prints the models
onnx.checker rejects but onyx accepts (for information). Exits 77 (skip) without the suite
or the onnx module.
"""
import argparse
import glob
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onyx", required=True)
    ap.add_argument("--suite", default="/usr/share/libonnx-testdata/data/node")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    try:
        import onnx
    except ImportError:
        print("skip: the onnx Python module is not installed")
        return 77
    models = sorted(glob.glob(os.path.join(args.suite, "*", "model.onnx")))
    if not models:
        print(f"skip: no models under {args.suite}")
        return 77

    exceptions = {}
    with open(os.path.join(HERE, "node_suite_exceptions.txt")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, why = (x.strip() for x in line.split("|", 1))
                exceptions[name] = why

    def checker_ok(path):
        try:
            onnx.checker.check_model(onnx.load(path), full_check=True)
            return True
        except Exception:  # noqa: BLE001
            return False

    def onyx(path):
        p = subprocess.run([args.onyx, "check", path], capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout + p.stderr

    with ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(onyx, models))
    failures, lenient, accepted = [], [], 0
    for path, (rc, out) in zip(models, results):
        name = os.path.basename(os.path.dirname(path))
        ok_checker = checker_ok(path)
        if rc not in (0, 1):
            failures.append(f"{name}: onyx check exited {rc}\n{out}")
            continue
        if ok_checker:
            accepted += 1
            if rc != 0 and name not in exceptions:
                failures.append(f"{name}: onnx.checker accepts it, onyx check rejects it:\n{out}")
            if rc == 0 and name in exceptions:
                failures.append(f"{name}: listed in node_suite_exceptions.txt but now accepted; "
                                "remove it from the list")
        elif rc == 0:
            lenient.append(name)
    for name in exceptions:
        if not os.path.exists(os.path.join(args.suite, name, "model.onnx")):
            failures.append(f"{name}: listed in node_suite_exceptions.txt but not in the suite")
    print(f"{len(models)} models; onnx.checker accepts {accepted}; onyx check accepts all of them "
          f"but the {len(exceptions)} listed exceptions")
    if lenient:
        print(f"onnx.checker rejects but onyx check accepts {len(lenient)}: {', '.join(lenient)}")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
