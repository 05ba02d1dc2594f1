#!/usr/bin/env python3
"""Builds the seed corpora of the fuzz targets into OUT/<target>/, a folder outside the
source tree that libFuzzer adds to as it runs: the models of the ONNX node suites and of
models/, the suites' TensorProto .pb files, the repo's .npz and PNG files, the small
committed seeds (tests/fuzz/seeds/) and every regression file (tests/fuzz/regressions/).
Where ../shared (the ONNX 1.22 suite) is absent the seeds come from what exists.
A target whose folder holds a .seeded marker is left as it is (its corpus has grown).

    tests/fuzz/make_corpus.py OUT [--every K]

--every K takes every K-th model and .pb file of the suites only (for short runs).
Standard library only.
"""
import argparse
import glob
import os
import shutil

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGETS = ("load", "run", "tensor_proto", "npy", "npz", "png")
MAX_MODEL = 1 << 14  # the -max_len of load and run (scripts/test_fuzz.sh): larger models are left out
MAX_OTHER = 1 << 18  # that of tensor_proto and png (npy, npz: 64 KiB, larger ones are cut)


def suites():
    s122 = os.environ.get("ONYX_CONFORMANCE_DIR") or os.path.join(REPO, "..", "shared", "conformance", "onnx-node")
    return [("onnx122", s122), ("onnx112", "/usr/share/libonnx-testdata/data/node")]


def seeds(target, every):
    """(source path, name in the corpus) pairs for `target`."""
    repo = lambda pattern: sorted(glob.glob(os.path.join(REPO, pattern)))
    out = []
    if target in ("load", "run"):
        for tag, folder in suites():
            for k, m in enumerate(sorted(glob.glob(os.path.join(folder, "*", "model.onnx")))):
                if k % every == 0:
                    out.append((m, "%s_%s.onnx" % (tag, os.path.basename(os.path.dirname(m)))))
        out += [(m, "repo_" + os.path.basename(m)) for m in repo("models/*/*.onnx")]
    elif target == "tensor_proto":
        for tag, folder in suites():
            pbs = sorted(glob.glob(os.path.join(folder, "*", "test_data_set_0", "*.pb")))
            for k, p in enumerate(pbs):
                if k % every == 0:
                    case = os.path.basename(os.path.dirname(os.path.dirname(p)))
                    out.append((p, "%s_%s_%s" % (tag, case, os.path.basename(p))))
    elif target == "npz":
        out += [(f, os.path.basename(f)) for f in repo("tests/unit/data/*.npz") + repo("tests/fuzz/seeds/npz/*")]
    elif target == "npy":
        out += [(f, os.path.basename(f)) for f in repo("tests/fuzz/seeds/npy/*")]
    elif target == "png":
        out += [(f, os.path.basename(f))
                for f in repo("models/crnn-digits/reference/images/*.png") + repo("tests/fuzz/seeds/png/*")]
    limit = MAX_MODEL if target in ("load", "run") else MAX_OTHER
    return [(src, name) for src, name in out if 0 < os.path.getsize(src) <= limit]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--every", type=int, default=1)
    args = ap.parse_args()
    for t in TARGETS:
        folder = os.path.join(args.out, t)
        os.makedirs(folder, exist_ok=True)
        marker = os.path.join(folder, ".seeded")
        if os.path.exists(marker):
            continue
        files = seeds(t, max(1, args.every))
        for f in sorted(glob.glob(os.path.join(REPO, "tests", "fuzz", "regressions", t, "*"))):
            files.append((f, "regression_" + os.path.basename(f)))
        for src, name in files:
            shutil.copyfile(src, os.path.join(folder, name))
        open(marker, "w").close()
        print("make_corpus: %s: %d seeds" % (folder, len(files)))


if __name__ == "__main__":
    main()
