#!/usr/bin/python3
"""Exports the benchmark models to ONNX (opset 17, torch 1.13) with seeded random weights.

Usage: bench/export_bench_models.py [OUT_DIR] [--only NAME ...] [--force]

For every model NAME it writes OUT_DIR/NAME/model.onnx and one input set
OUT_DIR/NAME/inputs/<input name>.npy, plus OUT_DIR/manifest.json (models, inputs, the
output spread check) and OUT_DIR/export.stamp. The default OUT_DIR is build/bench-models
of the repository; nothing is written into the source tree. When the stamp matches this
script (and torch's version), the export is reused and nothing is written; --force exports
anyway.

Weights are random but deterministic (a seed per model), and chosen so that activations
stay O(1) all the way to the outputs, so the benchmark computes on realistic magnitudes and
the parity check against onnxruntime means something:
- BatchNorm: gamma in [0.75, 1.25], beta ~ N(0, 0.1), and running mean/var set to the
  statistics of the activations on a random calibration batch (each BatchNorm normalizes
  its input, as in a trained network);
- squeezenet1_1 (no BatchNorm): every convolution, in turn, gets the per-channel scale and
  shift that a folded BatchNorm calibrated that way would give it;
- the Linear layers of the torchvision CNNs (N(0, 0.01) in mobilenet_v3) get N(0, 1/fan_in)
  weights, and the ViT's classification head, zero in torchvision, N(0, 1/hidden);
- the GRU model: its Linear and GRU weight matrices N(0, 1/fan_in), so the gates see O(1)
  pre-activations.
Every output is checked on the benchmark input: finite, std >= MIN_STD, and changing the
input changes it (std of the difference of two inputs' outputs >= MIN_STD). An export
that fails the check fails the script.

Models (input shapes of the benchmark input set):
  resnet50, efficientnet_b0, squeezenet1_1, densenet121, mobilenet_v3_small  [1,3,224,224]
  vit (torchvision VisionTransformer: 4 layers, hidden 256, 4 heads, MLP 512, patch 16)  [1,3,224,224]
  yolo (YOLOv5n-like detector: Conv/BN/SiLU, C3, SPPF, nearest upsample, concat, 3-scale
        decoded head, 80 classes)  [1,3,320,320] -> [1,6300,85]
  unet (4 levels 16..128, bottleneck 256, ConvTranspose 2x2 up, skip concats, 2 classes)
        [1,3,256,256]
  gru (2 strided Conv/BN/ReLU on a mel spectrogram, 2-layer bidirectional GRU 256, linear
       to 32 symbols; time dynamic)  mel [1,1,80,400] -> [1,100,32]
  bert (BERT-style encoder as Hugging Face exports it: embeddings + LayerNorm, 4 layers,
        hidden 256, 4 heads, FFN 1024, exact GELU, additive attention mask; batch and
        sequence dynamic)  input_ids, attention_mask int64 [1,128]
Batch is a dynamic axis of every model.
"""
import argparse
import hashlib
import json
import math
import os
import shutil
import sys
import zlib

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torchvision
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIP: torch/torchvision/numpy not importable ({e}); "
          "install python3-torch python3-torchvision (scripts/setup.sh)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPSET = 17
SEED = 20240
MIN_STD = 1e-2


# ---------------------------------------------------------------------------------------
# Weight initialization that keeps activations O(1)

def bn_modules(model):
    return [m for m in model.modules() if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d))]


@torch.no_grad()
def calibrate_bn(model, calib, seed):
    """Random affine parameters, then running statistics taken from the calibration batch:
    only the BatchNorm layers are put in training mode (dropout and stochastic depth stay
    off), with momentum None (a plain average over the one forward pass)."""
    g = torch.Generator().manual_seed(seed)
    model.eval()
    for m in bn_modules(model):
        m.weight.copy_(torch.rand(m.num_features, generator=g) * 0.5 + 0.75)
        m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)
        m.reset_running_stats()
        m.momentum = None
        m.train()
    model(*calib)
    model.eval()


@torch.no_grad()
def lsuv(model, calib, seed):
    """Data-dependent init for a network without BatchNorm: every Conv2d, in the order they
    run, gets per output channel the scale and shift that give its output, on the
    calibration batch, mean beta ~ N(0, 0.1) and unit standard deviation (what a folded
    BatchNorm would do)."""
    g = torch.Generator().manual_seed(seed)
    order = []
    hooks = [m.register_forward_hook(lambda mod, i, o: order.append(mod))
             for m in model.modules() if isinstance(m, nn.Conv2d)]
    model(*calib)
    for h in hooks:
        h.remove()
    for layer in order:
        seen = {}
        h = layer.register_forward_hook(lambda mod, i, o: seen.setdefault("y", o))
        model(*calib)
        h.remove()
        y = seen["y"].transpose(0, 1).flatten(1)
        mean, std = y.mean(1), y.std(1).clamp_min(1e-6)
        layer.weight.div_(std.view(-1, 1, 1, 1))
        beta = torch.randn(mean.shape, generator=g) * 0.1
        layer.bias.copy_((layer.bias - mean) / std + beta)


def init_linear(model):
    """torchvision's classifiers start at N(0, 0.01) (mobilenet_v3) or similar: use
    N(0, 1/fan_in) so a Linear layer keeps the scale of its input."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear):
                m.weight.normal_(0.0, 1.0 / math.sqrt(m.in_features))
                nn.init.zeros_(m.bias)


# ---------------------------------------------------------------------------------------
# Models written here

def conv_bn_silu(c_in, c_out, k=1, s=1, p=None):
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, s, k // 2 if p is None else p, bias=False),
                         nn.BatchNorm2d(c_out), nn.SiLU())


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1 = conv_bn_silu(c, c, 1)
        self.cv2 = conv_bn_silu(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3(nn.Module):
    """CSP block: two 1x1 branches, n bottlenecks on one, concat, 1x1."""

    def __init__(self, c_in, c_out, n=1, shortcut=True):
        super().__init__()
        h = c_out // 2
        self.cv1 = conv_bn_silu(c_in, h)
        self.cv2 = conv_bn_silu(c_in, h)
        self.m = nn.Sequential(*[Bottleneck(h, shortcut) for _ in range(n)])
        self.cv3 = conv_bn_silu(2 * h, c_out)

    def forward(self, x):
        return self.cv3(torch.cat([self.m(self.cv1(x)), self.cv2(x)], 1))


class SPPF(nn.Module):
    def __init__(self, c_in, c_out, k=5):
        super().__init__()
        h = c_in // 2
        self.cv1 = conv_bn_silu(c_in, h)
        self.cv2 = conv_bn_silu(4 * h, c_out)
        self.pool = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.pool(x)
        y2 = self.pool(y1)
        return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))


class Yolo(nn.Module):
    """A YOLOv5n-shaped detector (width 0.25, depth 0.33) with the box decoding in the graph:
    output [batch, 3 * (40*40 + 20*20 + 10*10), 5 + classes] (xywh in pixels, objectness,
    class scores)."""

    def __init__(self, image=320, classes=80):
        super().__init__()
        self.no = 5 + classes
        self.b0 = conv_bn_silu(3, 16, 6, 2, 2)
        self.b1 = nn.Sequential(conv_bn_silu(16, 32, 3, 2), C3(32, 32, 1))
        self.b2 = nn.Sequential(conv_bn_silu(32, 64, 3, 2), C3(64, 64, 2))      # P3, stride 8
        self.b3 = nn.Sequential(conv_bn_silu(64, 128, 3, 2), C3(128, 128, 3))   # P4, stride 16
        self.b4 = nn.Sequential(conv_bn_silu(128, 256, 3, 2), C3(256, 256, 1), SPPF(256, 256))
        self.h0 = conv_bn_silu(256, 128, 1)
        self.h1 = C3(256, 128, 1, False)
        self.h2 = conv_bn_silu(128, 64, 1)
        self.h3 = C3(128, 64, 1, False)                                          # out P3
        self.h4 = conv_bn_silu(64, 64, 3, 2)
        self.h5 = C3(128, 128, 1, False)                                         # out P4
        self.h6 = conv_bn_silu(128, 128, 3, 2)
        self.h7 = C3(256, 256, 1, False)                                         # out P5
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.detect = nn.ModuleList(nn.Conv2d(c, 3 * self.no, 1) for c in (64, 128, 256))
        anchors = torch.tensor([[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119],
                                [116, 90, 156, 198, 373, 326]], dtype=torch.float32)
        self.sizes = []
        for i, stride in enumerate((8, 16, 32)):
            n = image // stride
            yv, xv = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
            grid = torch.stack((xv, yv), 2).view(1, 1, n, n, 2).float() - 0.5
            self.register_buffer(f"grid{i}", grid * stride)
            self.register_buffer(f"anchor{i}", anchors[i].view(1, 3, 1, 1, 2))
            self.sizes.append((n, stride))

    def forward(self, x):
        x = self.b0(x)
        x = self.b1(x)
        p3 = self.b2(x)
        p4 = self.b3(p3)
        p5 = self.b4(p4)
        t5 = self.h0(p5)
        x = self.h1(torch.cat([self.up(t5), p4], 1))
        t4 = self.h2(x)
        o3 = self.h3(torch.cat([self.up(t4), p3], 1))
        o4 = self.h5(torch.cat([self.h4(o3), t4], 1))
        o5 = self.h7(torch.cat([self.h6(o4), t5], 1))
        out = []
        for i, feat in enumerate((o3, o4, o5)):
            n, stride = self.sizes[i]
            y = self.detect[i](feat).view(-1, 3, self.no, n, n).permute(0, 1, 3, 4, 2).sigmoid()
            xy = y[..., 0:2] * (2 * stride) + getattr(self, f"grid{i}")
            wh = (y[..., 2:4] * 2) ** 2 * getattr(self, f"anchor{i}")
            out.append(torch.cat([xy, wh, y[..., 4:]], -1).view(-1, 3 * n * n, self.no))
        return torch.cat(out, 1)


def double_conv(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out),
                         nn.ReLU(inplace=True),
                         nn.Conv2d(c_out, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out),
                         nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, c_in=3, classes=2, widths=(16, 32, 64, 128)):
        super().__init__()
        self.down = nn.ModuleList()
        c = c_in
        for w in widths:
            self.down.append(double_conv(c, w))
            c = w
        self.mid = double_conv(c, 2 * c)
        c = 2 * c
        self.ups = nn.ModuleList()
        self.dec = nn.ModuleList()
        for w in reversed(widths):
            self.ups.append(nn.ConvTranspose2d(c, w, 2, stride=2))
            self.dec.append(double_conv(2 * w, w))
            c = w
        self.head = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        skips = []
        for d in self.down:
            x = d(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.mid(x)
        for up, dec, skip in zip(self.ups, self.dec, reversed(skips)):
            x = dec(torch.cat([up(x), skip], 1))
        return self.head(x)


class GruAudio(nn.Module):
    """Mel spectrogram [batch, 1, 80, T] -> per-frame logits [batch, T/4, symbols]."""

    def __init__(self, mels=80, hidden=256, symbols=32):
        super().__init__()
        self.front = nn.Sequential(
            nn.Conv2d(1, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU())
        self.proj = nn.Linear(32 * (mels // 4), hidden)
        self.gru = nn.GRU(hidden, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(2 * hidden, symbols)

    def forward(self, mel):
        x = self.front(mel)                       # [b, 32, 20, T/4]
        x = x.permute(0, 3, 1, 2).flatten(2)      # [b, T/4, 640]
        y, _ = self.gru(self.proj(x))
        return self.head(y)


class BertLayer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.sqrt_d = math.sqrt(d // heads)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def split(self, x):
        b, t, d = x.shape
        return x.view(b, t, self.heads, d // self.heads).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / self.sqrt_d + mask
        ctx = torch.matmul(torch.softmax(scores, -1), v).permute(0, 2, 1, 3).reshape(b, t, d)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))


class Bert(nn.Module):
    """input_ids, attention_mask [batch, seq] int64 -> last hidden state [batch, seq, 256]
    and the pooled [batch, 256] (tanh of a linear layer on the first token)."""

    def __init__(self, vocab=8192, max_len=512, d=256, heads=4, ff=1024, layers=4):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(d, heads, ff) for _ in range(layers))
        self.pool = nn.Linear(d, d)

    def forward(self, input_ids, attention_mask):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        x = self.ln(self.word(input_ids) + self.pos(pos))
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pool(x[:, 0]))


# ---------------------------------------------------------------------------------------
# The model list

def images(rng, n, size):
    return torch.from_numpy(rng.standard_normal((n, 3, size, size), dtype=np.float32))


def image_model(model, rng, size=224):
    """(model, calibration args, input names, output names, dynamic axes, bench input,
    second input for the sensitivity check)."""
    return (model, (images(rng, 2, size),), ["input"], ["logits"],
            {"input": {0: "batch"}, "logits": {0: "batch"}},
            {"input": images(rng, 1, size)}, {"input": images(rng, 1, size)})


def build(name, rng):
    tv = torchvision.models
    if name in ("resnet50", "efficientnet_b0", "densenet121", "mobilenet_v3_small"):
        model = getattr(tv, name)(weights=None)
        init_linear(model)
        return image_model(model, rng)
    if name == "squeezenet1_1":
        return image_model(tv.squeezenet1_1(weights=None), rng)
    if name == "vit":
        model = tv.VisionTransformer(image_size=224, patch_size=16, num_layers=4, num_heads=4,
                                     hidden_dim=256, mlp_dim=512)
        with torch.no_grad():
            model.heads.head.weight.normal_(0.0, 1.0 / math.sqrt(256))
        return image_model(model, rng)
    if name == "yolo":
        return (Yolo(320), (images(rng, 2, 320),), ["images"], ["detections"],
                {"images": {0: "batch"}, "detections": {0: "batch"}},
                {"images": images(rng, 1, 320)}, {"images": images(rng, 1, 320)})
    if name == "unet":
        return (UNet(), (images(rng, 2, 256),), ["input"], ["mask_logits"],
                {"input": {0: "batch"}, "mask_logits": {0: "batch"}},
                {"input": images(rng, 1, 256)}, {"input": images(rng, 1, 256)})
    if name == "gru":
        model = GruAudio()
        init_linear(model)
        with torch.no_grad():
            for pname, w in model.gru.named_parameters():
                if pname.startswith("weight"):
                    w.normal_(0.0, 1.0 / math.sqrt(w.shape[1]))
        mel = lambda n, t: torch.from_numpy(rng.standard_normal((n, 1, 80, t), dtype=np.float32))
        return (model, (mel(2, 200),), ["mel"], ["logits"],
                {"mel": {0: "batch", 3: "time"}, "logits": {0: "batch", 1: "frames"}},
                {"mel": mel(1, 400)}, {"mel": mel(1, 400)})
    if name == "bert":
        def feeds(n, t, pad):
            ids = torch.from_numpy(rng.integers(0, 8192, (n, t), dtype=np.int64))
            mask = torch.ones((n, t), dtype=torch.int64)
            mask[:, t - pad:] = 0
            return ids, mask
        names = ["input_ids", "attention_mask"]
        dyn = {n: {0: "batch", 1: "seq"} for n in names}
        dyn.update({"last_hidden_state": {0: "batch", 1: "seq"}, "pooled": {0: "batch"}})
        return (Bert(), feeds(2, 32, 5), names, ["last_hidden_state", "pooled"], dyn,
                dict(zip(names, feeds(1, 128, 28))), dict(zip(names, feeds(1, 128, 28))))
    raise KeyError(name)


MODELS = ["resnet50", "efficientnet_b0", "squeezenet1_1", "densenet121", "mobilenet_v3_small",
          "vit", "yolo", "unet", "gru", "bert"]
NO_BN = {"squeezenet1_1"}  # rescaled by lsuv instead


def spread(outs, outs2, names):
    """Per output: shape, mean, std, min, max, all finite, std of the change when the input
    changes; and the list of problems."""
    checks, problems = [], []
    for n, y, y2 in zip(names, outs, outs2):
        y64, d = y.double(), (y.double() - y2.double())
        c = {"name": n, "shape": list(y.shape), "finite": bool(torch.isfinite(y).all()),
             "mean": float(y64.mean()), "std": float(y64.std()), "min": float(y64.min()),
             "max": float(y64.max()), "input_sensitivity_std": float(d.std())}
        checks.append(c)
        if not c["finite"]:
            problems.append(f"{n}: NaN or inf in the output")
        elif c["std"] < MIN_STD:
            problems.append(f"{n}: output std {c['std']:.3g} < {MIN_STD}")
        elif c["input_sensitivity_std"] < MIN_STD:
            problems.append(f"{n}: output barely depends on the input "
                            f"(std of the change {c['input_sensitivity_std']:.3g})")
    return checks, problems


def export_one(name, out_dir):
    seed = SEED + zlib.crc32(name.encode()) % 100000
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model, calib, in_names, out_names, dyn, feeds, feeds2 = build(name, rng)
    model.eval()
    if name in NO_BN:
        lsuv(model, calib, seed)
    elif bn_modules(model):
        calibrate_bn(model, calib, seed)
    args = tuple(feeds[n] for n in in_names)
    with torch.no_grad():
        outs = model(*args)
        outs2 = model(*(feeds2[n] for n in in_names))
    outs = outs if isinstance(outs, tuple) else (outs,)
    outs2 = outs2 if isinstance(outs2, tuple) else (outs2,)
    checks, problems = spread(outs, outs2, out_names)
    if problems:
        raise SystemExit(f"{name}: output spread check failed: " + "; ".join(problems))

    d = os.path.join(out_dir, name)
    os.makedirs(os.path.join(d, "inputs"), exist_ok=True)
    path = os.path.join(d, "model.onnx")
    # Not under torch.no_grad(): with grad disabled, torch 1.13's attention and transformer
    # layers take fused fast paths that have no ONNX export.
    torch.onnx.export(model, args, path, opset_version=OPSET, input_names=in_names,
                      output_names=out_names, dynamic_axes=dyn, do_constant_folding=True)
    files = {}
    for n in in_names:
        f = os.path.join(d, "inputs", f"{n}.npy")
        np.save(f, np.ascontiguousarray(feeds[n].numpy()))
        files[n] = f
    return {"name": name, "model": path, "seed": seed, "inputs": files,
            "init": "lsuv" if name in NO_BN else "bn-calibrated" if bn_modules(model) else "default",
            "outputs": checks}


def stamp_key():
    with open(os.path.abspath(__file__), "rb") as f:
        return hashlib.sha256(f.read() + f"|torch {torch.__version__}|tv {torchvision.__version__}"
                              .encode()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", nargs="?", default=os.path.join(ROOT, "build", "bench-models"))
    ap.add_argument("--only", action="append", choices=MODELS, help="export only these models")
    ap.add_argument("--force", action="store_true", help="export even when the stamp matches")
    a = ap.parse_args()

    out_dir = os.path.abspath(a.out_dir)
    if out_dir == ROOT or (out_dir.startswith(ROOT + os.sep) and
                           not out_dir.startswith(os.path.join(ROOT, "build") + os.sep)):
        sys.exit(f"export_bench_models: {out_dir} is in the source tree; write under build/")
    key = stamp_key() + f"|{sorted(a.only or [])}"
    stamp = os.path.join(out_dir, "export.stamp")
    manifest = os.path.join(out_dir, "manifest.json")
    if (not a.force and os.path.exists(stamp) and os.path.exists(manifest)
            and open(stamp).read() == key):
        print(f"bench models: reusing the export in {out_dir}")
        return 0
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    entries = []
    for name in MODELS:
        if a.only and name not in a.only:
            continue
        e = export_one(name, out_dir)
        entries.append(e)
        spreads = ", ".join(f"{c['name']}{c['shape']} std {c['std']:.3g} "
                            f"(input change {c['input_sensitivity_std']:.3g})" for c in e["outputs"])
        print(f"exported {name}: {spreads}", flush=True)
    with open(manifest, "w") as f:
        json.dump(entries, f, indent=1)
    with open(stamp, "w") as f:
        f.write(key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
