#!/usr/bin/python3
"""ctest `check_schemas_current`: src/check/onnx_schemas.inc is exactly what
scripts/gen_schemas.py makes from the ONNX specification text (default ../shared/spec).

Where the spec folder is absent (a clone outside this layout) it exits 77 (skip) and says
what is missing; with CI=true in the environment that is a failure instead.
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NEEDED = ("Changelog.md", "Operators-ml.md", "Operators.md", "onnx.proto")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="where to write the regenerated table")
    ap.add_argument("--spec", default=os.path.join(os.path.dirname(ROOT), "shared", "spec"),
                    help="the ONNX spec folder (default: %(default)s)")
    args = ap.parse_args()
    missing = [n for n in NEEDED if not os.path.isfile(os.path.join(args.spec, n))]
    if missing:
        msg = (f"the ONNX specification text is missing: no {', '.join(missing)} in {args.spec} "
               "(the docs/ folder of the onnx release the table is made from, e.g. ONNX 1.22.0)")
        if os.environ.get("CI") == "true":
            print(f"FAIL: {msg}; CI must have it", file=sys.stderr)
            return 1
        print(f"skip: {msg}")
        return 77
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_schemas.py"),
                        "--spec", args.spec, "--out", args.out], capture_output=True, text=True)
    if p.returncode != 0:
        print(f"FAIL: scripts/gen_schemas.py cannot read {args.spec}:\n{p.stdout}{p.stderr}", file=sys.stderr)
        return 1
    tree = os.path.join(ROOT, "src", "check", "onnx_schemas.inc")
    if open(args.out).read() != open(tree).read():
        print(f"FAIL: {tree} differs from what scripts/gen_schemas.py makes from {args.spec}; "
              "regenerate it (python3 scripts/gen_schemas.py)", file=sys.stderr)
        return 1
    first = next(line for line in open(tree) if line.startswith("#define ONYX_SCHEMA_SOURCE"))
    print(f"ok: the schema table matches {args.spec} ({first.split(' ', 2)[2].strip()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
