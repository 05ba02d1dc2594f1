#!/usr/bin/env python3
"""Exports the parity-test models to ONNX (opset 17) with fixed random weights and inputs.

Usage: export_models.py [OUT_DIR] [--image-size N]

For every model NAME it writes OUT_DIR/NAME/model.onnx and one or more input sets
OUT_DIR/NAME/set_K/<input name>.npy, plus OUT_DIR/manifest.json listing them. Nothing is
written into the source tree (the default OUT_DIR is build/models relative to the current
directory). Exits with code 77 when torch is not importable, so ctest reports a skip.
"""
import argparse
import json
import os
import sys

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torchvision
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIP: torch/torchvision/numpy not importable ({e}); "
          "install python3-torch python3-torchvision (scripts/setup.sh)")
    sys.exit(77)

OPSET = 17
SEED = 1234


class LstmModel(nn.Module):
    """Embedding-free sequence model: 2-layer bidirectional LSTM + linear head."""

    def __init__(self, n_in=16, hidden=32, n_out=8):
        super().__init__()
        self.lstm = nn.LSTM(n_in, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(2 * hidden, n_out)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return self.head(y), h, c


class TransformerModel(nn.Module):
    """2-layer transformer encoder (d_model 64, 4 heads, batch_first) between a linear
    input projection and a final LayerNorm."""

    def __init__(self, d_model=64, heads=4, layers=2, n_in=16):
        super().__init__()
        self.proj = nn.Linear(n_in, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=128, dropout=0.0,
                                           batch_first=True)
        # enable_nested_tensor=False: the nested-tensor fast path is not exportable.
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        return self.norm(self.encoder(self.proj(x)))


def seeded(seed):
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


def export(model, args, path, input_names, output_names, dynamic_axes):
    model.eval()
    # Not under torch.no_grad(): with grad disabled, torch 1.13's TransformerEncoderLayer
    # takes its fused fast path (aten::_transformer_encoder_layer_fwd), which has no
    # ONNX export; with parameters requiring grad it uses the plain, exportable ops.
    torch.onnx.export(model, args, path, opset_version=OPSET, input_names=input_names,
                      output_names=output_names, dynamic_axes=dynamic_axes,
                      do_constant_folding=True)


def randomize_bn(model, rng_seed):
    """Fresh BatchNorm layers have mean 0 / var 1: give them real statistics so the
    exported BatchNormalization nodes are exercised with non-trivial values."""
    g = torch.Generator().manual_seed(rng_seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(m.num_features, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)


def build_models(image_size):
    """Returns (name, model, example args, input names, output names, dynamic axes,
    list of input sets); each input set maps input name -> numpy array."""
    out = []

    for name, ctor in (("resnet18", torchvision.models.resnet18),
                       ("mobilenet_v2", torchvision.models.mobilenet_v2)):
        rng = seeded(SEED)
        model = ctor(weights=None)
        randomize_bn(model, SEED)
        example = torch.from_numpy(
            rng.standard_normal((1, 3, image_size, image_size), dtype=np.float32))
        sets = [{"input": rng.standard_normal((1, 3, image_size, image_size),
                                              dtype=np.float32)}]
        if name == "mobilenet_v2":  # the cheaper CNN also checks the dynamic batch axis
            sets.append({"input": rng.standard_normal((2, 3, image_size, image_size),
                                                      dtype=np.float32)})
        out.append((name, model, (example,), ["input"], ["logits"],
                    {"input": {0: "batch"}, "logits": {0: "batch"}}, sets))

    rng = seeded(SEED + 1)
    model = LstmModel()
    example = torch.from_numpy(rng.standard_normal((2, 5, 16), dtype=np.float32))
    sets = [{"x": rng.standard_normal((1, 7, 16), dtype=np.float32)},
            {"x": rng.standard_normal((3, 4, 16), dtype=np.float32)}]
    out.append(("lstm", model, (example,), ["x"], ["y", "h", "c"],
                {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"},
                 "h": {1: "batch"}, "c": {1: "batch"}}, sets))

    rng = seeded(SEED + 2)
    model = TransformerModel()
    example = torch.from_numpy(rng.standard_normal((2, 6, 16), dtype=np.float32))
    sets = [{"x": rng.standard_normal((1, 10, 16), dtype=np.float32)},
            {"x": rng.standard_normal((2, 3, 16), dtype=np.float32)}]
    out.append(("transformer", model, (example,), ["x"], ["y"],
                {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}, sets))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", nargs="?", default=os.path.join("build", "models"))
    ap.add_argument("--image-size", type=int, default=224,
                    help="height and width of the CNN inputs (default 224)")
    ap.add_argument("--only", action="append", help="export only these models")
    a = ap.parse_args()

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    os.makedirs(a.out_dir, exist_ok=True)
    manifest = []
    for name, model, ex_args, in_names, out_names, dyn, sets in build_models(a.image_size):
        if a.only and name not in a.only:
            continue
        d = os.path.join(a.out_dir, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        export(model, ex_args, path, in_names, out_names, dyn)
        entry = {"name": name, "model": path, "outputs": out_names, "sets": []}
        for k, s in enumerate(sets):
            sd = os.path.join(d, f"set_{k}")
            os.makedirs(sd, exist_ok=True)
            files = {}
            for iname, arr in s.items():
                f = os.path.join(sd, f"{iname}.npy")
                np.save(f, np.ascontiguousarray(arr))
                files[iname] = f
            entry["sets"].append({"dir": sd, "inputs": files})
        manifest.append(entry)
        print(f"exported {name}: {path} ({len(sets)} input set(s))")
    with open(os.path.join(a.out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
