#!/usr/bin/python3
"""Export a torchvision model to ONNX, verify it against PyTorch with onyx, then run it
with onyx.InferenceSession as an onnxruntime script would.

    ninja -C build onyx onyx_python
    PYTHONPATH=build/python /usr/bin/python3 examples/python/verify_torchvision.py [--model resnet18] [--out DIR]

Writes DIR/MODEL.onnx, DIR/parity.json and DIR/MODEL.md (default DIR: a temporary folder).
Random weights (no download): parity is about the runtime, not about accuracy.
"""
import argparse
import os
import tempfile

import numpy as np
import torch
import torchvision

import onyx
import onyx.torch


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="resnet18", help="a torchvision.models constructor (default resnet18)")
    ap.add_argument("--size", type=int, default=224, help="input height and width (default 224)")
    ap.add_argument("--out", help="folder for the .onnx, parity.json and MODEL.md (default: a temporary one)")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="onyx-example-")
    os.makedirs(out, exist_ok=True)

    torch.manual_seed(0)
    model = getattr(torchvision.models, a.model)()
    path = os.path.join(out, a.model + ".onnx")
    x = torch.randn(1, 3, a.size, a.size)
    dataset = [torch.randn(1, 3, a.size, a.size) for _ in range(3)]
    try:
        report = onyx.torch.verify(model, x, path, input_names=["input"], output_names=["logits"],
                                   dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, dataset=dataset)
    except onyx.ParityError as e:
        print(e)
        raise SystemExit(1)
    print(report)
    for w in report.warnings:
        print("warning:", w)
    print(f"sha256 {report.sha256}; versions {report.versions}; files {report.parity_json}, {report.card}")

    # The onnxruntime call shape: this block runs unchanged with `import onnxruntime as ort`.
    ort = onyx
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    print(f"input {inp.name} {inp.shape} {inp.type}")
    (logits,) = sess.run(None, {inp.name: np.stack([d[0].numpy() for d in dataset])})
    with torch.no_grad():
        want = model(torch.cat(dataset)).numpy()
    print(f"batch of {logits.shape[0]}: top-1 {logits.argmax(1).tolist()} (PyTorch {want.argmax(1).tolist()}), "
          f"max |onyx - PyTorch| {np.abs(logits - want).max():.3g}")


if __name__ == "__main__":
    main()
