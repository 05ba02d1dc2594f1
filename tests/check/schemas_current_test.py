#!/usr/bin/python3
"""ctest `check_schemas_current`: src/check/onnx112_schemas.inc is exactly what
scripts/gen_onnx_schemas.py makes from the installed onnx module (exits 77 without it)."""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="where to write the regenerated table")
    args = ap.parse_args()
    try:
        import onnx
    except ImportError:
        print("skip: the onnx Python module is not installed")
        return 77
    if onnx.__version__ != "1.12.0":
        print(f"skip: the table is made from onnx 1.12.0, this is onnx {onnx.__version__}")
        return 77
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_onnx_schemas.py"), args.out], check=True)
    tree = os.path.join(ROOT, "src", "check", "onnx112_schemas.inc")
    if open(args.out).read() != open(tree).read():
        print(f"FAIL: {tree} differs from what scripts/gen_onnx_schemas.py makes; regenerate it",
              file=sys.stderr)
        return 1
    print("ok: the schema table matches onnx", onnx.__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
