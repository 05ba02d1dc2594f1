#!/usr/bin/python3
"""ctest `check_node_suite` / `check_node_suite_onnx122`: `onyx check` accepts the models of
an ONNX node test suite.

  --reference checker (the ONNX 1.12 suite, Debian's libonnx-testdata): every model that
      onnx.checker.check_model(full_check=True) of onnx 1.12 accepts must pass `onyx check`.
      Prints the models the checker rejects but onyx accepts (for information). Exits 77
      without the onnx module.
  --reference suite (the ONNX 1.22 suite, ../shared/conformance/onnx-node): the suite is the
      reference, every model in it is valid ONNX (onnx 1.12's checker knows neither its IR
      versions nor its opsets, so it cannot judge them), so every one must pass `onyx check`
      with no error.

Models listed in the exceptions file (CASE | WHY) are expected to be rejected, with the
reason; the test fails when a listed case passes again (so the list only shrinks) or is not
in the suite. Exits 77 (skip) without the suite, saying which is missing; with CI=true in
the environment a missing suite is a failure instead.
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
    ap.add_argument("--reference", choices=("checker", "suite"), default="checker")
    ap.add_argument("--exceptions", default=os.path.join(HERE, "node_suite_exceptions.txt"))
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    onnx = None
    if args.reference == "checker":
        try:
            import onnx
        except ImportError:
            print("skip: the onnx Python module is not installed")
            return 77
    models = sorted(glob.glob(os.path.join(args.suite, "*", "model.onnx")))
    if not models:
        msg = (f"no models under {args.suite}: the ONNX node test suite is missing (the "
               "onnx/backend/test/data/node folder of onnx 1.22 for ../shared/conformance/onnx-node, "
               "Debian's libonnx-testdata for the 1.12 one)")
        if os.environ.get("CI") == "true":
            print(f"FAIL: {msg}; CI must have the suite", file=sys.stderr)
            return 1
        print(f"skip: {msg}")
        return 77

    exceptions = {}
    with open(args.exceptions) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, why = (x.strip() for x in line.split("|", 1))
                exceptions[name] = why

    def checker_ok(path):
        if onnx is None:
            return True  # the suite is the reference: every model in it is valid
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
        ok_reference = checker_ok(path)
        if rc not in (0, 1):
            failures.append(f"{name}: onyx check exited {rc}\n{out}")
            continue
        if ok_reference:
            accepted += 1
            if rc != 0 and name not in exceptions:
                failures.append(f"{name}: valid by the reference, onyx check rejects it:\n{out}")
            if rc == 0 and name in exceptions:
                failures.append(f"{name}: listed in {os.path.basename(args.exceptions)} but now "
                                "accepted; remove it from the list")
        elif rc == 0:
            lenient.append(name)
    for name in exceptions:
        if not os.path.exists(os.path.join(args.suite, name, "model.onnx")):
            failures.append(f"{name}: listed in {os.path.basename(args.exceptions)} but not in the suite")
    who = "onnx.checker accepts" if onnx else "valid (the suite is the reference):"
    print(f"{len(models)} models in {args.suite}; {who} {accepted}; onyx check accepts all of them "
          f"but the {len(exceptions)} listed exceptions")
    if lenient:
        print(f"onnx.checker rejects but onyx check accepts {len(lenient)}: {', '.join(lenient)}")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
